"""The chaos command's hang fault (issue 28 item 5): it runs only when asked for by name, hits
only jobs that watch their progress, and calls for one ``hang`` restart of the job's watched
pod, whatever pod it stopped; the stopped pod's own deletion by that restart is the
operator's, no failure."""

from __future__ import annotations

import dataclasses
from typing import Any

from aitj.core.api import Job, Progress, RestartScope
from aitj.tools.chaos.expect import expected_restarts
from aitj.tools.chaos.faults import Context, heal
from aitj.tools.chaos.history import FaultRecord
from aitj.tools.chaos.invariants import one_live_pod, restart_counts
from aitj.tools.chaos.replay import world_of
from aitj.tools.chaos.schedule import Allowed, FaultKind, available
from tests.unit.builders import Pod, event_rule, launcher, node, seed_job, trainer
from tests.unit.test_chaos_invariants import KEY, H


def watching(*hang_rules: Any, restart_limit: int | None = 100) -> Job:
    """watching: the seed watching its launcher, whose rules add ``hang_rules``."""
    rules = launcher().rules + tuple(hang_rules)
    job = seed_job(trainer(replicas=1), launcher(rules=rules, restart_limit=restart_limit))
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, progress=Progress("launcher", 30)))


def run_with(job: Job, stopped: Pod, *, error: str | None = None) -> H:
    t0 = Pod("trainer", 0).running(node="node-a")
    l0 = Pod("launcher", 0).running(node="node-a")
    h = H().node(0, node("node-a")).job(0, job).pod(0, t0).pod(0, l0)
    h.h.faults.append(FaultRecord(1, 5, FaultKind.HANG, stopped.name, jobs=(KEY,), error=error))
    return h


def test_the_hang_fault_runs_only_when_asked_for_by_name() -> None:
    everything = Allowed(local=True, drain=True, operator_pod=True, operator_process=True)
    assert FaultKind.HANG not in available(everything)
    assert available(everything, (FaultKind.HANG, FaultKind.FORCE_DELETE)) == (
        FaultKind.FORCE_DELETE,
        FaultKind.HANG,
    )


def test_a_stopped_worker_calls_for_one_hang_restart_of_the_watched_launcher() -> None:
    t0 = Pod("trainer", 0).running(node="node-a")
    h = run_with(watching(event_rule("hang", RestartScope.ALL)), t0)
    # The restart (scope All) deletes the stopped trainer: the operator's doing, no failure.
    h.pod(40, t0.deleted(40)).pod(41, Pod("trainer", 0, generation=1).running(node="node-a"))
    expected = expected_restarts(h.end(60))
    assert (expected.counts[KEY]["launcher"], expected.counts[KEY]["trainer"]) == (1, 0)
    (called,) = expected.failures[KEY]
    assert (called.slot[2:], called.cause, called.restart, called.why) == (
        ("launcher", 0),
        "hang",
        True,
        "exceptionalEvent hang",
    )
    history = h.job(50, watching(event_rule("hang", RestartScope.ALL)), RestartCount={"launcher": 1}).end(60)
    assert restart_counts(history, expected_restarts(history)).violations == []


def test_a_hang_no_rule_restarts_calls_for_none_and_a_second_restart_is_reported() -> None:
    h = run_with(watching(), Pod("trainer", 0))
    expected = expected_restarts(h.end(60))
    assert expected.counts[KEY]["launcher"] == 0 and [c.restart for c in expected.failures[KEY]] == [False]
    # With the rule, two hang restarts for one stopped pod (a scope that left it stopped) are one too many.
    h = run_with(watching(event_rule("hang", RestartScope.POD)), Pod("trainer", 0))
    history = h.job(50, watching(event_rule("hang", RestartScope.POD)), RestartCount={"launcher": 2}).end(60)
    check = restart_counts(history, expected_restarts(history))
    assert [v.message for v in check.violations] == ["RestartCount.launcher is 2, the faults called for 1"]


def test_a_hang_fault_that_failed_calls_for_nothing() -> None:
    h = run_with(watching(event_rule("hang", RestartScope.ALL)), Pod("trainer", 0), error="403 Forbidden")
    assert expected_restarts(h.end(60)).counts[KEY]["launcher"] == 0


def test_a_replacement_created_just_before_its_running_predecessor_is_deleted_is_no_second_live_pod() -> None:
    """A hang's restart creates the replacement, then deletes the hung pod, in one pass."""
    t0 = Pod("trainer", 0).running(node="node-a")
    h = H().node(0, node("node-a")).job(0, watching()).pod(0, t0)
    h.pod(40, Pod("trainer", 0, generation=1)).pod(40.1, t0.deleted(40.1))
    h.pod(42, Pod("trainer", 0, generation=1).running(node="node-a"))
    assert one_live_pod(h.end(60)).violations == []
    # The same replacement Running while its predecessor was never told to stop is reported.
    t0 = Pod("trainer", 0).running(node="node-a")
    h = H().node(0, node("node-a")).job(0, watching()).pod(0, t0)
    h.pod(42, Pod("trainer", 0, generation=1).running(node="node-a"))
    assert len(one_live_pod(h.end(60)).violations) == 1


def replayed(history: Any) -> Any:
    world = world_of(history)
    for s in history.timeline():
        world.apply(s)
    return world


def test_a_hang_fault_lasts_until_its_jobs_restart_is_seen() -> None:
    """The job looks steady while it hangs: the run waits for the restart before it settles."""
    ctx = Context(api=None, local=None, operators=None, hang_hold=100)  # type: ignore[arg-type]
    job = watching(event_rule("hang", RestartScope.ALL))
    h = H().node(0, node("node-a")).job(0, job, RestartCount={"launcher": 0})
    world = replayed(h.end(10))
    rec = FaultRecord(1, 5, FaultKind.HANG, "x", jobs=(KEY,), restarts_before=0)
    assert not heal(ctx, world, rec, 30)
    h.job(36, job, RestartCount={"launcher": 1})
    world = replayed(h.end(40))
    assert heal(ctx, world, rec, 40) and rec.effect == 40
    late = FaultRecord(2, 5, FaultKind.HANG, "x", jobs=(KEY,), restarts_before=1)
    assert not heal(ctx, world, late, 50) and heal(ctx, world, late, 106)  # hang_hold
