"""The local control plane is real: kube-scheduler places pods on kwok nodes, and each fault
produces what a real cluster shows."""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.devcluster import faults
from aitj.devcluster.nodes import node_manifest, profile
from aitj.devcluster.versions import KUBERNETES
from tests.clusters import KubeCluster
from tests.seeds import seed_job
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def pod(name: str, *, gpus: int = 0, scheduler: str | None = None, node: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def phase(cluster: KubeCluster, ns: str, name: str) -> str:
    return str(cluster.core.read_namespaced_pod(name, ns).status.phase)


def running(cluster: KubeCluster, ns: str, name: str) -> bool:
    return phase(cluster, ns, name) == "Running"


def node_ready(cluster: KubeCluster, node: str) -> str:
    for cond in cluster.core.read_node(node).status.conditions or []:
        if cond.type == "Ready":
            return str(cond.status)
    return "None"


@pytest.fixture
def spare_node(cluster: KubeCluster) -> Iterator[str]:
    """spare_node is a node of its own for a test that breaks it; deleted afterwards."""
    name = f"spare-{uuid.uuid4().hex[:6]}"
    cluster.core.create_node(node_manifest(name, profile("cce")))
    wait_for(lambda: node_ready(cluster, name) == "True", 30, f"node {name} Ready")
    yield name
    cluster.core.delete_node(name)


def test_a_pod_asking_for_one_gpu_is_scheduled_onto_a_kwok_node_and_runs(
    cluster: KubeCluster, namespace: str
) -> None:
    cluster.core.create_namespaced_pod(namespace, pod("one-gpu", gpus=1))
    wait_for(lambda: running(cluster, namespace, "one-gpu"), 30, "the pod Running")
    got = cluster.core.read_namespaced_pod("one-gpu", namespace)
    assert got.spec.node_name.startswith("kwok-node-")
    node = cluster.core.read_node(got.spec.node_name)
    assert node.metadata.labels["type"] == "kwok"


def test_a_pod_asking_for_more_gpus_than_any_node_has_stays_pending(
    cluster: KubeCluster, namespace: str
) -> None:
    cluster.core.create_namespaced_pod(namespace, pod("too-big", gpus=64))

    def failed_scheduling() -> list[Any]:
        events = cluster.core.list_namespaced_event(namespace, field_selector="involvedObject.name=too-big")
        return [e for e in events.items if e.reason == "FailedScheduling"]

    events = wait_for(failed_scheduling, 30, "a FailedScheduling event")
    assert "nvidia.com/gpu" in events[0].message
    assert phase(cluster, namespace, "too-big") == "Pending"
    assert cluster.core.read_namespaced_pod("too-big", namespace).spec.node_name is None


def test_the_seed_trainer_template_is_scheduled_by_the_volcano_profile(
    cluster: KubeCluster, namespace: str
) -> None:
    seed = seed_job()
    template = copy.deepcopy(seed["spec"]["replicaSpecs"]["trainer"]["template"])
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "seed-trainer"}, "spec": template["spec"]}
    assert body["spec"]["schedulerName"] == "volcano"
    cluster.core.create_namespaced_pod(namespace, body)
    wait_for(lambda: running(cluster, namespace, "seed-trainer"), 30, "the seed's trainer pod Running")
    got = cluster.core.read_namespaced_pod("seed-trainer", namespace)
    assert got.spec.scheduler_name == "volcano"
    assert got.spec.containers[0].resources.requests["baidu.com/v100_32g_cgpu"] == "1"


def test_node_not_ready_shows_ready_false(cluster: KubeCluster, spare_node: str) -> None:
    faults.node_not_ready(cluster.api, spare_node)
    assert node_ready(cluster, spare_node) == "False"
    # It stays so: longer than a few of kwok's heartbeats (one every 4-5 s at lease 8 s).
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline:
        assert node_ready(cluster, spare_node) == "False"
        time.sleep(0.5)
    # kube-controller-manager's node lifecycle controller taints it as it would a real node.
    wait_for(
        lambda: any(
            t.key == "node.kubernetes.io/not-ready"
            for t in cluster.core.read_node(spare_node).spec.taints or []
        ),
        30,
        "the not-ready taint",
    )
    faults.node_ready(cluster.api, spare_node)
    assert node_ready(cluster, spare_node) == "True"


def test_a_silent_node_becomes_unknown_after_the_grace_period(cluster: KubeCluster, spare_node: str) -> None:
    faults.node_silent(cluster.api, spare_node)
    assert node_ready(cluster, spare_node) == "True"
    wait_for(
        lambda: node_ready(cluster, spare_node) == "Unknown", 90, "Ready=Unknown from kube-controller-manager"
    )
    # The node lifecycle controller taints the node in a pass of its own after it marks the
    # condition Unknown: the taint follows within its monitor period, not in the same write.
    wait_for(
        lambda: (
            "node.kubernetes.io/unreachable"
            in {t.key for t in cluster.core.read_node(spare_node).spec.taints or []}
        ),
        30,
        "the unreachable taint from kube-controller-manager",
    )
    faults.node_revive(cluster.api, spare_node)
    wait_for(lambda: node_ready(cluster, spare_node) == "True", 30, "the node Ready again")


@pytest.mark.parametrize("code", [1, 137, 255])
def test_a_container_exit_code_shows_as_phase_failed_with_that_code(
    cluster: KubeCluster, namespace: str, code: int
) -> None:
    cluster.core.create_namespaced_pod(namespace, pod("exits"))
    wait_for(lambda: running(cluster, namespace, "exits"), 30, "the pod Running")
    faults.pod_exit(cluster.api, namespace, "exits", code)
    wait_for(lambda: phase(cluster, namespace, "exits") == "Failed", 30, "phase Failed")
    state = cluster.core.read_namespaced_pod("exits", namespace).status.container_statuses[0].state
    assert state.terminated.exit_code == code


def test_exit_code_zero_shows_as_phase_succeeded(cluster: KubeCluster, namespace: str) -> None:
    cluster.core.create_namespaced_pod(namespace, pod("done"))
    wait_for(lambda: running(cluster, namespace, "done"), 30, "the pod Running")
    faults.pod_exit(cluster.api, namespace, "done", 0)
    wait_for(lambda: phase(cluster, namespace, "done") == "Succeeded", 30, "phase Succeeded")


def test_force_delete_removes_the_pod_at_once(cluster: KubeCluster, namespace: str) -> None:
    cluster.core.create_namespaced_pod(namespace, pod("doomed"))
    wait_for(lambda: running(cluster, namespace, "doomed"), 30, "the pod Running")
    faults.force_delete(cluster.api, namespace, "doomed")
    with pytest.raises(ApiException) as gone:
        cluster.core.read_namespaced_pod("doomed", namespace)
    assert gone.value.status == 404


def test_eviction_sets_the_disruption_target_condition(cluster: KubeCluster, namespace: str) -> None:
    body = pod("evicted")
    # A finalizer keeps the evicted pod readable, as an operator's tracking finalizer would.
    body["metadata"]["finalizers"] = ["test.aitj.dev/hold"]
    cluster.core.create_namespaced_pod(namespace, body)
    wait_for(lambda: running(cluster, namespace, "evicted"), 30, "the pod Running")
    faults.evict(cluster.api, namespace, "evicted")
    got = cluster.core.read_namespaced_pod("evicted", namespace)
    assert got.metadata.deletion_timestamp is not None
    conditions = {c.type: c for c in got.status.conditions or []}
    assert conditions["DisruptionTarget"].status == "True"
    assert conditions["DisruptionTarget"].reason == "EvictionByEvictionAPI"
    cluster.core.patch_namespaced_pod("evicted", namespace, {"metadata": {"finalizers": None}})


def test_clients_reconnect_after_the_apiserver_restarts(cluster: KubeCluster, namespace: str) -> None:
    if cluster.local is None:
        pytest.skip("restarting the apiserver needs the local control plane")
    api = cluster.new_api()  # made before the restart, used after it
    core: Any = client.CoreV1Api(api)  # plain dicts in, as everywhere in aitj
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "before"}})
    faults.restart_apiserver(cluster.local, down_seconds=1)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "after"}})
    names = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}
    assert {"before", "after"} <= names
    # The simulated kubelets keep their nodes Ready through it, as real ones would.
    nodes = [n.metadata.name for n in core.list_node().items]
    time.sleep(5)
    wait_for(
        lambda: all(node_ready(cluster, n) == "True" for n in nodes), 30, "every node Ready after the restart"
    )


def test_the_cluster_runs_the_release_the_session_asked_for(cluster: KubeCluster) -> None:
    # $AITJ_KUBERNETES picks it (make test-matrix); the newest when unset.
    if cluster.local is None:
        pytest.skip("an existing cluster runs whatever it runs")
    info = client.VersionApi(cluster.api).get_code()
    assert info.git_version == KUBERNETES
    assert cluster.local.recorded()["kubernetes"] == KUBERNETES
