"""The kill fault (issue 28): SIGKILL of a pod's first app container through its node's own
container runtime, as the kernel's OOM killer does it (the container exits with 137), needing
nothing of the workload: no shell, no ``kill`` in the image, no pods/exec.

Only on the local testbed's real nodes (aitj.devcluster.realnodes): each runs a containerd of
its own whose socket the layout knows, and the project's build of containerd includes its
client, ``ctr`` (aitj.devcluster.versions.CONTAINERD_COMPONENT). The container is named by the
id the kubelet reports (``status.containerStatuses[].containerID``, ``containerd://<id>``);
containerd's CRI plugin keeps its containers in the namespace ``k8s.io``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aitj.devcluster.cluster import LocalCluster
from aitj.devcluster.realnodes.layout import MAX_REAL_NODES
from aitj.devcluster.realnodes.lifecycle import nodes_of
from aitj.devcluster.versions import CONTAINERD_COMPONENT

CRI_NAMESPACE = "k8s.io"  # containerd's namespace for the kubelet's containers
KILLED = 137  # 128 + SIGKILL: what the container's exit code will be


class CannotKill(Exception):
    """CannotKill: the pod's container cannot be killed this way (not on a local real node,
    not started, not containerd's)."""


def kill_command(ctr: Path, socket: Path, container_id: str) -> list[str]:
    """kill_command: containerd's own client killing the container's task (its init process)."""
    return [
        str(ctr),
        "--address",
        str(socket),
        "--namespace",
        CRI_NAMESPACE,
        "tasks",
        "kill",
        "--signal",
        "SIGKILL",
        container_id,
    ]


def container_id(pod: Mapping[str, Any]) -> tuple[str, str]:
    """container_id: (name, containerd id) of the pod's first app container, running now.
    The pod as the API returns it (a dict)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = spec.get("containers") or []
    if not containers:
        raise CannotKill("the pod has no containers")
    name = containers[0].get("name", "")
    for s in status.get("containerStatuses") or []:
        if s.get("name") != name:
            continue
        runtime, _, cid = str(s.get("containerID") or "").partition("://")
        if runtime != "containerd" or not cid:
            raise CannotKill(f"container {name} has no containerd id ({s.get('containerID')!r})")
        if (s.get("state") or {}).get("running") is None:
            raise CannotKill(f"container {name} is not running")
        return name, cid
    raise CannotKill(f"container {name} has no status yet")


def real_node_sockets(cluster: LocalCluster | None) -> dict[str, Path]:
    """real_node_sockets: the local real nodes running now, by node name: their containerd's socket."""
    if cluster is None:
        return {}
    return {
        n.name: n.containerd_socket for n in nodes_of(cluster, MAX_REAL_NODES) if n.containerd_socket.exists()
    }


def kill(cluster: LocalCluster | None, pod: Mapping[str, Any], ctr: Path | None = None) -> str:
    """kill: SIGKILL of the pod's first app container on its real node; what was done."""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    sockets = real_node_sockets(cluster)
    if node not in sockets:
        running = ", ".join(sorted(sockets)) or "none"
        raise CannotKill(
            f"pod on node {node or '(none)'}, not a real node of the local testbed "
            f"(real nodes running: {running}): the kill fault needs the node's containerd"
        )
    name, cid = container_id(pod)
    command = kill_command(ctr or CONTAINERD_COMPONENT.binary("ctr"), sockets[node], cid)
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise CannotKill(
            f"ctr tasks kill failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:200]}"
        )
    return f"SIGKILL of container {name} ({cid[:12]}) on {node}"
