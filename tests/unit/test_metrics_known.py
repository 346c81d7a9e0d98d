"""Counters at 0 for the label sets known up front (aitj.core.telemetry.known and
``metrics.job_planned``): a job's restarts, lost GPU time, scalings, pods created and recovery
summary, its namespace's finished jobs, and the operator's own closed sets, all exist before
their first increment, so increase() counts that increment without Prometheus's
created-timestamp-zero-ingestion; and they leave with the job."""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client.core import REGISTRY

from aitj.controller import metrics
from aitj.core.api import ReplicaSpec, RestartPolicy, RestartScope
from aitj.core.telemetry import known
from tests.unit.builders import event_rule, exit_rule, launcher, seed_job, trainer

GPUS = {"spec": {"containers": [{"name": "aitj-0", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}


def series(name: str, **labels: str) -> list[dict[str, str]]:
    """series: the label sets of ``name``'s samples on /metrics that carry ``labels``."""
    return [
        s.labels
        for f in REGISTRY.collect()
        for s in f.samples
        if s.name == name and labels.items() <= s.labels.items()
    ]


@pytest.mark.parametrize(
    ("replica", "fault_tolerant", "pairs"),
    [
        pytest.param(
            trainer(), True, {("nodeNotReady", "Pod"), ("PodForceDeleted", "Pod")},
            id="a fault-tolerant replica restarts for what its rules name, with each rule's scope",
        ),
        pytest.param(
            launcher(rules=(exit_rule("129"), event_rule("nodeNotReady", RestartScope.ALL))), True,
            {("exitCode", "Pod"), ("nodeNotReady", "All")},
            id="an exit-code rule is the exitCode cause; an event rule's scope is its own",
        ),
        pytest.param(
            trainer(restart_policy=RestartPolicy.EXIT_CODE), True, set(),
            id="a rule naming events a restartPolicy ExitCode does not allow makes nothing",
        ),
        pytest.param(
            trainer(restart_policy=RestartPolicy.EXIT_CODE, restart_scope=RestartScope.REPLICA), False,
            {("exitCode", "Replica")},
            id="without faultTolerant, each kind the restartPolicy allows, with the replica's scope",
        ),
        pytest.param(
            trainer(restart_policy=RestartPolicy.NEVER), False, set(),
            id="restartPolicy Never restarts nothing",
        ),
    ],
)  # fmt: skip
def test_a_replica_s_possible_restarts_follow_its_policy(
    replica: ReplicaSpec, fault_tolerant: bool, pairs: set[tuple[str, str]]
) -> None:
    got = known.restarts(replica, fault_tolerant)
    assert set(got) == pairs
    assert "RestartTimeout" not in {cause for cause, _ in got}  # the failure of a restart


def test_lost_gpu_time_and_scalings_are_known_only_for_jobs_that_can_have_them() -> None:
    job = seed_job()  # no GPUs; the trainer scales 1 to 5
    assert known.lost_gpu_causes(job) == ()
    assert known.scales(job)
    gpu = seed_job(trainer(template=GPUS), launcher())
    assert set(known.lost_gpu_causes(gpu)) == {"nodeNotReady", "PodForceDeleted"}  # the trainer's only
    fixed = seed_job(trainer(min_replicas=3, max_replicas=3), launcher())
    assert not known.scales(fixed)
    assert len(known.SCALINGS) == 8


def test_a_job_first_planned_has_its_counters_at_0_and_loses_them_when_deleted() -> None:
    job = dataclasses.replace(seed_job(trainer(template=GPUS), launcher()), namespace="ns-known", name="j")
    metrics.job_planned(job)
    mine = {"namespace": "ns-known", "job_name": "j"}
    restarts = series("aitj_restarts_total", **mine)
    assert {(s["replica"], s["cause"], s["scope"]) for s in restarts} == set(known.restart_labels(job))
    assert len(series("aitj_lost_gpu_seconds_total", **mine)) == 2
    assert len(series("aitj_scaling_operations_total", **mine)) == 8
    assert {s["replica"] for s in series("aitj_pods_created_total", **mine)} == {"trainer", "launcher"}
    assert len(series("aitj_job_recovery_seconds_count", **mine)) == 1
    finished = series("aitj_jobs_finished_total", namespace="ns-known")
    assert {(s["phase"], s["reason"]) for s in finished} == set(known.FINISHED)
    assert {REGISTRY.get_sample_value("aitj_restarts_total", s) for s in restarts} == {0.0}
    assert {REGISTRY.get_sample_value("aitj_jobs_finished_total", s) for s in finished} == {0.0}

    metrics.forget_job("ns-known", "j")
    assert series("aitj_restarts_total", **mine) == []
    assert series("aitj_pods_created_total", **mine) == []
    assert series("aitj_jobs_finished_total", namespace="ns-known") == []  # its namespace's last job


def test_an_edit_adding_a_rule_adds_its_label_sets_and_a_job_made_again_has_them_again() -> None:
    job = dataclasses.replace(seed_job(), namespace="ns-known", name="k")
    mine = {"namespace": "ns-known", "job_name": "k"}
    metrics.job_planned(job)
    assert ("trainer", "exitCode", "Replica") not in {
        (s["replica"], s["cause"], s["scope"]) for s in series("aitj_restarts_total", **mine)
    }
    edited = dataclasses.replace(
        seed_job(trainer(rules=(exit_rule("1", RestartScope.REPLICA),)), launcher(), generation=2),
        namespace="ns-known",
        name="k",
    )
    metrics.job_planned(edited)
    assert ("trainer", "exitCode", "Replica") in {
        (s["replica"], s["cause"], s["scope"]) for s in series("aitj_restarts_total", **mine)
    }
    metrics.forget_job("ns-known", "k")
    assert series("aitj_restarts_total", **mine) == []
    metrics.job_planned(job)  # the same name created again
    assert series("aitj_restarts_total", **mine) != []
    metrics.forget_job("ns-known", "k")


def test_the_operator_s_own_closed_label_sets_exist_at_0_from_the_start() -> None:
    assert {s["stage"] for s in series("aitj_reconcile_errors_total")} == set(metrics.LABEL_VALUES["stage"])
    assert {s["kind"] for s in series("aitj_pods_deleted_total")} == set(metrics.LABEL_VALUES["kind"])
    causes = set(metrics.LABEL_VALUES["cause"]) - {"RestartTimeout"}
    recovered = {(s["cause"], s["scope"]) for s in series("aitj_recovery_seconds_count")}
    assert recovered >= {(c, s) for c in causes for s in metrics.LABEL_VALUES["scope"]}
    assert {s["cause"] for s in series("aitj_fault_detection_seconds_count")} >= causes
