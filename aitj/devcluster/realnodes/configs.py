"""The files real nodes' programs read: pure functions of the layout, each returning text.

containerd 2 (config version 4, with the per-host mirror files), the CNI network of a node,
the kubelet's KubeletConfiguration, kube-proxy's KubeProxyConfiguration and CoreDNS's
Corefile. Nothing here touches the machine; ``start`` writes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from aitj.devcluster.nodes import PROFILE_LABEL
from aitj.devcluster.realnodes.layout import (
    CLUSTER_DOMAIN,
    DNS_PORT,
    DNS_SERVICE_IP,
    KUBE_PROXY_HEALTHZ_PORT,
    KUBE_PROXY_METRICS_PORT,
    KUBELET_HEALTHZ_PORT,
    KUBELET_PORT,
    POD_RANGE,
    REAL_NODE_LABEL,
    REAL_NODE_TAINT,
    SERVICE_RANGE,
    RealNode,
)

CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins


def _toml_value(value: Any) -> str:
    # JSON's strings, numbers, booleans and lists of them are TOML's too.
    return json.dumps(value)


def _toml(tables: dict[str, dict[str, Any]], top: dict[str, Any]) -> str:
    """_toml: a flat TOML document: ``top``'s keys, then one ``[table]`` per entry."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items()]
    for table, keys in tables.items():
        lines += ["", f"[{table}]", *(f"{k} = {_toml_value(v)}" for k, v in keys.items())]
    return "\n".join(lines) + "\n"


def containerd_config(node: RealNode, *, runc: Path, sandbox_image: str) -> str:
    """containerd_config: containerd 2's config.toml for ``node``: its own root, state and
    socket; runc at ``runc``; pods on the node's CNI network; images from the per-host mirror
    files beside the config (``registry_hosts``); the sandbox image pinned (none can be pulled
    from outside). Two settings this machine needs: ``restrict_oom_score_adj``, as no process
    here may lower its OOM score, and NRI off, whose socket every containerd would share."""
    cri_images = "plugins.'io.containerd.cri.v1.images'"
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    runc_runtime = f"{cri_runtime}.containerd.runtimes.runc"
    hosts_dir = str(node.dir / "certs.d")
    return _toml(
        {
            "plugins.'io.containerd.server.v1.grpc'": {"address": str(node.containerd_socket)},
            "plugins.'io.containerd.server.v1.ttrpc'": {"address": f"{node.containerd_socket}.ttrpc"},
            "plugins.'io.containerd.server.v1.metrics'": {"address": ""},
            cri_images: {"snapshotter": "overlayfs"},
            f"{cri_images}.pinned_images": {"sandbox": sandbox_image},
            f"{cri_images}.registry": {"config_path": hosts_dir},
            "plugins.'io.containerd.transfer.v1.local'": {"config_path": hosts_dir},
            cri_runtime: {
                "restrict_oom_score_adj": True,
                "enable_selinux": False,
                # Network namespaces under the node's own state, so teardown finds them.
                "netns_mounts_under_state_dir": True,
            },
            f"{cri_runtime}.cni": {"bin_dirs": [CNI_BIN_DIR], "conf_dir": str(node.dir / "cni")},
            f"{cri_runtime}.containerd": {"default_runtime_name": "runc"},
            runc_runtime: {"runtime_type": "io.containerd.runc.v2"},
            f"{runc_runtime}.options": {"BinaryName": str(runc), "SystemdCgroup": False},
            "plugins.'io.containerd.grpc.v1.cri'": {
                "stream_server_address": "127.0.0.1",
                "stream_server_port": "0",
            },
        },
        {
            "version": 4,
            "root": str(node.containerd_root),
            "state": str(node.containerd_state / "state"),
            # Not the machine's /etc/containerd/conf.d, which the default imports.
            "imports": [],
            "disabled_plugins": ["io.containerd.nri.v1.nri"],
        },
    )


def cni_network(node: RealNode) -> str:
    """cni_network: the node's CNI network (a .conflist): a bridge of its own whose address is
    the pods' gateway and the node's IP, and addresses from the node's subnet. The pods' only
    routes are the pod and Service ranges: no default route, so nothing leaves the machine
    from a pod; no masquerade either."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": f"aitj-{node.name}",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": node.bridge,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": node.subnet, "gateway": node.ip}]],
                        "routes": [{"dst": POD_RANGE}, {"dst": SERVICE_RANGE}],
                        "dataDir": str(node.dir / "ipam"),
                    },
                }
            ],
        },
        indent=2,
    )


def kubelet_config(node: RealNode, *, ca: Path, lease_seconds: int) -> str:
    """kubelet_config: the node's KubeletConfiguration. The settings this machine needs:
    cgroup v1 allowed (``failCgroupV1: false``) with the cgroupfs driver, a cgroup subtree of
    the node's own, no swap check, no lowering of its OOM score, eviction thresholds low enough
    for a small disk. The kubelet API on the node's address, for clients the cluster's CA
    signed, authorised by the apiserver. Pods get the cluster's DNS and never the machine's
    resolver (``resolvConf`` is a file of our own)."""
    doc: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": node.ip,
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup_root,
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(node.dir / "resolv.conf"),
        "registerWithTaints": [REAL_NODE_TAINT],
        "nodeLeaseDurationSeconds": lease_seconds,
        "nodeStatusReportFrequency": "10s",
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 99,
        "imageGCLowThresholdPercent": 98,
        "podLogsDir": str(node.pod_logs),
        "serializeImagePulls": False,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def resolv_conf() -> str:
    """resolv_conf: what the kubelet gives as upstream resolvers: none. Pods of the usual DNS
    policies ask the cluster's DNS, which answers the cluster domain only."""
    return "# aitj real nodes: no resolver beyond the cluster's DNS\n"


def kube_proxy_config(node: RealNode, kubeconfig: Path) -> str:
    """kube_proxy_config: the one kube-proxy of the real nodes (they share the machine's
    network namespace), in iptables mode, named after the first node, its endpoints on that
    node's address. NodePorts open on the pods' bridges only."""
    doc = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node.name,
        "mode": "iptables",
        "clusterCIDR": POD_RANGE,
        "healthzBindAddress": f"{node.ip}:{KUBE_PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": f"{node.ip}:{KUBE_PROXY_METRICS_PORT}",
        "nodePortAddresses": [POD_RANGE],
        # The machine's conntrack table is left as it is (raising it needs more than root here).
        "conntrack": {"maxPerCore": 0},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def corefile(node: RealNode, kubeconfig: Path, context: str, health_port: int) -> str:
    """corefile: CoreDNS on the first node's address, answering the cluster domain (and
    reverse lookups of pod and Service addresses) from the API, with no forward: any other
    name is refused, so no query leaves the machine."""
    zones = f"{CLUSTER_DOMAIN} in-addr.arpa ip6.arpa"
    return (
        f"{CLUSTER_DOMAIN}:{DNS_PORT} in-addr.arpa:{DNS_PORT} ip6.arpa:{DNS_PORT} {{\n"
        f"    bind {node.ip}\n"
        "    errors\n"
        f"    health {node.ip}:{health_port}\n"
        f"    kubernetes {zones} {{\n"
        f"        kubeconfig {kubeconfig} {context}\n"
        "        pods insecure\n"
        "        ttl 5\n"
        "    }\n"
        "    cache 5\n"
        "    loadbalance\n"
        "}\n"
    )


def node_labels() -> str:
    """node_labels: the kubelet's --node-labels: the real-node label, and the profile label
    kwok's nodes carry too (``aitj.dev/node-profile``), so one selector tells them apart."""
    return f"{REAL_NODE_LABEL}=true,{PROFILE_LABEL}=real"
