"""``aitj dev cluster up/status/kubeconfig/down`` on a cluster of its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aitj.devcluster.cluster import ClusterConfig, ClusterError, LocalCluster, free_base
from tests.clusters import KubeCluster

pytestmark = pytest.mark.e2e


def aitj(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aitj", *args], capture_output=True, text=True, check=False)


def test_cluster_up_refuses_when_the_cluster_is_already_running(cluster: KubeCluster) -> None:
    if cluster.local is None:
        pytest.skip("needs the local control plane")
    with pytest.raises(ClusterError, match="already running"):
        cluster.local.up(ClusterConfig(base_port=free_base(18443)))
    assert cluster.local.unhealthy() == []  # the refusal left the running cluster alone


def test_cluster_commands_bring_a_cluster_up_report_it_and_take_it_down(cluster: KubeCluster) -> None:
    if cluster.local is None:
        pytest.skip("needs the local control plane")
    base = free_base(19443)
    try:
        up = aitj("dev", "cluster", "up", "--name", "clitest", "--nodes", "2", "--base-port", str(base))
        assert up.returncode == 0, up.stderr
        kubeconfig = up.stdout.strip().splitlines()[-1]
        assert kubeconfig == str(LocalCluster("clitest").kubeconfig)
        assert aitj("dev", "cluster", "kubeconfig", "--name", "clitest").stdout.strip() == kubeconfig

        status = aitj("dev", "cluster", "status", "--name", "clitest")
        assert status.returncode == 0, status.stdout
        assert "cluster clitest: healthy" in status.stdout
        assert status.stdout.count("Ready=True") == 2

        nodes = KubeCluster(LocalCluster("clitest").kubeconfig).kubectl("get", "nodes", "-o", "name").stdout
        assert sorted(nodes.split()) == ["node/kwok-node-0", "node/kwok-node-1"]

        again = aitj("dev", "cluster", "up", "--name", "clitest", "--base-port", str(base))
        assert again.returncode != 0
        assert "already running" in again.stderr
    finally:
        down = aitj("dev", "cluster", "down", "--name", "clitest")
    assert down.returncode == 0
    assert "kube-apiserver" in down.stderr
    stopped = aitj("dev", "cluster", "status", "--name", "clitest")
    assert stopped.returncode == 1
    assert "cluster clitest: stopped" in stopped.stdout
