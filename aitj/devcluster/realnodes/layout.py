"""Names, addresses, ports and paths of the real nodes: pure, from the cluster's own.

Only one cluster on a machine may have real nodes at a time: the nodes share the machine's
network namespace, where kube-proxy's rules for the Service range and the bridges' addresses
are the machine's, not a cluster's. ``host.claim`` enforces it.

Addresses (none of them routed off the machine; ``host`` guards the uplink):
- pods of real node N: ``10.250.N.0/24`` on the bridge ``aitjbrN``, whose address ``10.250.N.1``
  is the node's InternalIP (a kubelet refuses a loopback node IP, and the apiserver must reach
  it for logs and exec);
- Services: the apiserver's ``10.96.0.0/16``, routed to the first bridge so that a connection to
  a ClusterIP never follows the default route, even before kube-proxy has written its rules;
- cluster DNS: the Service ``kube-dns`` at ``10.96.0.10``, served by CoreDNS on the first
  bridge's address; the apiserver, for pods, through a relay on the same address.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

POD_RANGE = "10.250.0.0/16"
SERVICE_RANGE = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
DNS_SERVICE_IP = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"
MAX_REAL_NODES = 3

# What keeps other pods off real nodes, and what a namespace's pods are given to land there
# (docs/real-nodes.md: the PodNodeSelector and PodTolerationRestriction admission plugins
# read them from the namespace's annotations, so a manifest applies unchanged).
REAL_NODE_LABEL = "aitj.dev/real-node"
REAL_NODE_TAINT = {"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}
NAMESPACE_NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
NAMESPACE_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"


def namespace_annotations() -> dict[str, str]:
    """namespace_annotations: what puts a namespace's pods on the real nodes."""
    toleration = {"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
    return {
        NAMESPACE_NODE_SELECTOR: f"{REAL_NODE_LABEL}=true",
        NAMESPACE_TOLERATIONS: json.dumps([toleration]),
    }


# Ports on the nodes' bridge addresses (each node has its own address, so the same port).
KUBELET_PORT = 10250
KUBELET_HEALTHZ_PORT = 10248
DNS_PORT = 53
DNS_HEALTH_PORT = 8080
DNS_READY_PORT = 8181
KUBE_PROXY_HEALTHZ_PORT = 10256
KUBE_PROXY_METRICS_PORT = 10249


@dataclass(frozen=True)
class RealNode:
    """RealNode: one real node's name, network and files."""

    index: int
    cluster_state: Path
    run_dir: Path
    cache: Path

    @property
    def name(self) -> str:
        return f"real-node-{self.index}"

    @property
    def bridge(self) -> str:
        return f"aitjbr{self.index}"

    @property
    def bridge_mac(self) -> str:
        """bridge_mac: the bridge's own hardware address, set once (locally administered, from
        the node's index). A Linux bridge with none set takes the lowest of its ports': each pod
        whose veth leaves may change it, and every pod of the node then sends its routed
        traffic (to the other nodes, to Services) to an address the bridge no longer answers
        to, dropped until the pod's neighbour entry for the gateway is probed again, 5 to 50 s
        on (docs/real-nodes.md, "What real nodes taught us")."""
        return f"02:0a:fa:{self.index // 256:02x}:{self.index % 256:02x}:01"

    @property
    def subnet(self) -> str:
        return f"10.250.{self.index}.0/24"

    @property
    def ip(self) -> str:
        """ip: the node's InternalIP, the bridge's address and the pods' gateway."""
        return f"10.250.{self.index}.1"

    @property
    def dir(self) -> Path:
        """dir: the node's configuration and kubelet files, in the cluster's state folder."""
        return self.cluster_state / "nodes" / self.name

    @property
    def kubelet_root(self) -> Path:
        return self.dir / "kubelet"

    @property
    def containerd_root(self) -> Path:
        """containerd_root: images and snapshots, kept across clusters in the cache, so a new
        cluster's pods start without pulling their images again."""
        return self.cache / "nodes" / self.name / "containerd"

    @property
    def containerd_state(self) -> Path:
        """containerd_state: sockets, tasks, network namespaces: under /run, short paths (a
        unix socket's path has at most 107 bytes), gone with the node."""
        return self.run_dir / self.name

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_state / "containerd.sock"

    @property
    def cgroup_root(self) -> str:
        """cgroup_root: the kubelet's own cgroup subtree. Kubelets kill what runs in pod cgroups
        they do not know, so two nodes must never share one."""
        return f"/aitj/{self.name}"

    @property
    def pod_logs(self) -> Path:
        return self.dir / "pod-logs"


def real_nodes(count: int, cluster_state: Path, run_dir: Path, cache: Path) -> list[RealNode]:
    """real_nodes: the first ``count`` real nodes; a ValueError past MAX_REAL_NODES."""
    if not 0 <= count <= MAX_REAL_NODES:
        raise ValueError(f"--real-nodes must be between 0 and {MAX_REAL_NODES}, not {count}")
    return [RealNode(i, cluster_state, run_dir, cache) for i in range(count)]
