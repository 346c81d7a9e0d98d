"""Real nodes' files, command lines and API objects, in the order they are started.

``write_files`` writes every node's configuration into the cluster's state folder and returns
the command lines, which ``LocalCluster`` records and starts after the control plane: each
node's containerd, then its kubelet, then the one kube-proxy, CoreDNS and the relay that lets
pods reach the apiserver (it listens on 127.0.0.1 only). ``api_objects`` are what the cluster
needs in the API for them: the ``kubernetes`` and ``kube-dns`` Services' endpoints (the
apiserver's reconciler is off, and CoreDNS runs as a process on the first node's address) and
CoreDNS's read access.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aitj.devcluster import pki
from aitj.devcluster.config import ClusterConfig, Ports, write_kubeconfig
from aitj.devcluster.realnodes import configs
from aitj.devcluster.realnodes.layout import (
    DNS_PORT,
    DNS_SERVICE_IP,
    RealNode,
)
from aitj.devcluster.versions import (
    CONTAINERD_COMPONENT,
    COREDNS_COMPONENT,
    KUBERNETES_NODE_COMPONENT,
    RUNC_COMPONENT,
)

# CoreDNS's health endpoint, on the first node's address.
DNS_HEALTH_PORT = 18053
# What kubectl and the kubelets call the cluster in their kubeconfigs (config.write_kubeconfig).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Pulls:
    """Pulls: where every node's containerd gets its images. ``registry_hosts``: the
    ``hosts.toml`` that sends a registry host's pulls to the local registry, written for each of
    ``mirrored_hosts``; ``sandbox_image``: the pod sandbox image, pinned."""

    registry_hosts: str
    mirrored_hosts: tuple[str, ...]
    sandbox_image: str


def write_files(
    cluster: str, state: Path, config: ClusterConfig, ports: Ports, nodes: list[RealNode], pulls: Pulls
) -> dict[str, list[str]]:
    """write_files writes each node's containerd, CNI, kubelet and registry-mirror files, and
    kube-proxy's and CoreDNS's, and returns the command lines in start order."""
    pki_dir = state / "pki"
    commands: dict[str, list[str]] = {}
    runc = RUNC_COMPONENT.binary("runc")
    for node in nodes:
        for sub in ("cni", "certs.d", "kubelet"):
            (node.dir / sub).mkdir(parents=True, exist_ok=True)
        node.containerd_state.mkdir(parents=True, exist_ok=True)
        node.containerd_root.mkdir(parents=True, exist_ok=True)
        (node.dir / "containerd.toml").write_text(
            configs.containerd_config(node, runc=runc, sandbox_image=pulls.sandbox_image)
        )
        for host in pulls.mirrored_hosts:
            (node.dir / "certs.d" / host).mkdir(parents=True, exist_ok=True)
            (node.dir / "certs.d" / host / "hosts.toml").write_text(pulls.registry_hosts)
        (node.dir / "cni" / "10-aitj.conflist").write_text(configs.cni_network(node))
        (node.dir / "resolv.conf").write_text(configs.resolv_conf())
        (node.dir / "kubelet.yaml").write_text(
            configs.kubelet_config(node, ca=pki_dir / "ca.crt", lease_seconds=config.node_lease_seconds)
        )
        ident = pki.node_identity(node.name)
        pki.client_cert(pki_dir, ident)
        write_kubeconfig(node.dir / "kubelet.kubeconfig", cluster, pki_dir, ident.file, ports)
        # containerd finds its shim on PATH: its own folder first.
        commands[f"containerd/{node.name}"] = [
            "env",
            f"PATH={CONTAINERD_COMPONENT.bin_dir}:{SYSTEM_PATH}",
            str(CONTAINERD_COMPONENT.binary("containerd")),
            f"--config={node.dir / 'containerd.toml'}",
        ]
        commands[f"kubelet/{node.name}"] = [
            str(KUBERNETES_NODE_COMPONENT.binary("kubelet")),
            f"--config={node.dir / 'kubelet.yaml'}",
            f"--kubeconfig={node.dir / 'kubelet.kubeconfig'}",
            f"--hostname-override={node.name}",
            f"--node-ip={node.ip}",
            f"--root-dir={node.kubelet_root}",
            f"--cert-dir={node.dir / 'kubelet-pki'}",
            f"--node-labels={configs.node_labels()}",
            "--v=1",
        ]
    cfg = state / "config"
    first = nodes[0]
    (cfg / "kube-proxy.yaml").write_text(configs.kube_proxy_config(first, cfg / "kube-proxy.kubeconfig"))
    commands["kube-proxy"] = [
        str(KUBERNETES_NODE_COMPONENT.binary("kube-proxy")),
        f"--config={cfg / 'kube-proxy.yaml'}",
        "--v=1",
    ]
    (cfg / "Corefile").write_text(
        configs.corefile(first, cfg / "coredns.kubeconfig", f"aitj-{cluster}", DNS_HEALTH_PORT)
    )
    commands["coredns"] = [str(COREDNS_COMPONENT.binary("coredns")), "-conf", str(cfg / "Corefile")]
    # Pods reach the apiserver at the `kubernetes` Service, whose endpoint is this relay on the
    # first node's address: the apiserver itself listens on loopback only.
    commands["apiserver-relay"] = [
        "socat",
        f"TCP-LISTEN:{ports.apiserver},bind={first.ip},fork,reuseaddr",
        f"TCP:127.0.0.1:{ports.apiserver}",
    ]
    return commands


def api_objects(first: RealNode, ports: Ports) -> list[tuple[str, dict[str, Any]]]:
    """api_objects: (collection path, object) for what the real nodes need in the API."""
    return [
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            _slice("kubernetes", "default", first.ip, [("https", ports.apiserver, "TCP")]),
        ),
        (
            "/api/v1/namespaces/kube-system/services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kube-dns",
                    "namespace": "kube-system",
                    "labels": {"k8s-app": "kube-dns"},
                },
                "spec": {
                    "clusterIP": DNS_SERVICE_IP,
                    "ports": [
                        {"name": "dns", "port": DNS_PORT, "protocol": "UDP"},
                        {"name": "dns-tcp", "port": DNS_PORT, "protocol": "TCP"},
                    ],
                },
            },
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
            _slice(
                "kube-dns", "kube-system", first.ip, [("dns", DNS_PORT, "UDP"), ("dns-tcp", DNS_PORT, "TCP")]
            ),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "aitj:coredns"},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["services", "namespaces", "pods"],
                        "verbs": ["list", "watch"],
                    },
                    {
                        "apiGroups": ["discovery.k8s.io"],
                        "resources": ["endpointslices"],
                        "verbs": ["list", "watch"],
                    },
                ],
            },
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "aitj:coredns"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "aitj:coredns",
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": pki.COREDNS.user}
                ],
            },
        ),
    ]


def _slice(service: str, namespace: str, address: str, ports: list[tuple[str, int, str]]) -> dict[str, Any]:
    """_slice: an EndpointSlice of one ready address for a Service without a selector."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-aitj",
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": "aitj.dev-devcluster",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": name, "port": port, "protocol": proto} for name, port, proto in ports],
    }
