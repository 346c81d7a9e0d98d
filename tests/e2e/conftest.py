"""End-to-end fixtures: the CRD installed and the operator running as a process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.clusters import KubeCluster, free_port
from tests.e2e.pools import Pool
from tests.operator_process import OperatorProcess
from tests.seeds import REPO
from tests.waiting import wait_for

CRDS = REPO / "crds"
CRD_NAME = "aitrainingjobs.kongming.cce.baiudbce.com"


@pytest.fixture(scope="session")
def crd(cluster: KubeCluster) -> None:
    """crd installs the AITrainingJob CRD (server-side apply) and waits until it is served."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    wait_for(lambda: _established(cluster), 60, "the CRD Established")
    wait_for(lambda: cluster.kubectl("get", "aitj", "-A", check=False).returncode == 0, 30, "aitj served")


def _established(cluster: KubeCluster) -> bool:
    crd: Any = client.ApiextensionsV1Api(cluster.api).read_custom_resource_definition(CRD_NAME)
    return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])


@pytest.fixture(scope="session")
def operator(
    cluster: KubeCluster, crd: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """operator runs ``aitj run`` against the test cluster for the whole session."""
    proc = OperatorProcess(cluster.kubeconfig, Path(tmp_path_factory.mktemp("operator")), free_port())
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def live_operator(operator: OperatorProcess, cluster: KubeCluster) -> Iterator[OperatorProcess]:
    """live_operator is the session operator, checked alive before and after the test; its log
    is printed when the test fails."""
    if operator.proc is None:
        operator.start()
    operator.assert_alive()
    mark = len(operator.logs())
    yield operator
    # Shown by pytest only when the test fails.
    print(f"---- operator log during the test ----\n{operator.logs()[mark:][-6000:]}")
    print("---- pods and nodes after the test ----")
    print(cluster.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout)
    print(cluster.kubectl("get", "nodes", "--show-labels", check=False).stdout)
    operator.assert_alive()


@pytest.fixture
def pool(cluster: KubeCluster) -> Iterator[Pool]:
    """pool: nodes of the test's own (tests/e2e/pools.py), deleted afterwards."""
    p = Pool(cluster)
    yield p
    for node in p.nodes:
        cluster.core.delete_node(node)
