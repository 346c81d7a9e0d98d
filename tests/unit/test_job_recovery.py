"""The job's own recovery figure (issue 25): from the fault observed to the replacements Running
and listed for discovery. When a pass has listed them (``recovery_time.listed``, table-tested),
the seconds it counts, and ``Recoveries`` ending each recovery there once, per job, with the
job's series leaving with it."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.core import REGISTRY

from aitj.controller import metrics
from aitj.controller.executor import Sent, StaleJob, StepFailed
from aitj.controller.logs import log
from aitj.controller.recovery_metrics import Recoveries, record_restarts
from aitj.core.api import RestartScope
from aitj.core.planner.lifecycle import JobRef
from aitj.core.planner.types import Manifest, ObjectKind, Plan, PodNudge
from aitj.core.telemetry import Recovery, recovery_time
from tests.unit.builders import Cluster, at, event_rule, launcher, name_of, running_seed, seed_job, trainer

KEY = ("default", "test-horovod-elastic")
JOB = {"namespace": KEY[0], "job_name": KEY[1]}
CONFIGMAP = Manifest(ObjectKind.CONFIGMAP, "test-horovod-elastic-discovery", {}, version="5")
SECRET = Manifest(ObjectKind.SECRET, "test-horovod-elastic-ssh", {})
NUDGE = PodNudge("launcher-0", "uid-l", "digest")


# ---- listed: whether a pass leaves the replacements listed --------------------------------


@pytest.mark.parametrize(
    ("plan", "carried_out", "want"),
    [
        # Carried out through the status write: the ConfigMap and the nudges were sent before it.
        (Plan(discovery=CONFIGMAP, nudges=(NUDGE,)), True, True),
        (Plan(ensure=(CONFIGMAP,)), True, True),
        # Stopped before the status write: a list to write may not have been written.
        (Plan(discovery=CONFIGMAP), False, False),
        (Plan(ensure=(SECRET, CONFIGMAP)), False, False),  # a missing ConfigMap made with the lists
        (Plan(nudges=(NUDGE,)), False, False),  # the launchers not yet told to read it
        # Nothing of the lists to send: the ConfigMap already held them (or the job has none).
        (Plan(), False, True),
        (Plan(ensure=(SECRET,)), False, True),
        (Plan(), True, True),
    ],
    ids=[
        "written-and-nudged",
        "made",
        "write-not-reached",
        "make-not-reached",
        "nudge-not-reached",
        "nothing-to-write-stopped",
        "other-object-stopped",
        "nothing-to-write",
    ],
)
def test_a_pass_lists_the_replacements_once_its_list_and_nudges_are_sent(
    plan: Plan, carried_out: bool, want: bool
) -> None:
    assert recovery_time.listed(plan, carried_out) is want


# ---- the seconds ----------------------------------------------------------------------------


def decided_at(seconds: float) -> Recovery:
    """decided_at: a Pod restart of trainer 0 the operator decided at ``seconds``."""
    c = cluster()
    c.pods[name_of("trainer", 0)].deleted(seconds - 1, grace=0)
    plan = c.step(seconds)
    return Recovery(plan.restarts[0], ())


@pytest.mark.parametrize(
    ("decided", "end", "want"),
    [
        (101, 104.5, 3.5),  # from the decision, not from the fault (100)
        (101, 101, 0.0),
        (101, 100, 0.0),  # a clock that stepped back counts nothing, never less
    ],
)
def test_the_job_recovery_counts_from_the_decision_to_the_listing(
    decided: float, end: float, want: float
) -> None:
    assert decided_at(decided).seconds_until(at(end)) == pytest.approx(want)


# ---- Recoveries: the job's figure, once -----------------------------------------------------


def cluster(scope: RestartScope = RestartScope.POD) -> Cluster:
    """cluster: the seed (plugin.discovery) on the test double, trainers restarted with ``scope``."""
    rule = event_rule("nodeNotReady,PodForceDeleted", scope)
    c = Cluster(seed_job(trainer(rules=(rule,)), launcher()), running_seed())
    c.step(10)
    return c


def body_of(c: Cluster) -> dict[str, Any]:
    """body_of: the double's job as the cache holds it (what a pass sees)."""
    replicas = {r.name: {"replicas": r.replicas} for r in c.job.spec.replicas}
    meta = {"name": c.job.name, "namespace": c.job.namespace, "uid": c.job.uid}
    return {"metadata": meta, "spec": {"replicaSpecs": replicas}, "status": c.status}


def figures() -> tuple[float, float, float]:
    """figures: the job's recovery count, sum and last (0 when absent)."""
    count = REGISTRY.get_sample_value("aitj_job_recovery_seconds_count", JOB) or 0.0
    total = REGISTRY.get_sample_value("aitj_job_recovery_seconds_sum", JOB) or 0.0
    last = REGISTRY.get_sample_value("aitj_job_last_recovery_seconds", JOB) or 0.0
    return count, total, last


def force_delete(c: Cluster, tracker: Recoveries, index: int = 0) -> None:
    """force_delete: trainer ``index`` deleted at 100; the pass at 101 decides, creates the
    replacement and records the restart."""
    c.pods[name_of("trainer", index)].deleted(100, grace=0)
    plan = c.step(101)
    assert plan.status is not None
    created = {(p.replica, p.index): (p.generation, at(101)) for p in plan.creates}
    record_restarts(log, KEY, c.job, plan.status, plan.restarts, created, tracker)


def see(c: Cluster, tracker: Recoveries, now: float) -> Plan:
    """see: a pass at ``now`` shows the tracker the pods, then plans (and the double applies it)."""
    tracker.seen(KEY, body_of(c), [p.view() for p in c.pods.values()], at(now))
    return c.step(now)


@pytest.fixture(autouse=True)
def forget() -> Any:
    """forget: each test starts and ends without the job's series."""
    metrics.forget_job(*KEY)
    yield
    metrics.forget_job(*KEY)


def test_a_recovery_ends_for_the_job_when_the_pass_that_saw_it_running_has_listed_it() -> None:
    tracker, c = Recoveries(), cluster()
    force_delete(c, tracker)
    see(c, tracker, 102)  # the replacement is not Running yet
    c.run_all(103)
    plan = see(c, tracker, 104)
    # The pass that sees it Running rewrites the list with it and nudges the launcher.
    assert plan.discovery is not None and plan.nudges
    assert plan.hosts is not None and name_of("trainer", 0, 1) in {h.pod for h in plan.hosts}
    assert figures() == (0, 0, 0) and len(tracker.listing(KEY)) == 1  # not before the pass ends
    tracker.passed(log, KEY, c.job, plan, Sent(status_written=True), at(104.25))
    assert figures() == (1, 3.25, 3.25)  # decided at 101, listed when the pass returned
    assert tracker.listing(KEY) == () and tracker.pending(KEY) == ()
    # Later passes observe nothing again.
    tracker.passed(log, KEY, c.job, see(c, tracker, 105), Sent(), at(105))
    assert figures() == (1, 3.25, 3.25)


def test_a_pass_stopped_before_its_status_write_leaves_the_listing_to_the_next_one() -> None:
    tracker, c = Recoveries(), cluster()
    force_delete(c, tracker)
    c.run_all(103)
    plan = see(c, tracker, 104)
    tracker.passed(
        log, KEY, c.job, plan, Sent(stopped=StepFailed("writing the discovery host list")), at(104.1)
    )
    tracker.passed(log, KEY, c.job, plan, Sent(stopped=StaleJob("the job changed")), at(104.2))
    assert figures() == (0, 0, 0)
    tracker.passed(log, KEY, c.job, Plan(), Sent(), at(105))  # found the ConfigMap holding them
    assert figures() == (1, 4, 4)


def test_the_last_recovery_is_the_last_decided_and_the_sum_counts_each() -> None:
    tracker, c = Recoveries(), cluster()
    force_delete(c, tracker, index=0)
    c.run_all(103)
    tracker.passed(log, KEY, c.job, see(c, tracker, 104), Sent(status_written=True), at(104))
    c.pods[name_of("trainer", 1)].deleted(110, grace=0)
    plan = c.step(111)
    assert plan.status is not None
    record_restarts(log, KEY, c.job, plan.status, plan.restarts, {}, tracker)
    c.run_all(112)
    tracker.passed(log, KEY, c.job, see(c, tracker, 113), Sent(status_written=True), at(113))
    assert figures() == (2, 3 + 2, 2)


def test_a_deleted_or_finished_job_ends_no_recovery_and_its_series_go() -> None:
    tracker, c = Recoveries(), cluster()
    force_delete(c, tracker)
    c.run_all(103)
    see(c, tracker, 104)
    # A pass that did not plan the job (it is being deleted) lists nothing.
    tracker.passed(log, KEY, JobRef(*KEY, "uid"), Plan(), Sent(), at(104))
    assert figures() == (0, 0, 0) and len(tracker.listing(KEY)) == 1
    tracker.forget(KEY)  # deleted between the pass's snapshot and its end
    tracker.passed(log, KEY, c.job, Plan(), Sent(), at(105))
    assert figures() == (0, 0, 0)

    force_delete(c, tracker, index=1)
    c.run_all(106)
    see(c, tracker, 107)
    tracker.seen(KEY, {**body_of(c), "status": {**c.status, "phase": "Failed"}}, [], at(108))
    tracker.passed(log, KEY, c.job, Plan(), Sent(), at(108))
    assert figures() == (0, 0, 0)

    force_delete(c, tracker, index=2)
    c.run_all(110)
    tracker.passed(log, KEY, c.job, see(c, tracker, 111), Sent(), at(111))
    assert figures()[0] == 1
    metrics.forget_job(*KEY)
    page = [s.name for f in REGISTRY.collect() for s in f.samples if s.labels.get("job") == KEY[1]]
    assert page == []


def test_a_replica_restart_is_one_job_recovery_once_every_trainer_is_listed() -> None:
    tracker, c = Recoveries(), cluster(RestartScope.REPLICA)
    force_delete(c, tracker, index=1)
    for now in range(102, 106):
        c.terminate_deleted()
        c.run_all(now)
        tracker.passed(log, KEY, c.job, see(c, tracker, now), Sent(status_written=True), at(now))
    assert figures()[0] == 1


class Untouchable:
    """Untouchable: an argument that fails the test if anything of it is read."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"read {name}")


def test_a_pass_of_a_job_with_no_recovery_under_way_reads_nothing_of_it() -> None:
    """Most passes: no recovery under way, none recorded (no status written): ``seen`` and
    ``passed`` return before reading the job, its pods or the plan."""
    tracker = Recoveries()
    nothing: Any = Untouchable()
    tracker.seen(KEY, nothing, nothing, at(100))
    tracker.passed(nothing, KEY, nothing, nothing, Sent(), at(100))
    assert tracker.pending(KEY) == () and tracker.listing(KEY) == ()
