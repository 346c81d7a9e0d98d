"""What real nodes' teardown decides without touching the machine (aitj.devcluster.realnodes.host):
which processes are our shims, which kubelet chains go, and the order cgroups are removed in.
The teardown itself runs in the real-node end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitj.devcluster.realnodes.host import deepest_first, is_shim_of, kubelet_chains

OURS = ["/run/aitj/node-1/containerd.sock", "/run/aitj/node-2/containerd.sock"]
SHIM = "/usr/bin/containerd-shim-runc-v2\0-namespace\0k8s.io\0-address\0"


@pytest.mark.parametrize(
    ("cmdline", "ours"),
    [
        pytest.param(SHIM + OURS[1] + "\0", True, id="a shim of one of our containerds"),
        pytest.param(
            SHIM + "/run/containerd/containerd.sock\0", False, id="the machine's own containerd's shim"
        ),
        pytest.param(f"/usr/bin/containerd\0--address\0{OURS[0]}\0", False, id="our containerd itself"),
        pytest.param("", False, id="a kernel thread (no command line)"),
    ],
)
def test_only_the_shims_of_our_containerds_are_killed(cmdline: str, ours: bool) -> None:
    assert is_shim_of(cmdline, OURS) is ours
    assert not is_shim_of(cmdline, [])


def test_every_chain_the_kubelet_leaves_is_deleted_for_ipv4_and_ipv6() -> None:
    chains = kubelet_chains()
    assert len(chains) == len(set(chains)) == 10
    assert {family for family, _, _ in chains} == {"iptables", "ip6tables"}
    assert ("iptables", "filter", "KUBE-FIREWALL") in chains
    assert ("ip6tables", "mangle", "KUBE-IPTABLES-HINT") in chains


def test_cgroups_are_removed_children_first() -> None:
    groups = [
        Path("/sys/fs/cgroup/cpu/aitj"),
        Path("/sys/fs/cgroup/cpu/aitj/n1/pod/c"),
        Path("/sys/fs/cgroup/cpu/aitj/n1"),
    ]
    assert deepest_first(groups) == [groups[1], groups[2], groups[0]]
