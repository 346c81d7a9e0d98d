"""Session fixtures shared by every test. End-to-end tests are marked ``e2e`` and get a real
cluster from ``tests.clusters`` (the local control plane by default)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clusters import KubeCluster, existing, start_local
from tests.waiting import wait_for


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    found = existing()
    if found is not None:
        yield found
        return
    if os.environ.get("AITJ_TEST_BACKEND") == "kind":
        kind: Any = request.getfixturevalue("kind_cluster")
        yield KubeCluster(kind.kubeconfig_path)
        return
    local = start_local()
    try:
        yield local
    finally:
        assert local.local is not None
        local.local.down()


@pytest.fixture
def namespace(cluster: KubeCluster) -> Iterator[str]:
    """namespace is a fresh namespace for one test, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": name}})
    # Pods are refused until kube-controller-manager has made the namespace's default account.
    wait_for(lambda: _has_default_sa(cluster, name), 30, "the namespace's default service account")
    try:
        yield name
    finally:
        cluster.core.delete_namespace(name)
        # Then its pods, at once (grace 0): the namespace controller lists the pods right after
        # its first delete (5 s on), and if any is left it comes back only after half the
        # longest terminationGracePeriodSeconds among them (the seed's trainers': 300 s, so
        # 151 s), and a pod bound to a node the test deleted (a pool's) has no kubelet to end
        # its grace period: it waits for the pod garbage collector's orphan sweep (40 s and
        # more). The operator, refused its replacements (the namespace is terminating),
        # releases their finalizers; a pod deleted with grace 0 then goes without a kubelet.
        cluster.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)


def _has_default_sa(cluster: KubeCluster, namespace: str) -> bool:
    names = [sa.metadata.name for sa in cluster.core.list_namespaced_service_account(namespace).items]
    return "default" in names
