"""manifests/ on the real control plane: the install applies with its components alone and
combined (server-side dry run: the
Deployment's pod would need a container runtime), the Deployment's pod is admitted under the
restricted Pod Security level its namespace enforces, and ``aitj run --liveness`` serves the
health endpoint the Deployment's liveness probe calls."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.clusters import KubeCluster, free_port
from tests.e2e import monitoring_crds
from tests.e2e.install import kustomization
from tests.seeds import REPO
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
# The components alone, and combined: a user's kustomization names manifests/cluster-wide and these.
COMBINATIONS = (
    (),
    ("single-namespace",),
    ("monitoring",),
    ("ha",),
    ("ha", "monitoring"),
    ("ha", "monitoring", "single-namespace"),
)


@pytest.fixture(scope="module")
def namespaces(cluster: KubeCluster) -> Iterator[None]:
    """namespaces: aitj-system and the namespace the single-namespace component names, made for
    real: a server-side dry run creates nothing, so the objects inside a namespace the same
    apply creates would not find it."""
    made = [
        ns
        for ns in ("aitj-system", "training")
        if cluster.kubectl("create", "namespace", ns, check=False).returncode == 0
    ]
    try:
        yield
    finally:
        for ns in made:
            cluster.kubectl("delete", "namespace", ns, "--wait=false")


@pytest.mark.parametrize("components", COMBINATIONS, ids=lambda c: "+".join(("cluster-wide", *c)))
def test_the_install_applies_on_the_apiserver_with_its_components_alone_and_combined(
    cluster: KubeCluster, crd: None, namespaces: None, components: tuple[str, ...]
) -> None:
    if "monitoring" in components:
        monitoring_crds.install(cluster)  # the Prometheus Operator's kinds, as stand-ins
    folder = str(kustomization(*components))
    built = cluster.kubectl("kustomize", folder)  # kubectl's own kustomize
    assert "kind: Deployment" in built.stdout
    applied = cluster.kubectl("apply", "-k", folder, "--dry-run=server", check=False)
    assert applied.returncode == 0, applied.stderr
    for what in (
        "namespace/aitj-system",
        "serviceaccount/aitj-operator",
        "clusterrole.rbac.authorization.k8s.io/aitj-operator",
        "deployment.apps/aitj-operator",
        "service/aitj-operator-metrics",
    ):
        assert what in applied.stdout, applied.stdout
    if "single-namespace" in components:
        assert "role.rbac.authorization.k8s.io/aitj-operator" in applied.stdout
    if "ha" in components:
        for what in (
            "role.rbac.authorization.k8s.io/aitj-operator-leader-election",
            "rolebinding.rbac.authorization.k8s.io/aitj-operator-leader-election",
            "poddisruptionbudget.policy/aitj-operator",
        ):
            assert what in applied.stdout, applied.stdout
    if "monitoring" in components:
        for what in ("servicemonitor", "prometheusrule", "configmap/aitj-dashboards"):
            assert what in applied.stdout, applied.stdout


def _operator_pod(cluster: KubeCluster) -> tuple[dict[str, str], dict[str, Any]]:
    """_operator_pod: the labels of the install's aitj-system and a pod made of its Deployment's
    template (without the ServiceAccount, which exists only in aitj-system)."""
    docs = [
        d
        for d in yaml.safe_load_all(
            cluster.kubectl("kustomize", str(REPO / "manifests" / "cluster-wide")).stdout
        )
        if d
    ]
    (namespace,) = [d for d in docs if d["kind"] == "Namespace"]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    spec = copy.deepcopy(deployment["spec"]["template"]["spec"])
    spec.pop("serviceAccountName")
    return namespace["metadata"].get("labels") or {}, {"metadata": {"name": "operator"}, "spec": spec}


def test_the_operator_pod_is_admitted_under_its_namespaces_restricted_pod_security(
    cluster: KubeCluster,
) -> None:
    labels, pod = _operator_pod(cluster)
    assert labels.get("pod-security.kubernetes.io/enforce") == "restricted"
    namespace = f"psa-{uuid.uuid4().hex[:6]}"
    cluster.core.create_namespace({"metadata": {"name": namespace, "labels": labels}})
    try:
        cluster.core.create_namespaced_pod(namespace, pod, dry_run="All")  # admitted
        # And the level is enforced: the same pod running as root with privilege escalation is not.
        loose = copy.deepcopy(pod)
        loose["spec"]["securityContext"] = {}
        loose["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": True}
        with pytest.raises(ApiException) as refused:
            cluster.core.create_namespaced_pod(namespace, loose, dry_run="All")
        message = json.loads(refused.value.body or "{}").get("message", "")
        assert refused.value.status == 403 and 'violates PodSecurity "restricted' in message, message
    finally:
        cluster.core.delete_namespace(namespace)


def test_the_liveness_endpoint_answers_while_the_operator_runs(cluster: KubeCluster, namespace: str) -> None:
    port = free_port()
    # Its own empty namespace, so it never acts on the jobs the session's operator runs.
    command = [
        sys.executable,
        "-m",
        "aitj",
        "run",
        f"--kubeconfig={cluster.kubeconfig}",
        "--metrics-port=0",
        f"--namespace={namespace}",
        f"--liveness=http://127.0.0.1:{port}/healthz",
    ]
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            wait_for(lambda: _status(f"http://127.0.0.1:{port}/healthz") == 200, 60, "/healthz answering 200")
        finally:
            proc.terminate()
            proc.wait(30)


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
