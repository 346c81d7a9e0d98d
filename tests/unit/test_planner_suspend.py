"""spec.suspend: a suspended job has no pods, counts no restarts and runs no clock; a resume
starts it afresh with its RestartCount (aitj.core.planner.suspend; docs/semantics.md, "22.
Suspend and resume"). Also what a Kueue-like admitter relies on: templates edited while
suspended reach the resumed pods, and ``active`` falls to 0 once the pods are gone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aitj.core.api import InvalidJob, Job, parse_job
from aitj.core.planner import Plan
from aitj.core.planner.types import DeleteReason
from tests.unit.builders import Cluster, as_json, name_of, running_seed, seed_job

TRAINERS = [name_of("trainer", i) for i in range(3)]
LAUNCHER = name_of("launcher", 0)


def suspended(job: Job, value: bool = True) -> Job:
    """suspended: ``job`` with spec.suspend set to ``value``."""
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, suspend=value))


def running(job: Job | None = None) -> Cluster:
    """running: the seed job with every pod Running since 1 s."""
    cluster = Cluster(job or seed_job(), running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def suspend(cluster: Cluster, now: float, value: bool = True) -> Plan:
    cluster.job = suspended(cluster.job, value)
    return cluster.step(now)


def last_condition(cluster: Cluster) -> dict[str, Any]:
    found: dict[str, Any] = cluster.status["conditions"][-1]
    return found


# ---------------------------------------------------------------------------------------------
# The spec field


@pytest.mark.parametrize(("value", "expected"), [(None, False), (False, False), (True, True)])
def test_suspend_is_read_from_the_manifest_and_defaults_to_false(value: bool | None, expected: bool) -> None:
    spec: dict[str, Any] = {
        "replicaSpecs": {"trainer": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    }
    if value is not None:
        spec["suspend"] = value
    assert parse_job({"metadata": {"name": "tiny"}, "spec": spec}).spec.suspend is expected


def test_a_suspend_that_is_not_a_boolean_is_refused_naming_the_field() -> None:
    spec = {
        "suspend": "yes",
        "replicaSpecs": {"trainer": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
    }
    with pytest.raises(InvalidJob) as e:
        parse_job({"metadata": {"name": "tiny"}, "spec": spec})
    assert "spec.suspend" in str(e.value)


# ---------------------------------------------------------------------------------------------
# Suspended from the start


def test_a_job_created_suspended_creates_no_pods_and_says_it_is_suspended() -> None:
    cluster = Cluster(suspended(seed_job()))
    result = cluster.step(1)
    assert result.creates == () and result.deletes == () and result.ensure == ()
    assert cluster.status["phase"] == "Suspended"
    assert (last_condition(cluster)["reason"], last_condition(cluster)["status"]) == (
        "TrainingJobSuspended",
        "True",
    )
    assert [(e.type, e.reason) for e in result.events] == [("Normal", "TrainingJobSuspended")]
    assert cluster.status["RestartCount"] == {"trainer": 0, "launcher": 0}
    assert cluster.status["replicaStatuses"]["trainer"]["active"] == 0
    assert cluster.pods == {}


def test_a_suspended_job_planned_again_writes_nothing_and_sends_no_second_event() -> None:
    cluster = Cluster(suspended(seed_job()))
    cluster.step(1)
    again = cluster.step(50)
    assert again.status is None and again.events == () and again.creates == ()


def test_a_job_created_suspended_then_resumed_creates_its_first_pods_trainers_first() -> None:
    cluster = Cluster(suspended(seed_job()))
    cluster.step(1)
    result = suspend(cluster, 5, value=False)
    assert sorted(c.name for c in result.creates) == sorted(TRAINERS)
    assert [(e.type, e.reason) for e in result.events] == [("Normal", "TrainingJobResumed")]
    assert cluster.status["phase"] == "Pending"
    cluster.run_all(since=6)
    assert [c.name for c in cluster.step(7).creates] == [LAUNCHER]


# ---------------------------------------------------------------------------------------------
# A running job suspended, then resumed


def test_suspending_a_running_job_deletes_every_pod_and_releases_every_finalizer() -> None:
    cluster = running()
    result = suspend(cluster, 20)
    assert sorted(d.name for d in result.deletes) == sorted([*TRAINERS, LAUNCHER])
    assert {d.reason for d in result.deletes} == {DeleteReason.SUSPEND}
    assert sorted(result.release) == sorted([*TRAINERS, LAUNCHER])
    assert result.creates == () and result.restarts == () and result.restart_events == ()
    assert cluster.status["phase"] == "Suspended"
    assert "startRunningTime" not in cluster.status  # timeLimit starts over at the resume
    assert cluster.status["replicaStatuses"]["trainer"]["active"] == 3  # still terminating
    cluster.terminate_deleted()
    cluster.step(25)
    assert cluster.pods == {}
    assert cluster.status["replicaStatuses"]["trainer"]["active"] == 0  # what a Kueue-like admitter waits for


def test_the_pods_a_suspension_deletes_are_no_faults_and_count_no_restart() -> None:
    cluster = running()
    suspend(cluster, 20)
    cluster.terminate_deleted()
    for now in (21, 30, 200):
        result = cluster.step(now)
        assert result.creates == () and result.restarts == ()
    assert cluster.status["RestartCount"] == {"trainer": 0, "launcher": 0}
    assert cluster.status["totalRestarts"] == 0


def test_a_resumed_job_starts_afresh_at_the_next_generation_and_runs_again() -> None:
    cluster = running()
    suspend(cluster, 20)
    cluster.terminate_deleted()
    result = suspend(cluster, 100, value=False)
    assert sorted(c.name for c in result.creates) == sorted(name_of("trainer", i, 1) for i in range(3))
    assert result.restarts == () and cluster.status["phase"] == "Pending"
    cluster.run_all(since=101)
    assert [c.name for c in cluster.step(102).creates] == [name_of("launcher", 0, 1)]
    assert cluster.status["phase"] == "Creating"
    cluster.run_all(since=103)
    cluster.step(104)
    assert cluster.status["phase"] == "Running"
    assert cluster.status["RestartCount"] == {"trainer": 0, "launcher": 0}
    assert cluster.status["startRunningTime"] == "2022-01-14T09:03:36Z"  # the resumed run's (T0 + 104 s)
    types = [(c["type"], c["status"]) for c in cluster.status["conditions"]]
    assert ("Suspended", "False") in types and types[-1] == ("Running", "True")


def test_a_job_resumed_before_its_pods_are_gone_replaces_them_at_once_counting_nothing() -> None:
    cluster = running()
    suspend(cluster, 20)  # the pods are terminating (grace 30 s)
    result = suspend(cluster, 22, value=False)
    assert sorted(c.name for c in result.creates) == sorted(name_of("trainer", i, 1) for i in range(3))
    assert result.restarts == () and cluster.status["RestartCount"] == {"trainer": 0, "launcher": 0}


def test_a_suspension_keeps_the_restart_count_the_job_had() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(30, grace=0)
    cluster.step(31)
    assert cluster.status["RestartCount"]["trainer"] == 1
    suspend(cluster, 40)
    cluster.terminate_deleted()
    assert cluster.status["RestartCount"]["trainer"] == 1
    suspend(cluster, 50, value=False)
    cluster.run_all(since=51)
    cluster.step(52)
    cluster.run_all(since=53)
    cluster.step(54)
    assert cluster.status["phase"] == "Running"
    assert cluster.status["RestartCount"] == {"trainer": 1, "launcher": 0}


def test_a_pod_force_deleted_while_the_job_is_suspended_is_no_failure() -> None:
    cluster = running()
    suspend(cluster, 20)
    for name in TRAINERS:
        cluster.pods[name].deleted(21, grace=0)
    cluster.collect()
    result = cluster.step(22)
    assert result.restarts == () and result.creates == ()
    assert cluster.status["RestartCount"]["trainer"] == 0


def test_a_pod_still_terminating_restart_time_limit_after_a_suspension_is_force_deleted() -> None:
    cluster = running()
    first = suspend(cluster, 20)
    assert first.requeue_after == 60.0
    waiting = cluster.step(50)
    assert waiting.deletes == () and waiting.requeue_after == pytest.approx(30.0)
    result = cluster.step(80)
    assert sorted(d.name for d in result.deletes) == sorted([*TRAINERS, LAUNCHER])
    assert {(d.grace_period_seconds, d.reason) for d in result.deletes} == {(0, DeleteReason.STUCK)}


# ---------------------------------------------------------------------------------------------
# Clocks


def test_time_limit_does_not_run_while_suspended_and_starts_over_at_the_resume() -> None:
    cluster = running(seed_job(time_limit=100))  # Running since 10 s: due at 110 s
    suspend(cluster, 50)
    cluster.terminate_deleted()
    assert cluster.step(500).outcome is None and cluster.status["phase"] == "Suspended"
    suspend(cluster, 1000, value=False)
    cluster.run_all(since=1001)
    cluster.step(1002)
    cluster.run_all(since=1003)
    cluster.step(1004)  # Running again: timeLimit counts from here
    assert cluster.step(1100).outcome is None
    result = cluster.step(1104)
    assert result.outcome is not None and result.outcome.phase == "Timeout"


def test_a_suspended_job_is_not_judged_even_when_its_pods_failed() -> None:
    cluster = running()
    cluster.pods[LAUNCHER].exited(1, finished=19)  # would fail the job (failPolicy Any)
    result = suspend(cluster, 20)
    assert result.outcome is None and cluster.status["phase"] == "Suspended"


def test_a_finished_job_ignores_suspend() -> None:
    cluster = running()
    cluster.pods[LAUNCHER].exited(0, finished=30)
    cluster.step(31)
    assert cluster.status["phase"] == "Succeeded"
    result = suspend(cluster, 40)
    assert cluster.status["phase"] == "Succeeded" and result.status is None


def test_an_index_that_succeeded_stays_succeeded_through_a_suspension() -> None:
    job = seed_job()
    cluster = running(job)
    cluster.pods[TRAINERS[1]].exited(0, finished=15)
    cluster.step(16)
    suspend(cluster, 20)
    cluster.terminate_deleted()
    result = suspend(cluster, 30, value=False)
    assert sorted(c.name for c in result.creates) == [name_of("trainer", 0, 1), name_of("trainer", 2, 1)]
    assert cluster.status["replicaStatuses"]["trainer"]["succeeded"] == 1


# ---------------------------------------------------------------------------------------------
# What a Kueue-like admitter relies on


def test_a_node_selector_and_tolerations_set_while_suspended_reach_the_resumed_pods() -> None:
    cluster = running()
    suspend(cluster, 20)
    cluster.terminate_deleted()
    injected = {"nodeSelector": {"pool": "a100"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    replicas = tuple(
        dataclasses.replace(r, template={"spec": {**r.template["spec"], **injected}})
        for r in cluster.job.spec.replicas
    )
    cluster.job = dataclasses.replace(
        cluster.job, spec=dataclasses.replace(cluster.job.spec, replicas=replicas)
    )
    result = suspend(cluster, 30, value=False)
    for c in result.creates:
        assert c.body["spec"]["nodeSelector"] == {"pool": "a100"}
        assert {"key": "gpu", "operator": "Exists"} in c.body["spec"]["tolerations"]


def test_preemption_suspends_and_re_admission_resumes_with_the_restart_count_unchanged() -> None:
    cluster = running()
    counts = []
    for cycle in range(3):
        start = 100 * (cycle + 1)
        suspend(cluster, start)  # preempted
        cluster.terminate_deleted()
        cluster.step(start + 1)
        assert cluster.pods == {}
        suspend(cluster, start + 10, value=False)  # admitted again
        cluster.run_all(since=start + 11)
        cluster.step(start + 12)
        cluster.run_all(since=start + 13)
        cluster.step(start + 14)
        assert cluster.status["phase"] == "Running"
        counts.append(cluster.status["totalRestarts"])
    assert counts == [0, 0, 0]
    assert sorted(cluster.live()) == sorted(
        [*(name_of("trainer", i, 3) for i in range(3)), name_of("launcher", 0, 3)]
    )


def test_a_suspension_ends_every_index_generation_in_the_ledger_it_writes() -> None:
    cluster = running()
    result = suspend(cluster, 20)
    assert result.status is not None
    ledger = as_json(result.status)["restartLedger"]["trainer"]
    assert ledger["ended"] == {"0": 0, "1": 0, "2": 0}
