"""``aitj release --all`` on the real control plane: ``-n`` means what it means in every command
(the context's namespace by default), ``-A`` every namespace; a released pod has lost the
operator's finalizer and nothing else."""

from __future__ import annotations

import pytest

from aitj.core import api
from aitj.core.observed import TRACKING_FINALIZER
from tests.clusters import KubeCluster
from tests.e2e.cli import aitj

pytestmark = pytest.mark.e2e


def test_release_lets_go_of_the_pods_of_the_namespace_asked_for(cluster: KubeCluster, namespace: str) -> None:
    pod = {
        "metadata": {
            "name": "held",
            "labels": {api.LABEL_JOB: "gone"},
            "finalizers": [TRACKING_FINALIZER, "example.com/keep"],
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "nowhere"},
    }
    cluster.core.create_namespaced_pod(namespace, pod)
    try:
        elsewhere = aitj(cluster.kubeconfig, "release", "--all", "-n", "default")
        assert elsewhere.returncode == 0 and f"{namespace}/held" not in elsewhere.stdout, elsewhere.stderr
        released = aitj(cluster.kubeconfig, "release", "--all", "-n", namespace)
        assert released.returncode == 0, released.stderr
        assert released.stdout.strip() == f"released {namespace}/held"
        finalizers = cluster.core.read_namespaced_pod("held", namespace).metadata.finalizers
        assert finalizers == ["example.com/keep"]
    finally:
        cluster.core.patch_namespaced_pod("held", namespace, {"metadata": {"finalizers": None}})
