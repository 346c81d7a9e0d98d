"""The recovery watchdog (issue 46; aitj.core.planner.watchdog): after a recovery, a rank still
waiting in the ring the fault broke is found from the training's own log and its pod restarted,
by the watchdog's own rung, whatever the job's rules. Table tests of the finding, the policy's
decision, and a pass of the planner over a marked pod."""

from __future__ import annotations

import dataclasses

import pytest

from aitj.core.api import FaultTolerantRule, JobStatus, RestartEntry, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner import plan, watchdog
from aitj.core.policy import Failure, FailureKind, RestartDecision, decide
from aitj.core.trainlog import Awaiting, HostSeen, TrainingSeen, Waiting
from aitj.core.wire import format_time
from tests.unit.builders import Cluster, at, event_rule, launcher, node, running_seed, seed_job, trainer

RESTART = at(100)  # the job's latest restart
T = RESTART.timestamp()


def status(restart_at: float | None = T) -> JobStatus:
    entries = (
        ()
        if restart_at is None
        else (RestartEntry(time=format_time(at(restart_at - at(0).timestamp())), replica="trainer", index=2),)
    )
    return JobStatus(restarts=entries)


def running(names: dict[str, float]) -> list[PodView]:
    """running: Running pods by name, each created at its epoch second."""
    return [PodView(name=n, phase="Running", created=at(c - at(0).timestamp())) for n, c in names.items()]


# The seed's three trainers: t0 and t1 survived the restart of t2 (now t2b).
BEFORE = T - 5
PODS = running({"t0": T - 60, "t1": T - 60, "t2b": T + 3})


def seen(
    read_at: float, hosts: dict[str, HostSeen], last_step: float = BEFORE, width: int = 3
) -> TrainingSeen:
    return TrainingSeen(read_at, last_step=last_step, width=width, hosts=hosts)


RING = {
    "t0.job": HostSeen(step=BEFORE, rank=0),
    "t1.job": HostSeen(step=BEFORE, rank=1),
    "t2.job": HostSeen(step=BEFORE, rank=2),
}
# t0 re-formed after the restart; t1 did not (blocked in a collective of the old ring).
T0_RE_FORMED = {**RING, "t0.job": HostSeen(step=BEFORE, reset=T + 4, rank=0)}
# The ring re-formed at width 2 (t1 rank 0, t0 rank 1) and stepped until T + 8; then, adding
# t2b, t1 and t2b reached the new rendezvous (Horovod's line) and t0 never did.
NARROW = {
    "t0.job": HostSeen(step=T + 8, reset=T + 2, rank=1),
    "t1.job": HostSeen(step=T + 8, reset=T + 2, rank=0, joined=T + 9),
    "t2b.job": HostSeen(joined=T + 11),
}


@pytest.mark.parametrize(
    ("case", "training", "restart", "pods", "want"),
    [
        ("a survivor re-formed, another did not: the other", seen(T + 31, T0_RE_FORMED), T, PODS, {"t1"}),
        ("t0 moved on 1 s ago, within the late bound: not yet", seen(T + 5, T0_RE_FORMED), T, PODS, set()),
        ("t0 moved on 2 s ago: t1 is late", seen(T + 6, T0_RE_FORMED), T, PODS, {"t1"}),
        (
            "the late bound is one and a half of rank 0's p99 gaps where they are longer",
            dataclasses.replace(seen(T + 9, T0_RE_FORMED), intervals=(4.0,) * 10),
            T,
            PODS,
            set(),
        ),
        ("no restart: nothing recovers", seen(T + 31, T0_RE_FORMED), None, PODS, set()),
        ("never read", None, T, PODS, set()),
        ("no line of a training's ever read", TrainingSeen(T + 31), T, PODS, set()),
        ("back at full width", seen(T + 31, T0_RE_FORMED, last_step=T + 8), T, PODS, set()),
        (
            "stepping at width 2 after the restart, then silent: rank 1 of that ring",
            seen(T + 39, NARROW, last_step=T + 8, width=2),
            T,
            PODS,
            {"t0"},
        ),
        (
            "t1 moved on 1 s ago, within the late bound",
            seen(T + 10, NARROW, last_step=T + 8, width=2),
            T,
            PODS,
            set(),
        ),
        ("no worker moved on: nothing tells which rank waits", seen(T + 31, RING), T, PODS, set()),
        (
            # The fault's time is whole seconds (the kubelet's finishedAt): rank 0's last step,
            # 0.7 s into that second, is the broken ring's, not training running again.
            "a step within the fault's second is the old ring's",
            seen(
                T + 31, {**RING, "t0.job": HostSeen(step=T + 0.7, rank=0, joined=T + 0.9)}, last_step=T + 0.7
            ),
            T,
            PODS,
            {"t1"},
        ),
        (
            "only the replacement moved on: the lowest-ranked survivor kept, the other restarted",
            seen(T + 31, {**RING, "t2b.job": HostSeen(joined=T + 6)}),
            T,
            PODS,
            {"t1"},
        ),
        ("its pod is gone or not running", seen(T + 31, T0_RE_FORMED), T, running({"t0": T - 60}), set()),
        (
            "a pod made after the silence began never waited",
            seen(T + 31, T0_RE_FORMED),
            T,
            running({"t1": T + 1}),
            set(),
        ),
        (
            "one survivor is always kept",
            seen(
                T + 39,
                {"t1.job": HostSeen(step=T + 8, reset=T + 2, rank=0), "t2b.job": HostSeen(joined=T + 9)},
                last_step=T + 8,
                width=1,
            ),
            T,
            PODS,
            set(),
        ),
    ],
)
def test_the_pods_of_ranks_still_waiting_once_the_bound_has_passed(
    case: str, training: TrainingSeen | None, restart: float | None, pods: list[PodView], want: set[str]
) -> None:
    found = watchdog.waiting(status(restart), training, pods, wanted=3)
    assert set(found) == want, case
    for w in found.values():
        assert w.since >= T and "recovery watchdog, bound 1.5 s" in w.description


# t0's worker killed inside its pod at T - 0.1: t1 reported READY at once, the driver's FAILURE
# record of t0 came 0.08 s after T and was stamped T (whole seconds); t2 waits in Gloo.
KILLED_IN_POD = {
    "t0.job": HostSeen(step=T - 0.2, rank=0, left=T + 0.08),
    "t1.job": HostSeen(step=T - 0.2, rank=1, joined=T - 0.005),
    "t2.job": HostSeen(step=T - 0.2, rank=2),
}
SURVIVORS = running({"t1": T - 60, "t2": T - 60})


@pytest.mark.parametrize(
    ("case", "hosts", "pods", "want"),
    [
        (
            "a READY before the fault's recorded second, after the ring's last step",
            KILLED_IN_POD,
            SURVIVORS,
            {"t2"},
        ),
        (
            "a READY before the ring's last step is the re-forming before",
            {**KILLED_IN_POD, "t1.job": HostSeen(step=T - 0.2, rank=1, joined=T - 0.5)},
            SURVIVORS,
            set(),
        ),
        (
            "a scale-in's pod out of the ring for 30 s is no survivor",
            {**KILLED_IN_POD, "t3.job": HostSeen(step=T - 30, rank=3)},
            [*SURVIVORS, *running({"t3": T - 60})],
            {"t2"},
        ),
    ],
)
def test_who_moved_on_and_who_survived(
    case: str, hosts: dict[str, HostSeen], pods: list[PodView], want: set[str]
) -> None:
    training = seen(T + 11, hosts, last_step=T - 0.2)
    assert set(watchdog.waiting(status(), training, pods, wanted=3)) == want, case


def test_the_old_ring_stepping_past_a_force_delete_is_not_training_back() -> None:
    """A force-deleted worker steps until its kill, 2 s on: its ring's steps after the delete,
    with no reset line since, are not a recovery; a survivor the kill left in a collective is."""
    started = T - 100  # every host printed its reset line when the training started
    hosts = {
        "t0.job": HostSeen(step=T + 2.6, rank=0, reset=started),
        "t1.job": HostSeen(step=T + 2.6, rank=1, reset=started, joined=T + 2.8),
        "t2.job": HostSeen(step=T + 2.6, rank=2, reset=started),
    }
    training = seen(T + 14, hosts, last_step=T + 2.6)
    assert not watchdog.stepped_at_width(training, T, 3)
    assert set(watchdog.waiting(status(), training, SURVIVORS, wanted=3)) == {"t2"}
    reformed = seen(T + 14, {**hosts, "t1.job": HostSeen(step=T + 9, rank=0, reset=T + 4)}, last_step=T + 9)
    assert watchdog.stepped_at_width(dataclasses.replace(reformed, width=2), T, None)


def test_a_jobs_first_fault_before_any_reset_line() -> None:
    """The Horovod script prints its first reset line at its first re-forming: before it, the
    force-deleted worker's ring stepping until the kill is told by the deleted pod's host in it
    (seen: a job's first force delete taken as recovered, a survivor waiting out Gloo's 300 s)."""
    hosts = {
        "t0.job": HostSeen(step=T + 1.85, rank=0, left=T + 2.78),
        "t1.job": HostSeen(step=T + 1.85, rank=2, joined=T + 2.79),
        "t2.job": HostSeen(step=T + 1.85, rank=1),
    }
    deleted = JobStatus(
        restarts=(RestartEntry(time=format_time(at(100)), pod="t0", replica="trainer", index=0),)
    )
    training = seen(T + 14, hosts, last_step=T + 1.85)
    assert watchdog.gone(deleted.restarts or ()) == {"t0"}
    assert not watchdog.stepped_at_width(training, T, 3, frozenset({"t0"}))
    assert watchdog.stepped_at_width(training, T, 3)  # what it read before
    assert set(watchdog.waiting(deleted, training, SURVIVORS, wanted=3)) == {"t2"}


def test_the_bound_is_ten_of_rank_0s_p99_gaps_and_at_least_30_s() -> None:
    assert watchdog.bound(TrainingSeen(0, intervals=(1.0,) * 10)) == 30
    assert watchdog.bound(TrainingSeen(0, intervals=(5.0,) * 10)) == 50
    assert watchdog.bound(TrainingSeen(0)) == 30  # cadence unknown yet


def test_the_late_bound_is_one_and_a_half_of_rank_0s_p99_gaps_and_at_least_1_5_s() -> None:
    assert watchdog.late_bound(TrainingSeen(0, intervals=(0.1,) * 10)) == 1.5
    assert watchdog.late_bound(TrainingSeen(0, intervals=(1.1,) * 10)) == pytest.approx(1.65)
    assert watchdog.late_bound(TrainingSeen(0, intervals=(5.0,) * 10)) == 7.5
    assert watchdog.late_bound(TrainingSeen(0)) == 1.5  # cadence unknown yet


def test_a_stall_is_restarted_by_the_watchdogs_own_rung_whatever_the_rules() -> None:
    seed_trainer = trainer()  # OnNodeFailWithExitCode, rules for nodeNotReady and PodForceDeleted only
    got = decide(seed_trainer, True, Failure(FailureKind.STALL, "stall: ..."))
    assert (
        isinstance(got, RestartDecision)
        and got.scope is RestartScope.POD
        and got.rule == "the recovery watchdog"
    )


@pytest.mark.parametrize("left", [False, True], ids=["a rank waiting", "a worker out of the ring"])
def test_a_pass_restarts_the_marked_pod_and_counts_it(left: bool) -> None:
    cluster = Cluster(seed_job(), running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    victim = next(n for n in cluster.pods if "-trainer-" in n and n.endswith("-1"))
    views = [
        dataclasses.replace(
            v, waiting=Waiting(at(5).timestamp(), "stall: no step for 31 s since the restart", left=left)
        )
        if v.name == victim
        else v
        for v in (p.view() for p in cluster.pods.values())
    ]
    result = plan(cluster.job, views, {"node-a": node()}, at(40))
    # Deleted with no grace period: the seed's 300 s, whose PID 1 ignores SIGTERM, would keep
    # the waiting rank in the ring that long.
    assert [(d.name, d.grace_period_seconds) for d in result.deletes] == [(victim, 0)]
    assert [(c.replica, c.index, c.generation) for c in result.creates] == [("trainer", 1, 1)]
    (record,) = result.restarts
    kind = FailureKind.LEFT_RING if left else FailureKind.STALL
    assert record.rule == "the recovery watchdog" and record.failure.kind is kind
    assert result.status is not None and result.status.restart_count == {"trainer": 1, "launcher": 0}


def test_the_silence_is_counted_from_the_fault_not_from_the_restarts_decision() -> None:
    """A worker's exit is seen 2 s after it happens; the other workers leave the broken ring at
    once: the anchor is the restart's failureTime where the cluster gives one."""
    decided, failed = format_time(at(102)), format_time(at(100))
    with_fault = JobStatus(
        restarts=(RestartEntry(time=decided, failure_time=failed, replica="trainer", index=2),)
    )
    assert watchdog.recovered_at(with_fault) == at(100).timestamp()
    assert watchdog.recovered_at(JobStatus(restarts=(RestartEntry(time=decided),))) == at(102).timestamp()
    assert watchdog.recovered_at(JobStatus()) is None


LISTED = frozenset({"t0", "t1", "t2b"})
STARTED = running({"t0": T - 60, "t1": T - 60, "t2b": T + 3})
STARTED = [dataclasses.replace(p, running_since=at(T + 1 - at(0).timestamp())) for p in STARTED]


@pytest.mark.parametrize(
    ("case", "host", "listed", "want"),
    [
        ("failed while its pod runs on", HostSeen(step=T - 1, rank=1, left=T), LISTED, {"t1"}),
        ("never failed", HostSeen(step=T - 1, rank=1), LISTED, set()),
        ("failed before the pod was made: another pod's worker", HostSeen(left=T - 90), LISTED, set()),
        (
            # An InPlace rule: the containers started again after the failure, in the same pod.
            "failed, then restarted in place: Horovod keeps the host blacklisted",
            HostSeen(step=T - 31, rank=1, left=T - 30),
            LISTED,
            {"t1"},
        ),
        ("stepped again since: taken back", HostSeen(step=T + 5, rank=1, left=T), LISTED, set()),
        ("out of the host list (a scale-in)", HostSeen(step=T - 1, left=T), frozenset({"t0", "t2b"}), set()),
    ],
)
def test_a_worker_out_of_the_ring_while_its_pod_runs(
    case: str, host: HostSeen, listed: frozenset[str], want: set[str]
) -> None:
    training = seen(T + 1, {**RING, "t1": host})
    found = watchdog.left_ring(training, STARTED, listed)
    assert set(found) == want, case
    assert all(w.left and "left the ring" in w.description for w in found.values())
    assert watchdog.left_ring(None, STARTED, listed) == {}


# The ring of t0 and t1 stepping at width 2; t2b listed at T, never in it.
STEPPING = {
    "t0": HostSeen(step=T + 19, rank=0),
    "t1": HostSeen(step=T + 19, rank=1),
}


@pytest.mark.parametrize(
    ("case", "read_at", "hosts", "last_step", "cap", "want"),
    [
        ("listed 20 s, the ring steps without it", T + 20, STEPPING, T + 19, None, {"t2b"}),
        ("listed 10 s: Horovod may add it yet", T + 10, STEPPING, T + 9, None, set()),
        (
            "it stepped since it was listed",
            T + 20,
            {**STEPPING, "t2b": HostSeen(step=T + 8)},
            T + 19,
            None,
            set(),
        ),
        ("the ring does not step", T + 40, STEPPING, T + 19, None, set()),
        ("the ring stepped too little since", T + 20, STEPPING, T + 12, None, set()),
        ("the ring is at horovodrun's --max-np", T + 20, STEPPING, T + 19, 2, set()),
        (
            "its worker started since it was listed: the ring takes it in",
            T + 20,
            {**STEPPING, "t2b": HostSeen(started=T + 19.5)},
            T + 19,
            None,
            set(),
        ),
        (
            "a worker started on it before it was listed: another pod's",
            T + 20,
            {**STEPPING, "t2b": HostSeen(started=T - 1)},
            T + 19,
            None,
            {"t2b"},
        ),
    ],
)
def test_a_listed_worker_horovod_never_took_in(
    case: str, read_at: float, hosts: dict[str, HostSeen], last_step: float, cap: int | None, want: set[str]
) -> None:
    training = TrainingSeen(read_at, last_step=last_step, width=2, hosts=hosts)
    listed = {"t0": T - 100, "t1": T - 100, "t2b": T}
    found = watchdog.left_out(training, STARTED, listed, cap)
    assert set(found) == want, case
    assert all(w.left and "left out of the ring" in w.description for w in found.values())


# The escalation: nothing steps long after the latest restart, and nothing tells which rank
# waits: the master is raised as a hang, for the job's own rules; ``alone`` where no worker
# moved on either (RING: nobody left the old ring), for the watchdog's restart of the job.
MASTER = PodView(name="launcher-0", phase="Running", created=at(0))


@pytest.mark.parametrize(
    ("case", "training", "restart", "master", "alone"),
    [
        ("silent 89 s after the restart: not yet", seen(T + 89, RING), T, MASTER, None),
        (
            "silent 90 s, three bounds, nobody moved on: the master, alone",
            seen(T + 90, RING),
            T,
            MASTER,
            True,
        ),
        (
            "a survivor moved on, the other never did: the master, not alone",
            seen(T + 90, T0_RE_FORMED),
            T,
            MASTER,
            False,
        ),
        (
            "stepped at width 2 at T + 8, silent 90 s since, two reached the new rendezvous",
            seen(T + 98, NARROW, last_step=T + 8, width=2),
            T,
            MASTER,
            False,
        ),
        ("back at full width", seen(T + 120, RING, last_step=T + 8), T, MASTER, None),
        ("no restart", seen(T + 120, RING), None, MASTER, None),
        ("no master running", seen(T + 120, RING), T, dataclasses.replace(MASTER, phase="Pending"), None),
        (
            "a slower training's bound: 3 x 10 of its 5 s gaps",
            dataclasses.replace(seen(T + 120, RING), intervals=(5.0,) * 10),
            T,
            MASTER,
            None,
        ),
    ],
)
def test_the_escalation_marks_the_master_when_nothing_steps_for_three_bounds(
    case: str, training: TrainingSeen, restart: float | None, master: PodView, alone: bool | None
) -> None:
    got = watchdog.escalation(status(restart), training, master, wanted=3)
    mark = got.get(MASTER.name)
    assert (None if mark is None else mark.alone) is alone, case
    if mark is not None:
        who = "no worker has left the ring that broke" if alone else "nothing tells which rank waits"
        assert mark.hang and who in mark.description


# horovodrun's driver held: two trainers force-deleted at once (t1, t2), t1 the ring's rank 0 and
# killed before the driver read the list without them; its wait for one slot at T + 3 is never
# counted, while the survivor t0 has been listed all along.
HELD = TrainingSeen(T + 8, last_step=BEFORE, width=3, hosts=RING, awaiting=Awaiting(T + 3, 1))
LISTED_AT = {"t0": T - 60, "t2b": T + 5}
SURVIVED = running({"t0": T - 60, "t2b": T + 3})


@pytest.mark.parametrize(
    ("case", "training", "listed", "pods", "marked"),
    [
        ("waited 5 s for 1 slot, t0 listed all along: held", HELD, LISTED_AT, SURVIVED, True),
        ("waited 4.9 s: not yet", dataclasses.replace(HELD, read_at=T + 7.9), LISTED_AT, SURVIVED, False),
        ("counted since: it went on", dataclasses.replace(HELD, counted=T + 3.1), LISTED_AT, SURVIVED, False),
        (
            "waits for 3 slots, 2 hosts listed: Horovod's own wait for hosts",
            dataclasses.replace(HELD, awaiting=Awaiting(T + 3, 3)),
            LISTED_AT,
            SURVIVED,
            False,
        ),
        (
            "2 slots, t2b listed 5 s too: held",
            dataclasses.replace(HELD, read_at=T + 10, awaiting=Awaiting(T + 3, 2)),
            LISTED_AT,
            SURVIVED,
            True,
        ),
        (
            "t0 listed only 4 s ago (t2b 3 s)",
            HELD,
            {**LISTED_AT, "t0": T + 4},
            SURVIVED,
            False,
        ),
        (
            "t0 blacklisted by the driver: not a slot",
            dataclasses.replace(HELD, hosts={**RING, "t0": HostSeen(left=T + 2)}),
            LISTED_AT,
            SURVIVED,
            False,
        ),
        ("t0 not running", HELD, LISTED_AT, running({"t2b": T + 3}), False),
        (
            "a wait from before the restart",
            dataclasses.replace(HELD, awaiting=Awaiting(T - 2, 1)),
            LISTED_AT,
            SURVIVED,
            False,
        ),
    ],
)
def test_a_driver_held_with_its_slots_listed_marks_the_master(
    case: str, training: TrainingSeen, listed: dict[str, float], pods: list[PodView], marked: bool
) -> None:
    got = watchdog.driver_blocked(status(), training, MASTER, pods, listed)
    assert (MASTER.name in got) is marked, case
    if marked:
        mark = got[MASTER.name]
        assert mark.hang and mark.alone and mark.since == T + 3
        assert "horovodrun's driver has waited for" in mark.description
        read_later = dataclasses.replace(training, read_at=T + 30)
        later = watchdog.driver_blocked(status(), read_later, MASTER, pods, listed)
        assert later == got  # the words name times: the same read after read


def test_a_held_driver_is_nothing_without_a_restart_or_a_running_master() -> None:
    assert watchdog.driver_blocked(status(None), HELD, MASTER, SURVIVED, LISTED_AT) == {}
    pending = dataclasses.replace(MASTER, phase="Pending")
    assert watchdog.driver_blocked(status(), HELD, pending, SURVIVED, LISTED_AT) == {}
    assert watchdog.driver_blocked(status(), None, MASTER, SURVIVED, LISTED_AT) == {}


HANG_RULE = event_rule("hang", RestartScope.ALL)


@pytest.mark.parametrize(
    ("waits", "rules", "want"),
    [
        (Waiting(T, "stall", left=False), (), FailureKind.STALL),
        (Waiting(T, "left", left=True), (), FailureKind.LEFT_RING),
        (Waiting(T, "hang", hang=True), (HANG_RULE,), FailureKind.HANG),
        (Waiting(T, "hang", hang=True), (), None),  # no rule asks for hang restarts: none is raised
        (Waiting(T, "hang", hang=True, alone=True), (), FailureKind.RING_HUNG),  # nobody moved on
        (Waiting(T, "hang", hang=True, alone=True), (HANG_RULE,), FailureKind.HANG),  # the job's rule first
    ],
)
def test_what_a_watchdog_mark_stands_for(
    waits: Waiting, rules: tuple[FaultTolerantRule, ...], want: FailureKind | None
) -> None:
    got = watchdog.waiting_failure(launcher(rules=rules), waits)
    assert (got.kind if got is not None else None) is want


@pytest.mark.parametrize(
    ("rule", "alone", "want"),
    [
        (True, False, FailureKind.HANG),
        (False, False, None),
        (False, True, FailureKind.RING_HUNG),
        (True, True, FailureKind.HANG),
    ],
    ids=[
        "a rule names hang",
        "no rule names hang",
        "no rule, nobody moved on: the watchdog restarts the job",
        "a rule names hang, nobody moved on: the rule",
    ],
)
def test_an_escalated_master_is_restarted_by_the_jobs_own_hang_rule_or_by_the_watchdog(
    rule: bool, alone: bool, want: FailureKind | None
) -> None:
    job = seed_job(trainer(), launcher(rules=(*launcher().rules, HANG_RULE) if rule else launcher().rules))
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    master = next(n for n in cluster.pods if "-launcher-" in n)
    mark = Waiting(at(5).timestamp(), "hang: no step since 12:00:05", hang=True, alone=alone)
    views = [
        dataclasses.replace(v, waiting=mark) if v.name == master else v
        for v in (p.view() for p in cluster.pods.values())
    ]
    result = plan(cluster.job, views, {"node-a": node()}, at(120))
    if want is None:
        assert not result.restarts and not result.deletes
        return
    (record,) = result.restarts
    assert record.failure.kind is want and record.scope is RestartScope.ALL
    assert {d.name for d in result.deletes} == set(cluster.pods)  # every pod of the job goes


def test_a_mark_reads_the_same_read_after_read() -> None:
    """The watch compares marks read after read (a change is logged and kicks the job): their
    words name times, not lengths that grow at every read."""
    first, later = (
        watchdog.waiting(status(), seen(t, T0_RE_FORMED), PODS, wanted=3) for t in (T + 100, T + 102)
    )
    assert first == later != {}
    first, later = (
        watchdog.escalation(status(), seen(t, RING), MASTER, wanted=3) for t in (T + 100, T + 102)
    )
    assert first == later != {}
