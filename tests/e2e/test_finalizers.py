"""The operator never holds a pod (issue 11), on the real control plane: in each case where a
pod carrying the tracking finalizer is on its way out and no longer needed, the pod object is
gone within seconds (kwok removes a deleted pod at once; only a finalizer keeps it)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from aitj.core import api
from aitj.core.observed import TRACKING_FINALIZER
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.jobs import (
    Doc,
    create_job,
    delete_job,
    get_job,
    job_pods,
    patch_job,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "fin-job"
SECONDS = 5  # "within seconds": a pass takes milliseconds; this only bounds a hang


def start(cluster: KubeCluster, namespace: str, **changes: Callable[[Doc], None]) -> dict[int, str]:
    """start: the seed job with ``changes``, Running; its trainers by index."""
    create_job(cluster, namespace, seed_variant(NAME, **changes))
    wait_phase(cluster, namespace, NAME, "Running")
    return {int(p.metadata.labels[api.LABEL_INDEX]): p.metadata.name for p in trainers(cluster, namespace)}


def trainers(cluster: KubeCluster, namespace: str) -> list[Any]:
    return job_pods(cluster, namespace, NAME, "trainer")


def pod(cluster: KubeCluster, namespace: str, name: str) -> Any:
    found = [p for p in job_pods(cluster, namespace, NAME) if p.metadata.name == name]
    return found[0] if found else None


def gone(cluster: KubeCluster, namespace: str, *names: str, timeout: float = SECONDS) -> None:
    """gone: each of ``names`` is no longer a pod object within ``timeout`` seconds."""
    wait_for(
        lambda: not {p.metadata.name for p in job_pods(cluster, namespace, NAME)} & set(names),
        timeout,
        f"pods {names} gone",
    )


def released(cluster: KubeCluster, namespace: str, name: str) -> None:
    wait_for(
        lambda: (
            (p := pod(cluster, namespace, name)) is not None
            and TRACKING_FINALIZER not in (p.metadata.finalizers or [])
        ),
        SECONDS,
        f"pod {name} released",
    )


def message(cluster: KubeCluster, namespace: str) -> str:
    status = get_job(cluster, namespace, NAME).get("status") or {}
    return str(status["conditions"][-1]["message"])


def test_a_trainer_deleted_after_its_restart_limit_is_used_up_is_gone_and_its_index_vacant(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace, limit=set_path("spec.replicaSpecs.trainer.restartLimit", 0))
    cluster.core.delete_namespaced_pod(before[0], namespace)
    gone(cluster, namespace, before[0])
    wait_for(lambda: "vacant" in message(cluster, namespace), SECONDS, "the status naming the vacant index")
    assert "index [0] of replica trainer" in message(cluster, namespace)
    assert message(cluster, namespace) != "all pods are running"
    job = get_job(cluster, namespace, NAME)
    assert job["status"]["RestartCount"]["trainer"] == 0 and job["status"]["phase"] == "Running"
    assert {p.metadata.name for p in trainers(cluster, namespace)} == {before[1], before[2]}


def test_a_failure_no_rule_restarts_lets_the_pod_go_and_a_later_delete_is_done_at_once(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace)
    faults.pod_exit(cluster.api, namespace, before[0], 1)  # the seed's trainer rules name no exit code
    released(cluster, namespace, before[0])
    cluster.core.delete_namespaced_pod(before[0], namespace)
    gone(cluster, namespace, before[0])
    assert len(trainers(cluster, namespace)) == 2


def test_a_node_pressure_eviction_on_a_schedulable_node_stands_and_the_pod_is_gone(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace)
    # What the kubelet writes when it evicts for node pressure: phase Failed, reason Evicted,
    # a DisruptionTarget condition. The seed's trainer rules do not name PodEvicted.
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "TerminationByKubelet",
        "message": "The node was low on resource: memory.",
    }
    cluster.core.patch_namespaced_pod_status(
        before[0],
        namespace,
        {"status": {"phase": "Failed", "reason": "Evicted", "conditions": [condition]}},
    )
    released(cluster, namespace, before[0])
    # The pod garbage collector (or anyone) deletes it; nothing holds it and nothing replaces it.
    cluster.core.delete_namespaced_pod(before[0], namespace)
    gone(cluster, namespace, before[0])
    wait_for(lambda: "vacant" in message(cluster, namespace), SECONDS, "the index vacant")
    status = get_job(cluster, namespace, NAME)["status"]
    assert status["RestartCount"]["trainer"] == 0 and status["replicaStatuses"]["trainer"]["failed"] == 1


def test_a_scaled_in_trainer_is_gone(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace, grace=set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 0))
    patch_job(cluster, namespace, NAME, {"spec": {"replicaSpecs": {"trainer": {"replicas": 2}}}})
    gone(cluster, namespace, before[2], timeout=30)


@pytest.mark.parametrize("policy", ["All", "None"])
def test_the_pods_of_a_finished_job_are_gone_once_cleaned_or_deleted(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, policy: str
) -> None:
    before = start(cluster, namespace, clean=set_path("spec.cleanPodPolicy", policy))
    launcher = job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name
    faults.pod_exit(cluster.api, namespace, launcher, 0)
    wait_phase(cluster, namespace, NAME, "Succeeded")
    if policy == "None":
        cluster.core.delete_namespaced_pod(before[1], namespace)
        gone(cluster, namespace, before[1])
    else:
        gone(cluster, namespace, *before.values(), launcher)


def test_the_pods_of_a_deleted_job_are_gone(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace)
    names = [p.metadata.name for p in job_pods(cluster, namespace, NAME)]
    delete_job(cluster, namespace, NAME)
    # Garbage collection deletes them (background propagation); the operator lets them go.
    gone(cluster, namespace, *names, timeout=30)


def test_the_pods_of_a_namespace_being_deleted_are_gone(
    cluster: KubeCluster, live_operator: OperatorProcess
) -> None:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    wait_for(
        lambda: (
            "default"
            in [sa.metadata.name for sa in cluster.core.list_namespaced_service_account(namespace).items]
        ),
        30,
        "the default service account",
    )
    start(cluster, namespace)
    names = [p.metadata.name for p in job_pods(cluster, namespace, NAME)]
    cluster.core.delete_namespace(namespace)
    gone(cluster, namespace, *names, timeout=30)
    wait_for(
        lambda: namespace not in [n.metadata.name for n in cluster.core.list_namespace().items],
        60,
        "the namespace gone",
    )
