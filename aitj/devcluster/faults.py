"""Faults you can cause for real, for tests and the chaos suite.

Each fault is what the control plane would see on a real cluster, produced the way a real
component would produce it: a kubelet reporting NotReady (the node's Ready condition), the Node
Problem Detector reporting a problem (a condition such as KernelDeadlock=True), a node
that goes silent (kwok stops renewing its Lease, so kube-controller-manager marks it Unknown),
a container that terminates with an exit code (reported by kwok, the simulated kubelet), a
force delete, an eviction through the Eviction API, the apiserver stopped and started again.
Only the last needs the local cluster; the others work on any cluster whose nodes kwok runs.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

from kubernetes import client

from aitj.core.wire import format_time
from aitj.devcluster.cluster import LocalCluster
from aitj.devcluster.nodes import MANAGED_LABEL, MANAGED_VALUE

EXIT_CODE_ANNOTATION = "sim.aitj.dev/exit-code"
EXIT_CONTAINER_ANNOTATION = "sim.aitj.dev/exit-container"
NOT_READY_ANNOTATION = "faults.aitj.dev/node-not-ready"  # kwok's heartbeat stage skips such nodes


def _now() -> str:
    return format_time(dt.datetime.now(dt.UTC))


def _set_ready(api: client.ApiClient, node: str, status: str, reason: str, message: str) -> None:
    core = client.CoreV1Api(api)
    resp: Any = core.read_node_status(node, _preload_content=False)
    current: dict[str, Any] = json.loads(resp.data)
    conditions: list[dict[str, Any]] = []
    now = _now()
    for c in current.get("status", {}).get("conditions") or []:
        if c["type"] == "Ready":
            c.update(
                status=status, reason=reason, message=message, lastHeartbeatTime=now, lastTransitionTime=now
            )
        conditions.append(c)
    # A strategic merge on conditions (merge key "type") replaces only the Ready entry.
    core.patch_node_status(node, {"status": {"conditions": conditions}})


def node_not_ready(api: client.ApiClient, node: str) -> None:
    """node_not_ready reports the node NotReady, as a kubelet whose runtime broke would. The
    annotation first stops kwok's status heartbeat for the node, so nothing writes Ready=True
    back over the fault."""
    _annotate_not_ready(api, node, True)
    _set_ready(api, node, "False", "KubeletNotReady", "container runtime is down (aitj fault)")


def node_ready(api: client.ApiClient, node: str) -> None:
    """node_ready reports the node Ready again and hands its heartbeat back to kwok."""
    _set_ready(api, node, "True", "KubeletReady", "kubelet is posting ready status")
    _annotate_not_ready(api, node, False)


def _annotate_not_ready(api: client.ApiClient, node: str, on: bool) -> None:
    value = "true" if on else None
    client.CoreV1Api(api).patch_node(node, {"metadata": {"annotations": {NOT_READY_ANNOTATION: value}}})


def node_problem(api: client.ApiClient, node: str, kind: str, reason: str, message: str) -> None:
    """node_problem reports a problem condition on the node (``kind``=True, e.g. KernelDeadlock),
    as the Node Problem Detector does; the node stays Ready. kwok's heartbeat touches only the
    Ready condition, so this one stays until it is patched again."""
    now = _now()
    condition = {"type": kind, "status": "True", "reason": reason, "message": message}
    condition.update(lastHeartbeatTime=now, lastTransitionTime=now)
    # A strategic merge on conditions (merge key "type") adds or replaces only this entry.
    client.CoreV1Api(api).patch_node_status(node, {"status": {"conditions": [condition]}})


def node_silent(api: client.ApiClient, node: str) -> None:
    """node_silent stops kwok from managing the node: its Lease is no longer renewed and its
    pods no longer change, as when a machine loses power. kube-controller-manager marks it
    Ready=Unknown after its node-monitor-grace-period."""
    client.CoreV1Api(api).patch_node(node, {"metadata": {"labels": {MANAGED_LABEL: None}}})


def node_revive(api: client.ApiClient, node: str) -> None:
    """node_revive hands the node back to kwok and reports it Ready, as a rebooted kubelet would."""
    client.CoreV1Api(api).patch_node(node, {"metadata": {"labels": {MANAGED_LABEL: MANAGED_VALUE}}})
    node_ready(api, node)


def pod_exit(
    api: client.ApiClient, namespace: str, pod: str, code: int, container: str | None = None
) -> None:
    """pod_exit makes the pod's container (default: the first) terminate with exit code ``code``;
    kwok reports it as a kubelet would (phase Failed, or Succeeded for 0)."""
    annotations = {EXIT_CODE_ANNOTATION: str(code)}
    if container:
        annotations[EXIT_CONTAINER_ANNOTATION] = container
    client.CoreV1Api(api).patch_namespaced_pod(pod, namespace, {"metadata": {"annotations": annotations}})


def force_delete(api: client.ApiClient, namespace: str, pod: str) -> None:
    """force_delete deletes the pod with grace period 0 (``kubectl delete --force --grace-period=0``)."""
    client.CoreV1Api(api).delete_namespaced_pod(
        pod, namespace, body=client.V1DeleteOptions(grace_period_seconds=0)
    )


def evict(api: client.ApiClient, namespace: str, pod: str) -> None:
    """evict asks the Eviction API to evict the pod (as kubectl drain does)."""
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=namespace))
    client.CoreV1Api(api).create_namespaced_pod_eviction(pod, namespace, body)


def restart_apiserver(cluster: LocalCluster, down_seconds: float = 0.0) -> None:
    """restart_apiserver stops the local apiserver, waits, and starts it again (until ready)."""
    cluster.stop("kube-apiserver")
    if down_seconds:
        time.sleep(down_seconds)
    cluster.start("kube-apiserver")
