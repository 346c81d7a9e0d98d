"""The figures behind the metrics, computed purely (aitj.core.telemetry): a job's gauges, a
restart followed to its replacements Running, the scale operations a status finished, and the
GPU count of a pod template. Restarts are made by the real planner on the test double."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

import pytest

from aitj.core.api import JobStatus, Phase, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.types import Plan
from aitj.core.render import gpus
from aitj.core.telemetry import (
    ReplicaCount,
    Scaled,
    ScaleDirection,
    ScaleResult,
    desired_replicas,
    finished_scalings,
    job_gauges,
    recovery_time,
)
from tests.seeds import seed_job as seed_body
from tests.unit.builders import (
    UID,
    Cluster,
    Pod,
    at,
    event_rule,
    launcher,
    name_of,
    running_seed,
    seed_job,
    trainer,
)

GPU = {"spec": {"containers": [{"name": "aitj-0", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}


def test_gpus_counts_nvidia_and_cce_cards_of_a_template() -> None:
    seed = seed_body()["spec"]["replicaSpecs"]
    assert gpus(seed["trainer"]["template"]) == 1  # one baidu.com/v100_32g_cgpu card
    assert gpus(seed["launcher"]["template"]) == 0
    assert gpus(GPU) == 2


# ---- gauges ---------------------------------------------------------------------------------


def body(phase: str | None = "Running", **status: Any) -> dict[str, Any]:
    """body: the seed's manifest with a status of ``phase`` (none when None) and ``status``."""
    doc = seed_body()
    doc["metadata"]["uid"] = UID  # the uid the builders' pods name as their controller
    doc["status"] = {"phase": phase, **status} if phase else {}
    return doc


def bare(replica: str, index: int, generation: int = 0, *, controlled: bool = False) -> Pod:
    """bare: a pod labelled as the job's that the job did not make: no ownerReference (or, when
    ``controlled``, one naming the job) and a name the operator would not give it."""
    pod = Pod(replica, index, generation)
    if not controlled:
        del pod.raw["metadata"]["ownerReferences"]
    pod.raw["metadata"]["name"] = f"intruder-{replica}-{index}"
    return pod


@pytest.mark.parametrize(
    ("pods", "trainers"),
    [
        pytest.param([], ReplicaCount("trainer", 3, 0, 0, 3), id="no pods: every index vacant"),
        pytest.param(
            [Pod("trainer", 0).running(), Pod("trainer", 1), Pod("trainer", 2).running()],
            ReplicaCount("trainer", 3, 2, 1, 0),
            id="two running, one pending",
        ),
        pytest.param(
            [Pod("trainer", 0).running().deleted(), Pod("trainer", 0, 1), Pod("trainer", 1).running()],
            ReplicaCount("trainer", 3, 1, 1, 1),
            id="an index is judged by its newest pod; the old one on its way out does not count",
        ),
        pytest.param(
            [Pod("trainer", 0).running().deleted()],
            ReplicaCount("trainer", 3, 0, 1, 2),
            id="a pod being deleted with no successor yet is pending",
        ),
        pytest.param(
            [Pod("trainer", i).exited(0) for i in range(3)],
            ReplicaCount("trainer", 3, 0, 0, 0),
            id="finished pods are neither running, pending nor vacant",
        ),
        pytest.param(
            [Pod("trainer", 0), bare("trainer", 0, generation=7).running(), bare("trainer", 1).running()],
            ReplicaCount("trainer", 3, 0, 1, 2),
            id="a bare pod carrying the job's labels counts for nothing, even of a later generation",
        ),
        pytest.param(
            [Pod("trainer", 0).running(), bare("trainer", 1, controlled=True).running()],
            ReplicaCount("trainer", 3, 1, 0, 2),
            id="a pod whose name is not the one derived from its labels is not the job's",
        ),
    ],
)
def test_job_gauges_count_each_index_by_its_newest_pod(pods: list[Pod], trainers: ReplicaCount) -> None:
    g = job_gauges(body(), [p.view() for p in pods])
    assert g.phase is Phase.RUNNING
    assert dict((r.replica, r) for r in g.replicas)["trainer"] == trainers


def test_a_finished_job_has_nothing_vacant_and_a_job_without_status_is_pending() -> None:
    assert [r.vacant for r in job_gauges(body("Succeeded"), []).replicas] == [0, 0]
    assert [r.vacant for r in job_gauges(body("Suspended"), []).replicas] == [0, 0]  # wants none either
    assert job_gauges(body(None), []).phase is Phase.PENDING
    assert job_gauges(body("Nonsense"), []).phase is Phase.PENDING


@pytest.mark.parametrize(
    ("phase", "degraded", "short"),
    [
        pytest.param("Running", None, 0, id="not degraded: 0"),
        pytest.param("Restarting", {"count": 2, "reason": "trainer[1,2] Unschedulable"}, 2, id="two short"),
        pytest.param("Failed", {"count": 2}, 0, id="a finished job runs short of nothing"),
        pytest.param("Running", {"count": "x"}, 0, id="unreadable: 0"),
    ],
)
def test_the_indices_short_are_the_degraded_states_count(
    phase: str, degraded: dict[str, Any] | None, short: int
) -> None:
    doc = body(phase) if degraded is None else body(phase, degraded=degraded)
    assert job_gauges(doc, []).degraded == short


@pytest.mark.parametrize(
    ("limits", "counts", "ratios"),
    [
        pytest.param({"trainer": 100, "launcher": 100}, {}, {"trainer": 0.0, "launcher": 0.0}, id="unused"),
        pytest.param({"trainer": 4}, {"trainer": 3}, {"trainer": 0.75}, id="three of four used"),
        pytest.param({"trainer": 0}, {}, {"trainer": 1.0}, id="a limit of 0 is used up from the start"),
        pytest.param({}, {"trainer": 7}, {}, id="no limit: no budget"),
    ],
)
def test_restart_budgets_are_restart_count_over_restart_limit(
    limits: dict[str, int], counts: dict[str, int], ratios: dict[str, float]
) -> None:
    doc = body(RestartCount=counts)
    for name, spec in doc["spec"]["replicaSpecs"].items():
        spec.pop("restartLimit", None)
        if name in limits:
            spec["restartLimit"] = limits[name]
    assert dict(job_gauges(doc, []).budgets) == ratios


def test_desired_replicas_defaults_to_one() -> None:
    doc = seed_body()
    del doc["spec"]["replicaSpecs"]["launcher"]["replicas"]
    assert desired_replicas(doc) == {"launcher": 1, "trainer": 3}


# ---- recovery -------------------------------------------------------------------------------


def running_cluster(scope: RestartScope = RestartScope.POD) -> Cluster:
    """running_cluster: the seed (trainers with 2 GPUs each) all Running, status written."""
    rule = event_rule("nodeNotReady,PodForceDeleted", scope)
    job = seed_job(trainer(rules=(rule,), template=GPU), launcher())
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    return cluster


def restart(cluster: Cluster, index: int = 0, at_s: float = 100) -> Plan:
    """restart: trainer ``index`` force-deleted at ``at_s``; the pass a second later decides."""
    cluster.pods[name_of("trainer", index)].deleted(at_s, grace=0)
    plan = cluster.step(at_s + 1)
    assert len(plan.restarts) == 1
    return plan


def ledger(cluster: Cluster) -> Ledger:
    """ledger: the restart ledger of the double's status."""
    return Ledger.from_json(cluster.status.get("restartLedger"))


def views(cluster: Cluster) -> list[Any]:
    """views: the double's pods, as the operator's cache holds them."""
    return [p.view() for p in cluster.pods.values()]


DESIRED = {"trainer": 3, "launcher": 1}


def test_a_pod_restart_recovers_when_its_replacement_runs_and_costs_its_gpus_from_the_fault() -> None:
    cluster = running_cluster()
    plan = restart(cluster)
    r = recovery_time.begin(plan.restarts[0], cluster.job, ledger(cluster), created=at(101.5))
    assert r.detection_seconds() == 1.5  # the delete at 100 to the create at 101.5
    pending = recovery_time.advance(r, views(cluster), at(102))
    assert not recovery_time.finished(pending, DESIRED)
    cluster.run_all(103)
    done = recovery_time.advance(pending, views(cluster), at(104))
    assert recovery_time.finished(done, DESIRED)
    assert done.recovery_seconds() == 3  # decided at 101, seen Running at 104
    assert done.lost_gpu_seconds() == 2 * 4  # 2 GPUs, from the delete at 100 to 104
    # seen once: later passes change nothing
    assert recovery_time.advance(done, views(cluster), at(200)) == done


def test_a_recovery_looks_only_at_the_pods_it_waits_on() -> None:
    cluster = running_cluster()
    pod = recovery_time.begin(restart(cluster, index=1).restarts[0], cluster.job, ledger(cluster))
    cluster.run_all(103)
    looked = recovery_time.awaited_pods([pod], views(cluster))
    assert [(p.replica, p.index, p.generation) for p in looked] == [("trainer", 1, 1)]  # the replacement
    # what it decides from them is what it decides from every pod
    assert recovery_time.advance(pod, looked, at(104)) == recovery_time.advance(pod, views(cluster), at(104))
    whole = running_cluster(RestartScope.REPLICA)
    replica = recovery_time.begin(restart(whole).restarts[0], whole.job, ledger(whole))
    assert {p.replica for p in recovery_time.awaited_pods([replica], views(whole))} == {"trainer"}
    assert recovery_time.awaited_pods([], views(cluster)) == []
    # looked up by slot (the cache's index): the same pods; a wider restart still searches them all
    asked: list[set[tuple[str, int]]] = []

    def lookup(slots: Collection[tuple[str, int]]) -> list[PodView]:
        asked.append(set(slots))
        return [p for p in views(cluster) if (p.replica, p.index) in slots]

    assert recovery_time.awaited_pods([pod], views(cluster), lookup) == looked
    assert asked == [{("trainer", 1)}]
    wide = recovery_time.awaited_pods([replica], views(whole), lookup)
    assert wide == recovery_time.awaited_pods([replica], views(whole)) and len(asked) == 1


def test_a_pod_restart_needs_no_ledger_and_a_wider_one_is_refused_without_it() -> None:
    cluster = running_cluster()
    record = restart(cluster).restarts[0]
    assert recovery_time.begin(record, cluster.job, None) == recovery_time.begin(
        record, cluster.job, ledger(cluster)
    )
    whole = running_cluster(RestartScope.REPLICA)
    with pytest.raises(ValueError, match="ledger"):
        recovery_time.begin(restart(whole).restarts[0], whole.job, None)


def test_a_replica_restart_recovers_when_every_trainer_runs_with_the_new_epoch() -> None:
    cluster = running_cluster(RestartScope.REPLICA)
    plan = restart(cluster, index=1)
    r = recovery_time.begin(plan.restarts[0], cluster.job, ledger(cluster))
    assert [(a.replica, a.index, a.epoch) for a in r.awaited] == [("trainer", None, 1)]
    cluster.terminate_deleted()
    cluster.step(102)
    cluster.pods[name_of("trainer", 0, 1)].running(103)
    half = recovery_time.advance(r, views(cluster), at(103))
    assert not recovery_time.finished(half, DESIRED)
    cluster.run_all(105)
    done = recovery_time.advance(half, views(cluster), at(106))
    assert recovery_time.finished(done, DESIRED)
    assert done.lost_gpu_seconds() == 2 * (3 + 6 + 6)  # trainer 0 back at 103, the others at 106
    assert done.created is not None  # the operator did not see the create: the pod's own time


def test_an_all_restart_waits_for_the_launcher_too() -> None:
    cluster = running_cluster(RestartScope.ALL)
    plan = restart(cluster)
    r = recovery_time.begin(plan.restarts[0], cluster.job, ledger(cluster))
    assert sorted(a.replica for a in r.awaited) == ["launcher", "trainer"]
    cluster.terminate_deleted()
    cluster.step(102)
    cluster.run_all(103)
    trainers_only = recovery_time.advance(
        r, [p.view() for p in cluster.pods.values() if "trainer" in p.name], at(103)
    )
    assert not recovery_time.finished(trainers_only, DESIRED)
    cluster.step(104)
    cluster.run_all(104)
    assert recovery_time.finished(recovery_time.advance(trainers_only, views(cluster), at(105)), DESIRED)


def test_a_fault_without_a_time_is_not_a_detection_and_costs_from_the_decision() -> None:
    cluster = running_cluster()
    plan = restart(cluster)
    record = plan.restarts[0]
    timeless = replace(record, failure=replace(record.failure, at=None))
    r = recovery_time.begin(timeless, cluster.job, ledger(cluster), created=at(101))
    assert r.detection_seconds() is None
    cluster.run_all(102)
    assert recovery_time.advance(r, views(cluster), at(103)).lost_gpu_seconds() == 2 * 2  # 101 to 103


# ---- scaling --------------------------------------------------------------------------------


def entry(operation: str, reason: str, source: int, target: int, version: int = 1) -> dict[str, Any]:
    """entry: a status.scaleHistory entry."""
    return {"operation": operation, "reason": reason, "from": source, "to": target, "replica": "trainer",
            "version": version, "time": "2026-11-22T17:00:00Z"}  # fmt: skip


@pytest.mark.parametrize(
    ("added", "scaled"),
    [
        pytest.param(
            entry("scaleout", "ScaleSucceeded", 3, 4),
            Scaled("trainer", ScaleDirection.OUT, ScaleResult.SUCCEEDED),
        ),
        pytest.param(
            entry("scalein", "ScaleSucceeded", 4, 3),
            Scaled("trainer", ScaleDirection.IN, ScaleResult.SUCCEEDED),
        ),
        pytest.param(
            entry("rollback", "ScaleTimeout", 3, 5),
            Scaled("trainer", ScaleDirection.OUT, ScaleResult.ROLLED_BACK),
        ),
        pytest.param(
            entry("rollback", "ScaleFailed", 3, 5), Scaled("trainer", ScaleDirection.OUT, ScaleResult.FAILED)
        ),
        pytest.param(
            entry("rollback", "ScaleCancelled", 4, 2),
            Scaled("trainer", ScaleDirection.IN, ScaleResult.CANCELLED),
        ),
    ],
)
def test_each_scale_history_entry_a_status_adds_is_one_finished_operation(
    added: dict[str, Any], scaled: Scaled
) -> None:
    old = entry("scaleout", "ScaleSucceeded", 2, 3, version=0)
    assert finished_scalings(history([old]), history([old, added])) == (scaled,)


def test_a_status_that_adds_no_entry_finishes_nothing_even_when_the_history_is_trimmed() -> None:
    entries = [entry("scaleout", "ScaleSucceeded", i, i + 1, version=i) for i in range(3)]
    assert finished_scalings(history(entries), history(entries)) == ()
    assert finished_scalings(history(entries), history(entries[1:])) == ()
    assert finished_scalings(None, history([{"reason": "?"}])) == ()


def history(entries: list[dict[str, Any]]) -> JobStatus:
    """history: a status (as the API server stores it) with ``entries`` as its scaleHistory."""
    return JobStatus.from_json({"scaleHistory": entries})
