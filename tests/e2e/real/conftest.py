"""Fixtures of the real-node tests: a local cluster of their own with real nodes (a kubelet
and containerd each, docs/real-nodes.md), the CRD, and the operator as a process with the
ServiceAccount's permissions, as the rest of the e2e suite runs it.

The cluster is separate from the session's kwok cluster: only one cluster on a machine may
have real nodes, and the rest of the suite counts and drains the kwok cluster's nodes. It
needs root (a kubelet manages cgroups, mounts and network namespaces); the tests are skipped
with that reason without it, and on a cluster that is not the local one (AITJ_KUBECONFIG, kind).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aitj.devcluster.cluster import ClusterConfig, LocalCluster, free_base
from aitj.devcluster.realnodes.layout import namespace_annotations
from tests.clusters import KubeCluster, free_port
from tests.e2e import rbac
from tests.e2e.install import install_crd
from tests.e2e.real import nodes
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

REAL_NODES = 2


@pytest.fixture(scope="package")
def real_cluster() -> Iterator[KubeCluster]:
    """real_cluster: a local cluster with REAL_NODES real nodes and no simulated ones."""
    if os.environ.get("AITJ_KUBECONFIG") or os.environ.get("AITJ_TEST_BACKEND"):
        pytest.skip("real nodes run on the local control plane only")
    if os.geteuid() != 0:
        pytest.skip("real nodes need root (a kubelet manages cgroups, mounts and network namespaces)")
    local = LocalCluster(os.environ.get("AITJ_TEST_CLUSTER", "pytest") + "-real")
    local.down()
    config = ClusterConfig(
        nodes=0,
        node_profile="cce",
        base_port=free_base(19443),
        node_grace_seconds=16,
        node_lease_seconds=8,
        real_nodes=REAL_NODES,
    )
    local.up(config, say=lambda m: print(m, flush=True))
    try:
        yield KubeCluster(local.kubeconfig, local)
    finally:
        local.down()


@pytest.fixture(scope="module")
def real_operator(
    real_cluster: KubeCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """real_operator: ``aitj run`` against the real-node cluster, as the ServiceAccount; one per
    module, so a module may run the operator otherwise (test_operator_image.py: its image)."""
    install_crd(real_cluster)
    rbac.apply_rbac(real_cluster)
    creds = tmp_path_factory.mktemp("real-credentials") / "operator.kubeconfig"
    proc = OperatorProcess(
        rbac.token_kubeconfig(real_cluster, creds),
        Path(tmp_path_factory.mktemp("real-operator")),
        free_port(),
    )
    proc.start()
    try:
        yield proc
    finally:
        print(f"---- operator log ----\n{proc.logs()[-8000:]}")
        proc.stop()


@pytest.fixture
def real_namespace(real_namespace_bare: str, real_operator: OperatorProcess) -> str:
    """real_namespace: ``real_namespace_bare`` with the operator running as a process."""
    return real_namespace_bare


@pytest.fixture
def real_namespace_bare(real_cluster: KubeCluster) -> Iterator[str]:
    """real_namespace_bare: a namespace whose pods land on the real nodes (its annotations give
    them the node selector and the toleration, through the apiserver's admission plugins),
    deleted afterwards with its pods force-deleted."""
    name = f"r-{uuid.uuid4().hex[:8]}"
    real_cluster.core.create_namespace({"metadata": {"name": name, "annotations": namespace_annotations()}})
    wait_for(lambda: nodes.has_default_sa(real_cluster, name), 30, "the namespace's default service account")
    try:
        yield name
    finally:
        print(real_cluster.kubectl("get", "pods", "-n", name, "-o", "wide", check=False).stdout)
        # Terminating pods keep their CPU on the two small nodes: force-delete them (the
        # kubelets then kill their containers at once) before the namespace goes.
        real_cluster.kubectl(
            "delete", "pods", "--all", "-n", name, "--force", "--grace-period=0", check=False
        )
        real_cluster.core.delete_namespace(name)
