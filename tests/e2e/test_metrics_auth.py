"""/metrics over HTTPS, guarded by the apiserver (issue 24, section 5): an operator run as the
installed ServiceAccount (tests/e2e/rbac.py) with ``--metrics-secure`` refuses a scrape with
no token or an unknown one (401), refuses a ServiceAccount not bound to aitj-metrics-reader
(403), and serves one that is bound (200). The reviews are real: TokenReview and
SubjectAccessReview on the local control plane, with the manifests' ClusterRoles."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.clusters import KubeCluster, free_port
from tests.e2e import rbac
from tests.e2e.scrape import account_token as token
from tests.e2e.scrape import secure_scrape as scrape
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

READER_ROLE = "aitj-metrics-reader"


@pytest.fixture
def secured(
    cluster: KubeCluster, operator_kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """secured: an operator of the installed account serving /metrics over HTTPS; it operates
    in this test's empty namespace only, so it leaves the session's jobs alone."""
    proc = OperatorProcess(
        operator_kubeconfig, tmp_path, free_port(), [f"--namespace={namespace}"], secure_metrics=True
    )
    proc.start()
    try:
        wait_for(lambda: scrape(proc.metrics_port, None)[0] != 0, 60, "the metrics server listening")
        yield proc
    finally:
        proc.stop()


def test_metrics_need_a_token_of_an_account_allowed_to_get_them(
    cluster: KubeCluster, secured: OperatorProcess, namespace: str
) -> None:
    roles = [
        d for d in rbac.built(cluster) if d["kind"] == "ClusterRole" and d["metadata"]["name"] == READER_ROLE
    ]
    assert roles, f"the manifests ship no ClusterRole {READER_ROLE}"
    scraper, stranger = token(cluster, namespace, "scraper"), token(cluster, namespace, "stranger")
    binding = f"{READER_ROLE}-{namespace}"
    rbac_api: Any = client.RbacAuthorizationV1Api(cluster.api)
    rbac_api.create_cluster_role_binding(
        {
            "metadata": {"name": binding},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
        }
    )
    try:
        port = secured.metrics_port
        assert scrape(port, None)[0] == 401, "a scrape without a token"
        assert scrape(port, "not-a-token")[0] == 401, "a token the apiserver does not know"
        # The apiserver's RBAC authorizer reads the new binding through its cache: wait for it.
        _, body = wait_for(lambda: (got := scrape(port, scraper))[0] == 200 and got, 30, "the scraper served")
        assert "aitj_build_info" in body
        assert scrape(port, stranger)[0] == 403, "an account not bound to the reader role"
        secured.assert_alive()
    finally:
        rbac_api.delete_cluster_role_binding(binding)
