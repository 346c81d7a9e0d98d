"""What the real-node tests ask of pods and of the machine: exec in a container, the
processes a pod still has on the machine, a kubelet stopped and continued."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.clusters import KubeCluster


def has_default_sa(cluster: KubeCluster, namespace: str) -> bool:
    names = [sa.metadata.name for sa in cluster.core.list_namespaced_service_account(namespace).items]
    return "default" in names


def exec_in(
    cluster: KubeCluster, namespace: str, pod: str, *command: str, container: str | None = None
) -> str:
    """exec_in runs ``command`` in the pod's container (kubectl exec, through the apiserver and
    the kubelet) and returns its output; an AssertionError with stderr if it fails."""
    where = ["-c", container] if container else []
    return cluster.kubectl("exec", "-n", namespace, pod, *where, "--", *command).stdout


def pod_processes(uid: str) -> list[int]:
    """pod_processes: the machine's processes in the cgroups of the pod with ``uid`` (its
    containers' processes), found from /proc: what still runs of a pod, whatever the API says."""
    marker = "pod" + uid
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            groups = (proc / "cgroup").read_text()
        except OSError:
            continue
        if marker in groups or marker.replace("-", "_") in groups:
            found.append(int(proc.name))
    return found


def kubelet_pid(cluster: KubeCluster, node: str) -> int:
    assert cluster.local is not None
    pid = cluster.local.pid(f"kubelet/{node}")
    assert pid is not None, f"the kubelet of {node} is not running"
    return pid


def stop_kubelet(cluster: KubeCluster, node: str) -> None:
    """stop_kubelet freezes the node's kubelet (SIGSTOP): it neither heartbeats nor acts on its
    pods, whose containers go on running, as on a node whose kubelet hangs."""
    os.kill(kubelet_pid(cluster, node), signal.SIGSTOP)


def continue_kubelet(cluster: KubeCluster, node: str) -> None:
    os.kill(kubelet_pid(cluster, node), signal.SIGCONT)


def stop_containerd(cluster: KubeCluster, node: str) -> None:
    """stop_containerd ends the node's containerd (SIGTERM to its process group). The
    containers go on running in their shims, which containerd started in groups of their own;
    the kubelet, alive, reports the node NotReady once the runtime has not answered for 30 s
    ("container runtime is down")."""
    assert cluster.local is not None
    cluster.local.stop(f"containerd/{node}")


def start_containerd(cluster: KubeCluster, node: str) -> None:
    """start_containerd starts the node's containerd again, as it was started; it finds its
    shims, and the kubelet its containers."""
    assert cluster.local is not None
    cluster.local.start(f"containerd/{node}")


def cordon(cluster: KubeCluster, node: str, *, on: bool) -> None:
    """cordon marks the node unschedulable (``on``) or schedulable again, as kubectl cordon and
    uncordon do."""
    cluster.core.patch_node(node, {"spec": {"unschedulable": on or None}})


def is_ready(cluster: KubeCluster, node: str) -> bool:
    conditions = cluster.core.read_node(node).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)
