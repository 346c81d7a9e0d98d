"""Simulated nodes: profiles of capacity and labels, and node manifests for kwok.

A node is managed by kwok while it carries the ``MANAGED_LABEL``; removing the label makes it
silent (kwok stops renewing its Lease and stops acting on its pods), which is how a dead node
looks to the control plane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MANAGED_LABEL = "kwok.x-k8s.io/node"
MANAGED_VALUE = "fake"
PROFILE_LABEL = "aitj.dev/node-profile"


@dataclass(frozen=True)
class NodeProfile:
    name: str
    description: str
    capacity: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)


_BASE = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}

PROFILES: dict[str, NodeProfile] = {
    p.name: p
    for p in (
        NodeProfile(
            "gpu",
            "8 NVIDIA GPUs (nvidia.com/gpu), 32 CPUs, 256Gi",
            {**_BASE, "nvidia.com/gpu": "8"},
            {"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB", "nvidia.com/gpu.count": "8"},
        ),
        NodeProfile(
            # What the CCE seed asks for: shared V100 slices (cGPU) with core and memory shares.
            "cce",
            "gpu plus Baidu CCE cGPU resources (baidu.com/v100_32g_cgpu*), so CCE manifests schedule",
            {
                **_BASE,
                "nvidia.com/gpu": "8",
                "baidu.com/v100_32g_cgpu": "8",
                "baidu.com/v100_32g_cgpu_core": "800",
                "baidu.com/v100_32g_cgpu_memory": "256",
            },
            {"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB", "nvidia.com/gpu.count": "8"},
        ),
        NodeProfile("cpu", "CPU only: 32 CPUs, 256Gi", dict(_BASE)),
    )
}
DEFAULT_PROFILE = "gpu"


def profile(name: str) -> NodeProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown node profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None


def node_manifest(name: str, prof: NodeProfile) -> dict[str, Any]:
    """node_manifest is a Node as kwok expects to find it: capacity set, no Ready condition yet."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                MANAGED_LABEL: MANAGED_VALUE,
                PROFILE_LABEL: prof.name,
                **prof.labels,
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        # A kubelet registers its node with this taint; kube-controller-manager lifts it once the
        # node reports Ready. Without it a pod could be bound to a node kwok has not yet marked
        # Ready, and look like a pod on a NotReady node.
        "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
        "status": {"capacity": dict(prof.capacity), "allocatable": dict(prof.capacity)},
    }
