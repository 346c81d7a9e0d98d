"""``aitj chaos --progress``: the training invariants report a stalled or restarted training
and nothing else; the log reader keeps each line of overlapping reads once; the pace is
samples per second within one world."""

from __future__ import annotations

from aitj.core.api import RestartScope
from aitj.tools.chaos.faults import pod_targets
from aitj.tools.chaos.history import FaultRecord, History, JobSample, PodSample, ProgressSample
from aitj.tools.chaos.progress import (
    Settings,
    caught_up,
    from_scratch,
    launchers,
    new_lines,
    pace,
    progresses,
    summary,
)
from aitj.tools.chaos.replay import world_of
from aitj.tools.chaos.schedule import FaultKind
from aitj.tools.trainbench.timeline import Reset, Step
from tests.unit.builders import JOB, NAMESPACE, Pod, seed_job

KEY = (NAMESPACE, JOB)
OTHER = (NAMESPACE, "other")
LAUNCHER = "test-horovod-elastic-launcher-0"


def step(t: float, s: int, size: int = 3, rank: int = 0, key: tuple[str, str] = KEY) -> ProgressSample:
    return ProgressSample(key, LAUNCHER, Step(t, "h", rank, size, s))


def reset(t: float, resume: int, size: int = 3, rank: int = 0, pod: str = LAUNCHER) -> ProgressSample:
    return ProgressSample(KEY, pod, Reset(t, "h", rank, size, resume))


def history(*samples: ProgressSample, faults: tuple[FaultRecord, ...] = ()) -> History:
    return History(progress=list(samples), faults=list(faults), end=1000)


def fault(t: float, *, jobs: tuple[tuple[str, str], ...] = (KEY,), error: str | None = None) -> FaultRecord:
    return FaultRecord(1, t, FaultKind.FORCE_DELETE, "default/pod", jobs=jobs, error=error)


TRAINING = (reset(0, 0), step(1, 10), step(2, 20), step(3, 30))


# ---- training progresses ----------------------------------------------------------------------
def test_a_training_that_steps_past_where_it_was_after_a_fault_is_fine() -> None:
    h = history(*TRAINING, reset(12, 20), step(14, 30), step(15, 40), faults=(fault(10),))
    check = progresses(h, Settings(bound=60))
    assert (check.checks, check.violations) == (1, [])


def test_a_ring_stuck_on_a_dead_peer_is_reported() -> None:
    # Steps that only redo what was done (up to 30) are not progress.
    h = history(*TRAINING, reset(12, 20), step(14, 30), faults=(fault(10),))
    (v,) = progresses(h, Settings(bound=60)).violations
    assert (v.job, v.t) == (f"{NAMESPACE}/{JOB}", 10)
    assert "no step beyond 30 within 60s after fault 1" in v.message


def test_progress_after_the_bound_is_too_late() -> None:
    h = history(*TRAINING, step(80, 40), faults=(fault(10),))
    assert len(progresses(h, Settings(bound=60)).violations) == 1
    assert progresses(h, Settings(bound=75)).violations == []


def test_a_refused_fault_is_not_judged_and_a_cluster_fault_is_judged_for_every_job() -> None:
    other = (step(1, 5, key=OTHER), step(30, 6, key=OTHER))
    h = history(*TRAINING, *other, faults=(fault(10, error="403 Forbidden"), fault(20, jobs=())))
    check = progresses(h, Settings(bound=60))
    # The cluster fault at 20 is judged for both jobs: KEY never steps past 30 again.
    assert check.checks == 2
    assert [v.job for v in check.violations] == [f"{NAMESPACE}/{JOB}"]


def test_caught_up_waits_for_every_job_read() -> None:
    h = history(*TRAINING, step(1, 5, key=OTHER))
    assert not caught_up(h, 10, [KEY, OTHER])
    h.progress.append(step(12, 40))
    assert not caught_up(h, 10, [KEY, OTHER])
    h.progress.append(step(13, 6, key=OTHER))
    assert caught_up(h, 10, [KEY, OTHER, ("default", "no-progress-read")])


# ---- never from step 0 again ------------------------------------------------------------------
def test_the_first_start_at_step_0_is_fine_and_a_resume_past_it_too() -> None:
    check = from_scratch(history(*TRAINING, reset(12, 20), step(14, 30)))
    assert (check.checks, check.violations) == (1, [])


def test_a_restart_from_step_0_after_progress_is_reported() -> None:
    h = history(*TRAINING, reset(12, 0, pod="test-horovod-elastic-launcher-0-1"), step(14, 10))
    (v,) = from_scratch(h).violations
    assert v.t == 12 and "re-formed at step 0" in v.message


def test_a_restart_from_step_0_is_fine_once_the_job_recorded_a_restart_of_scope_all() -> None:
    h = history(*TRAINING, reset(12, 0), step(14, 10))
    status = {"phase": "Running", "restarts": [{"replica": "trainer", "scope": RestartScope.ALL.value}]}
    h.jobs.append(JobSample(11, 1, False, KEY, "uid", seed_job(), status))
    assert from_scratch(h).violations == []
    # ... but not when it was recorded after the restart from scratch.
    h.jobs[0] = JobSample(13, 1, False, KEY, "uid", seed_job(), status)
    assert len(from_scratch(h).violations) == 1


def test_only_rank_0_counts_a_re_forming() -> None:
    h = history(*TRAINING, reset(12, 20), reset(12, 20, rank=1), reset(12, 20, rank=2))
    assert from_scratch(h).checks == 1


# ---- reading the log --------------------------------------------------------------------------
def test_overlapping_reads_keep_each_line_once() -> None:
    first = ["2026-11-25T10:00:01.5Z a", "2026-11-25T10:00:02Z b", "2026-11-25T10:00:02Z c"]
    got, last, at_last = new_lines(first, 0.0, set())
    assert got == first
    second = ["2026-11-25T10:00:02Z b", "2026-11-25T10:00:02Z c", "2026-11-25T10:00:02Z d", "cut line"]
    got, last2, at_last = new_lines(second, last, at_last)
    assert got == ["2026-11-25T10:00:02Z d"] and last2 == last
    got, _, _ = new_lines(["2026-11-25T10:00:01.5Z a", "2026-11-25T10:00:03Z e"], last2, at_last)
    assert got == ["2026-11-25T10:00:03Z e"]


def test_launchers_are_the_current_started_master_pods() -> None:
    h = History()
    job = seed_job()
    h.jobs.append(JobSample(0, 1, False, KEY, "uid", job, {"phase": "Running"}))
    pending = Pod("launcher", 0).view()
    h.pods.append(PodSample(0, 2, False, pending))
    world = world_of(h)
    for s in h.timeline():
        world.apply(s)
    assert launchers(world, [KEY]) == {}
    running = Pod("launcher", 0).running(node="node-a").view()
    world.apply(PodSample(1, 3, False, running))
    world.apply(PodSample(1, 4, False, Pod("trainer", 0).running(node="node-a").view()))
    assert launchers(world, [KEY]) == {KEY: (NAMESPACE, running.name)}


# ---- pace and summary -------------------------------------------------------------------------
def test_pace_is_samples_per_second_within_one_world() -> None:
    samples = [
        step(0, 0),
        step(2, 10),  # 10 steps x 32 samples x 3 ranks in 2 s
        step(2, 10, rank=1),  # other ranks do not count
        reset(3, 10, size=2),
        step(5, 20, size=2),  # a new world: no rate across the re-forming
        step(6, 25, size=2),  # 5 x 32 x 2 in 1 s
    ]
    assert pace(samples, 32) == [(2, 480.0), (6, 320.0)]


def test_summary_gives_the_seconds_until_the_training_stepped_past() -> None:
    h = history(*TRAINING, reset(12, 20), step(14, 30), step(16, 40), faults=(fault(10),))
    (got,) = summary(h, Settings(bound=60)).values()
    assert got["last_step"] == 40 and got["reformed"] == 2
    assert (got["faults"], got["stepped_past"], got["past_p50_s"]) == (1, 1, 6.0)


def test_a_job_that_ended_by_its_rules_after_the_fault_is_not_asked_to_progress() -> None:
    h = history(*TRAINING, faults=(fault(10),))
    status = {"phase": "Failed", "conditions": [{"type": "Failed", "reason": "R", "message": "m"}]}
    h.jobs.append(JobSample(11, 1, False, KEY, "uid", seed_job(), status))
    check = progresses(h, Settings(bound=60))
    assert (check.checks, check.violations) == (1, [])
    # Ending after the bound does not excuse a stall within it.
    h.jobs[0] = JobSample(90, 1, False, KEY, "uid", seed_job(), status)
    assert len(progresses(h, Settings(bound=60)).violations) == 1


def test_pod_faults_hit_the_replicas_named_only() -> None:
    h = History()
    h.jobs.append(JobSample(0, 1, False, KEY, "uid", seed_job(), {"phase": "Running"}))
    world = world_of(h)
    world.apply(h.jobs[0])
    for i, pod in enumerate((Pod("launcher", 0), Pod("trainer", 0), Pod("trainer", 1))):
        world.apply(PodSample(1, 2 + i, False, pod.running(node="node-a").view()))
    assert [p.replica for p in pod_targets(world, [KEY])] == ["launcher", "trainer", "trainer"]
    assert [p.replica for p in pod_targets(world, [KEY], ("trainer",))] == ["trainer", "trainer"]
