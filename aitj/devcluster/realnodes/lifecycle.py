"""Bringing real nodes up beside the control plane, and down again.

``prepare`` runs before anything starts (it may take minutes the first time: Debian packages,
the node programs' builds, the images). ``up`` runs once the control plane is healthy: the
machine's guards and bridges, the registry with the images pushed, every node's containerd
and kubelet, kube-proxy, CoreDNS and the apiserver relay, then the API objects they need; it
returns when every real node is Ready and DNS answers. ``down`` undoes what ``up`` did to the
machine once the processes are stopped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from aitj.devcluster import debs
from aitj.devcluster.apiclient import AdminClient, http_ok, node_ready, tainted_not_ready
from aitj.devcluster.build import BuildError, ensure_built
from aitj.devcluster.config import ClusterConfig, ClusterError, Ports
from aitj.devcluster.realnodes import host, start
from aitj.devcluster.realnodes.images import NodeImages, node_images
from aitj.devcluster.realnodes.layout import RealNode, real_nodes
from aitj.devcluster.versions import KUBERNETES_NODE_COMPONENT, NODE_COMPONENTS, cache_dir


class Cluster(Protocol):
    """Cluster: what real nodes need of the local cluster they join (``LocalCluster``)."""

    name: str
    dir: Path

    @property
    def apiserver(self) -> AdminClient: ...

    def recorded(self) -> dict[str, Any]: ...

    def record_commands(self, commands: dict[str, list[str]]) -> None: ...

    def start_component(self, component: str) -> None: ...

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float) -> None: ...


# Machine-wide: one cluster at a time has real nodes (host.claim).
RUN_DIR = Path(os.environ.get("AITJ_RUN", "/run/aitj"))
# What the nodes need from Debian: kube-proxy's and the kubelet's iptables and conntrack, the
# CNI plugins, socat for the apiserver relay, and mount/umount's util-linux (always there).
NODE_DEBS = ("iptables", "conntrack", "containernetworking-plugins", "socat", "kmod")
# The extended resources a real node advertises besides its CPUs and memory: the `cce` node
# profile's, so the CCE seed's trainers (which ask for shared V100 slices) schedule unchanged.
# Nothing backs them: a container sees no GPU.
EXTENDED_RESOURCES = {
    "nvidia.com/gpu": "8",
    "baidu.com/v100_32g_cgpu": "8",
    "baidu.com/v100_32g_cgpu_core": "800",
    "baidu.com/v100_32g_cgpu_memory": "256",
}


def nodes_of(cluster: Cluster, count: int) -> list[RealNode]:
    return real_nodes(count, cluster.dir, RUN_DIR, cache_dir())


def prepare(config: ClusterConfig, *, say: Callable[[str], None]) -> NodeImages:
    """prepare checks what real nodes need and installs, builds or makes what is missing:
    root, Debian's packages, the node programs, the images. A ClusterError says what is wrong."""
    if config.real_nodes == 0:
        raise ValueError("prepare is for clusters with real nodes")
    real_nodes(config.real_nodes, Path(), RUN_DIR, cache_dir())  # the count's bounds
    if os.geteuid() != 0:
        raise ClusterError(
            "real nodes need root: a kubelet and containerd manage cgroups, mounts and network "
            "namespaces. Run as root, or start the cluster without --real-nodes."
        )
    try:
        debs.ensure(NODE_DEBS, say=say)
        ensure_built(NODE_COMPONENTS, say=say)
    except BuildError as e:
        raise ClusterError(str(e)) from e
    return node_images(say=say)


def up(
    cluster: Cluster,
    config: ClusterConfig,
    ports: Ports,
    images: NodeImages,
    *,
    runs: Callable[[str], bool],
    say: Callable[[str], None],
) -> None:
    """up starts the real nodes of ``config`` beside ``cluster``'s running control plane and
    waits until they are Ready and DNS answers. ``runs(name)`` says whether the cluster of
    that name runs (another one may hold the machine's real nodes)."""
    nodes = nodes_of(cluster, config.real_nodes)
    owner = host.claimed_by(RUN_DIR)
    host.claim(RUN_DIR, cluster.name, owner is not None and runs(owner))
    host.teardown(RUN_DIR, nodes, _kube_proxy())  # a leftover of a killed run
    host.claim(RUN_DIR, cluster.name, False)
    host.guard(RUN_DIR, nodes)
    registry = images.serve(ports.registry, say=say)
    pulls = start.Pulls(images.hosts_toml(registry), tuple(images.hosts), images.sandbox)
    commands = start.write_files(cluster.name, cluster.dir, config, ports, nodes, pulls)
    cluster.record_commands(commands)
    for node in nodes:
        host.make_cgroups(node)
        cluster.start_component(f"containerd/{node.name}")
    for node in nodes:
        cluster.wait_for(node.containerd_socket.exists, f"containerd of {node.name}", 30)
    for path, body in start.api_objects(nodes[0], ports):
        cluster.apiserver.request("POST", path, body)
    for node in nodes:
        _start_kubelet(cluster, node)
    for component in ("kube-proxy", "coredns", "apiserver-relay"):
        cluster.start_component(component)
    cluster.wait_for(lambda: _nodes_ready(cluster, nodes), f"{len(nodes)} real node(s) Ready", 90)
    for node in nodes:
        _advertise(cluster, node)
    dns = f"http://{nodes[0].ip}:{start.DNS_HEALTH_PORT}/health"
    cluster.wait_for(lambda: http_ok(dns), "CoreDNS", 30)


# Every kubelet binds its device-plugin socket at this path, whatever its --root-dir (the path is
# a constant of the device-plugin API), after removing what the directory held. Two kubelets
# started together can both remove, then both bind: the second fails "address already in use"
# and exits (seen once, 2026-11-28). One at a time, each after the last has bound it, both run.
DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")


def _start_kubelet(cluster: Cluster, node: RealNode) -> None:
    """_start_kubelet starts ``node``'s kubelet and waits until it has bound DEVICE_PLUGIN_SOCKET."""
    since = time.time() - 1  # the socket's mtime has whole-second precision on some filesystems
    cluster.start_component(f"kubelet/{node.name}")
    cluster.wait_for(
        lambda: DEVICE_PLUGIN_SOCKET.exists() and DEVICE_PLUGIN_SOCKET.stat().st_mtime >= since,
        f"the kubelet of {node.name} to bind {DEVICE_PLUGIN_SOCKET}",
        60,
    )


def down(cluster: Cluster, count: int, *, say: Callable[[str], None] = lambda _: None) -> None:
    """down undoes what real nodes did to the machine (host.teardown), their processes being
    stopped already; only for the cluster that holds the real nodes."""
    if host.claimed_by(RUN_DIR) not in (None, cluster.name):
        return
    NodeImages(()).registry(Ports(**cluster.recorded()["ports"]).registry).stop()
    done = host.teardown(RUN_DIR, nodes_of(cluster, count), _kube_proxy())
    if done:
        say(f"real nodes torn down: {', '.join(done)}")


def _kube_proxy() -> Path:
    return KUBERNETES_NODE_COMPONENT.binary("kube-proxy")


def _nodes_ready(cluster: Cluster, nodes: list[RealNode]) -> bool:
    names = {n.name for n in nodes}
    ready = {
        n["metadata"]["name"]
        for n in cluster.apiserver.nodes()
        if n["metadata"]["name"] in names and node_ready(n) == "True" and not tainted_not_ready(n)
    }
    return ready == names


def _advertise(cluster: Cluster, node: RealNode) -> None:
    """_advertise adds EXTENDED_RESOURCES to the node's capacity, as an administrator
    advertises extended resources: the kubelet keeps what it does not manage itself."""
    body: dict[str, Any] = {"status": {"capacity": EXTENDED_RESOURCES, "allocatable": EXTENDED_RESOURCES}}
    cluster.apiserver.request(
        "PATCH", f"/api/v1/nodes/{node.name}/status", body, content_type="application/merge-patch+json"
    )


def recorded_nodes(cluster: Cluster) -> int:
    """recorded_nodes: how many real nodes ``cluster.json`` says the cluster has."""
    try:
        return int(cluster.recorded()["config"].get("real_nodes", 0))
    except (ClusterError, ValueError):
        return 0
