"""Installing aitj into a test cluster as a user would: the CRD from crds/, served before use, and
the install of manifests/ with its components, in a kustomization of a user's own."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kubernetes import client

from aitj.devcluster.versions import helm_binary
from tests.clusters import KubeCluster
from tests.seeds import REPO
from tests.waiting import wait_for

CRDS = REPO / "crds"
CHART = REPO / "charts" / "aitj"
CRD_NAME = "aitrainingjobs.kongming.cce.baiudbce.com"
COMPONENTS = ("ha", "monitoring", "single-namespace")


def kustomization(
    *components: str, directory: Path | None = None, images: list[dict[str, str]] | None = None
) -> Path:
    """kustomization: a folder holding the kustomization a user writes to install manifests/
    cluster-wide with the named components of manifests/ (and ``images`` overrides), as the
    README shows; in ``directory`` or a new temporary one."""
    folder = directory or Path(tempfile.mkdtemp(prefix="aitj-kustomization-"))
    manifests = REPO / "manifests"
    body: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        # kustomize takes no absolute path here
        "resources": [os.path.relpath(manifests / "cluster-wide", folder)],
        "components": [os.path.relpath(manifests / c, folder) for c in components],
    }
    if images:
        body["images"] = images
    (folder / "kustomization.yaml").write_text(json.dumps(body))
    return folder


def install_crd(cluster: KubeCluster) -> None:
    """install_crd applies crds/ (server-side) and waits until the kind is served."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    wait_for(lambda: _established(cluster), 60, "the CRD Established")
    wait_for(lambda: cluster.kubectl("get", "aitj", "-A", check=False).returncode == 0, 30, "aitj served")


def _established(cluster: KubeCluster) -> bool:
    crd: Any = client.ApiextensionsV1Api(cluster.api).read_custom_resource_definition(CRD_NAME)
    return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])


def helm(cluster: KubeCluster, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """helm runs the built helm against ``cluster`` (make build-cluster builds it)."""
    assert helm_binary().exists(), f"helm is not built ({helm_binary()}): run `make build-cluster`"
    return subprocess.run(
        [str(helm_binary()), f"--kubeconfig={cluster.kubeconfig}", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
