"""End-to-end fixtures: the CRD installed and the operator running as a process, as the
ServiceAccount manifests/ installs (tests/e2e/rbac.py), not as the cluster's admin.

``AITJ_TEST_OPERATOR_AS=admin`` runs the session's operator with the admin's kubeconfig
instead: to tell an RBAC gap from a bug. No test needs it; the one operator started as admin is
tests/e2e/test_manifests.py's liveness check, on purpose (it checks the endpoint, not the
permissions)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aitj.devcluster.versions import KUBERNETES, KUBERNETES_ENV
from tests.clusters import KubeCluster, free_port
from tests.e2e import rbac
from tests.e2e.install import install_crd
from tests.e2e.pools import Pool
from tests.operator_process import OperatorProcess

# Read last: the audit log then holds every request the session's scenarios made the operator send.
LAST = "test_rbac_audit.py"


def pytest_report_header() -> str:
    """pytest_report_header: the Kubernetes release the local control plane runs this session
    (``$AITJ_KUBERNETES``, the newest when unset: docs/devcluster.md, "Kubernetes versions")."""
    chosen = os.environ.get(KUBERNETES_ENV, "")
    return f"local control plane: Kubernetes {KUBERNETES} (${KUBERNETES_ENV}={chosen})"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """pytest_collection_modifyitems moves the audit test (LAST) after every other test."""
    items.sort(key=lambda item: item.path.name == LAST)


@pytest.fixture(scope="session")
def crd(cluster: KubeCluster) -> None:
    """crd installs the AITrainingJob CRD (server-side apply) and waits until it is served."""
    install_crd(cluster)


@pytest.fixture(scope="session")
def operator_kubeconfig(cluster: KubeCluster, crd: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """operator_kubeconfig: the ServiceAccount's kubeconfig (its RBAC objects applied first), or
    the admin's under AITJ_TEST_OPERATOR_AS=admin."""
    if os.environ.get("AITJ_TEST_OPERATOR_AS") == "admin":
        return cluster.kubeconfig
    rbac.apply_rbac(cluster)
    return rbac.token_kubeconfig(cluster, tmp_path_factory.mktemp("credentials") / "operator.kubeconfig")


@pytest.fixture(scope="session")
def operator(
    cluster: KubeCluster, operator_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """operator runs ``aitj run`` against the test cluster for the whole session, with
    ``operator_kubeconfig``."""
    proc = OperatorProcess(operator_kubeconfig, Path(tmp_path_factory.mktemp("operator")), free_port())
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
