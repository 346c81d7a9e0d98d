"""Real nodes' layout and configuration files (aitj.devcluster.realnodes; docs/real-nodes.md):
the pure parts, read back as the programs would parse them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from aitj.devcluster import pki
from aitj.devcluster.config import ClusterConfig, Ports, commands
from aitj.devcluster.realnodes import configs, start
from aitj.devcluster.realnodes.layout import (
    DNS_SERVICE_IP,
    MAX_REAL_NODES,
    POD_RANGE,
    REAL_NODE_LABEL,
    SERVICE_RANGE,
    real_nodes,
)

STATE, RUN, CACHE = Path("/state/clusters/t"), Path("/run/aitj"), Path("/cache")


def nodes(count: int = 3) -> list:  # type: ignore[type-arg]
    return real_nodes(count, STATE, RUN, CACHE)


def test_each_node_has_its_own_bridge_subnet_address_cgroup_and_containerd() -> None:
    ns = nodes()
    for field in ("name", "bridge", "subnet", "ip", "cgroup_root", "containerd_socket", "containerd_root"):
        values = [getattr(n, field) for n in ns]
        assert len(set(values)) == len(values), field
    assert [n.ip for n in ns] == ["10.250.0.1", "10.250.1.1", "10.250.2.1"]
    assert all(len(n.bridge) <= 15 for n in ns)  # Linux's interface name limit
    assert all(len(str(n.containerd_socket)) < 108 for n in ns)  # a unix socket path's limit


def test_each_bridge_has_a_fixed_locally_administered_unicast_address() -> None:
    """A bridge with no address set takes its lowest port's, which changes as pods leave."""
    macs = [n.bridge_mac for n in real_nodes(MAX_REAL_NODES, STATE, RUN, CACHE)]
    assert len(set(macs)) == len(macs)
    for mac in macs:
        first = int(mac.split(":")[0], 16)
        assert len(mac.split(":")) == 6 and first & 0b10 and not first & 0b1, mac


@pytest.mark.parametrize("count", [-1, MAX_REAL_NODES + 1])
def test_a_count_out_of_range_is_refused_with_the_bounds(count: int) -> None:
    with pytest.raises(ValueError, match=f"between 0 and {MAX_REAL_NODES}"):
        nodes(count)


def test_pods_get_no_default_route_and_no_masquerade() -> None:
    net = json.loads(configs.cni_network(nodes()[1]))
    bridge = net["plugins"][0]
    assert bridge["bridge"] == "aitjbr1" and bridge["ipMasq"] is False
    assert bridge.get("isDefaultGateway") is not True
    assert [r["dst"] for r in bridge["ipam"]["routes"]] == [POD_RANGE, SERVICE_RANGE]
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.250.1.0/24", "gateway": "10.250.1.1"}]]


def test_containerd_is_the_nodes_own_and_never_lowers_an_oom_score() -> None:
    node = nodes()[0]
    cfg = tomllib.loads(
        configs.containerd_config(node, runc=Path("/bin/runc"), sandbox_image="r.local/pause:1")
    )
    plugins = cfg["plugins"]
    assert cfg["version"] == 4 and cfg["imports"] == []
    assert plugins["io.containerd.server.v1.grpc"]["address"] == str(node.containerd_socket)
    runtime = plugins["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["cni"]["conf_dir"] == str(node.dir / "cni")
    assert runtime["containerd"]["runtimes"]["runc"]["options"]["BinaryName"] == "/bin/runc"
    assert plugins["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "r.local/pause:1"
    assert plugins["io.containerd.cri.v1.images"]["registry"]["config_path"] == str(node.dir / "certs.d")
    assert "io.containerd.nri.v1.nri" in cfg["disabled_plugins"]


def test_the_kubelet_runs_on_cgroup_v1_keeps_off_other_pods_and_hands_out_only_the_cluster_dns() -> None:
    node = nodes()[2]
    cfg = yaml.safe_load(configs.kubelet_config(node, ca=Path("/pki/ca.crt"), lease_seconds=8))
    assert cfg["failCgroupV1"] is False and cfg["cgroupDriver"] == "cgroupfs"
    assert cfg["cgroupRoot"] == "/aitj/real-node-2"
    assert cfg["address"] == cfg["healthzBindAddress"] == "10.250.2.1"
    assert cfg["clusterDNS"] == [DNS_SERVICE_IP]
    assert cfg["resolvConf"] == str(node.dir / "resolv.conf")
    assert "nameserver" not in configs.resolv_conf()
    assert cfg["registerWithTaints"] == [{"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}]
    assert cfg["authentication"]["anonymous"]["enabled"] is False
    assert f"{REAL_NODE_LABEL}=true" in configs.node_labels().split(",")


def test_coredns_answers_the_cluster_domain_on_the_first_node_and_forwards_nothing() -> None:
    text = configs.corefile(nodes()[0], Path("/c/kubeconfig"), "aitj-t", 18053)
    assert "bind 10.250.0.1" in text
    assert "forward" not in text
    assert text.startswith("cluster.local:53 ")


def test_the_apiserver_gets_the_admission_plugins_for_real_nodes_only_with_them() -> None:
    def lines(config: ClusterConfig) -> list[str]:
        state = Path("/state")
        return commands(state, config, Ports.from_base(16443), state / "s.yaml", state / "k.yaml")[
            "kube-apiserver"
        ]

    plugins = "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction"
    assert plugins in lines(ClusterConfig(real_nodes=1))
    assert plugins not in lines(ClusterConfig())


def test_the_registry_port_follows_the_others() -> None:
    ports = Ports.from_base(17443)
    assert ports.registry == 17449
    assert sorted(ports.by_component().values()) == list(range(17443, 17450))


def test_every_node_pulls_the_mirrored_hosts_through_the_local_registry(tmp_path: Path) -> None:
    state = tmp_path / "state"
    pki.make_pki(state / "pki")
    (state / "config").mkdir()
    two = real_nodes(2, state, tmp_path / "run", tmp_path / "cache")
    pulls = start.Pulls('server = "http://r.local"\n', ("docker.io", "ghcr.io"), "r.local/pause:1")
    started = start.write_files("t", state, ClusterConfig(real_nodes=2), Ports.from_base(20000), two, pulls)
    for node in two:
        assert [p.parent.name for p in sorted((node.dir / "certs.d").glob("*/hosts.toml"))] == list(
            pulls.mirrored_hosts
        )
        assert (node.dir / "certs.d" / "ghcr.io" / "hosts.toml").read_text() == pulls.registry_hosts
        cfg = tomllib.loads((node.dir / "containerd.toml").read_text())
        assert cfg["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "r.local/pause:1"
    assert list(started) == [
        *(f"{program}/{n.name}" for n in two for program in ("containerd", "kubelet")),
        "kube-proxy",
        "coredns",
        "apiserver-relay",
    ]
