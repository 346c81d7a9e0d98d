"""Installing aitj into a test cluster as a user would: the CRD from crds/, served before use."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.clusters import KubeCluster
from tests.seeds import REPO
from tests.waiting import wait_for

CRDS = REPO / "crds"
CRD_NAME = "aitrainingjobs.kongming.cce.baiudbce.com"


def install_crd(cluster: KubeCluster) -> None:
    """install_crd applies crds/ (server-side) and waits until the kind is served."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    wait_for(lambda: _established(cluster), 60, "the CRD Established")
    wait_for(lambda: cluster.kubectl("get", "aitj", "-A", check=False).returncode == 0, 30, "aitj served")


def _established(cluster: KubeCluster) -> bool:
    crd: Any = client.ApiextensionsV1Api(cluster.api).read_custom_resource_definition(CRD_NAME)
    return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])
