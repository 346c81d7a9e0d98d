"""charts/aitj and ``make release`` on a control plane of their own (the install's cluster-scoped
objects would collide with the RBAC the session's operator runs under):

- for each of the 8 combinations of the kustomize components, ``helm template`` with the matching values
  gives the objects ``kubectl kustomize`` gives (Helm's own labels and the release's namespace,
  which Helm does not create, aside), and they apply (server-side dry run);
- ``make release``'s manifests.yaml applies for real and its operator Deployment rolls out;
- ``helm install`` of the chart rolls the operator out (kwok runs its pod) in a namespace under
  the restricted Pod Security level, ``helm upgrade`` to high availability and monitoring runs
  two replicas on two nodes, and ``helm uninstall`` leaves the CRD (Helm's rule for crds/).

The operator's image runs for real from the chart in tests/e2e/real/test_chart_image.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aitj.devcluster.cluster import ClusterConfig, LocalCluster, free_base
from tests.clusters import KubeCluster
from tests.e2e import monitoring_crds
from tests.e2e.install import CHART, CRD_NAME, helm, kustomization
from tests.seeds import REPO
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
HELM_ONLY_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version")
# The release label as manifests/monitoring has it (none before issue 27's monitoring work).
RELEASE = yaml.safe_load((REPO / "manifests" / "monitoring" / "servicemonitor.yaml").read_text())["metadata"][
    "labels"
].get("release", "")
# Every combination of the components, each in the order the chart adds their arguments
# (--namespace before --leader-elect).
COMBINATIONS: dict[tuple[str, ...], list[str]] = {
    (): [],
    ("single-namespace",): ["--set", "watchNamespaces={training}"],
    ("ha",): ["--set", "highAvailability.enabled=true"],
    ("monitoring",): ["--set", f"monitoring.enabled=true,monitoring.release={RELEASE}"],
    ("single-namespace", "ha"): ["--set", "watchNamespaces={training},highAvailability.enabled=true"],
    ("single-namespace", "monitoring"): [
        "--set",
        f"watchNamespaces={{training}},monitoring.enabled=true,monitoring.release={RELEASE}",
    ],
    ("ha", "monitoring"): [
        "--set",
        f"highAvailability.enabled=true,monitoring.enabled=true,monitoring.release={RELEASE}",
    ],
    ("single-namespace", "ha", "monitoring"): [
        "--set",
        f"watchNamespaces={{training}},highAvailability.enabled=true,monitoring.enabled=true,monitoring.release={RELEASE}",
    ],
}


@pytest.fixture(scope="module")
def chart_cluster() -> Iterator[KubeCluster]:
    """chart_cluster: a local control plane with two kwok nodes (high availability's replicas
    need two), its namespaces aitj-system (restricted, as manifests/base makes it) and training."""
    local = LocalCluster(f"{os.environ.get('AITJ_TEST_CLUSTER', 'pytest')}-chart")
    local.down()  # a leftover from an interrupted run
    local.up(
        ClusterConfig(nodes=2, base_port=free_base(20443), gang=False), say=lambda m: print(m, flush=True)
    )
    cluster = KubeCluster(local.kubeconfig, local)
    try:
        namespace = yaml.safe_load((REPO / "manifests" / "base" / "namespace.yaml").read_text())
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(namespace))
        cluster.kubectl("create", "namespace", "training")
        monitoring_crds.install(cluster)
        yield cluster
    finally:
        local.down()


def documents(text: str) -> list[Any]:
    """documents: the YAML documents of ``text`` (libyaml's parser: the CRD alone is 340 kB)."""
    return [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc]


def objects(docs: list[Any]) -> dict[tuple[str, str | None, str], Any]:
    """objects: ``docs`` by (kind, namespace, name), without what only one of
    the two installs has: the Namespace (Helm installs into one made before), Helm's labels,
    and the part-of label kustomize adds to the CRD (the chart's crds/ holds the file as
    generated, which Helm does not template)."""
    out: dict[tuple[str, str | None, str], Any] = {}
    for doc in docs:
        if doc["kind"] == "Namespace":
            continue
        labels = doc["metadata"].get("labels") or {}
        for key in (*HELM_ONLY_LABELS, "helm.sh/chart"):
            labels.pop(key, None)
        if doc["kind"] == "CustomResourceDefinition":
            labels.pop("app.kubernetes.io/part-of", None)
        out[doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]] = doc
    return out


@pytest.mark.parametrize("components", COMBINATIONS, ids=lambda c: "+".join(("cluster-wide", *c)))
def test_the_chart_renders_the_kustomize_install_and_applies_for_each_combination_of_components(
    chart_cluster: KubeCluster, components: tuple[str, ...]
) -> None:
    rendered = helm(
        chart_cluster,
        "template",
        "aitj",
        CHART,
        "-n",
        "aitj-system",
        "--include-crds",
        *COMBINATIONS[components],
    )
    assert rendered.returncode == 0, rendered.stderr
    built = chart_cluster.kubectl("kustomize", str(kustomization(*components))).stdout
    docs = documents(rendered.stdout)
    chart, kustomized = objects(docs), objects(documents(built))
    assert sorted(chart, key=str) == sorted(kustomized, key=str)
    for key, expected in kustomized.items():
        assert chart[key] == expected, key
    # The CRD aside: its 340 kB dry run is the same for every combination (the next tests apply it).
    rest = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
    applied = chart_cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(rest), check=False
    )
    assert applied.returncode == 0, applied.stderr
    assert "deployment.apps/aitj-operator serverside-applied (server dry run)" in applied.stdout


def rolled_out(cluster: KubeCluster, namespace: str, replicas: int) -> None:
    cluster.kubectl("rollout", "status", "deployment/aitj-operator", "-n", namespace, "--timeout=60s")
    pods = cluster.core.list_namespaced_pod(namespace, label_selector="app.kubernetes.io/component=operator")
    running = [p for p in pods.items if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
    assert len(running) == replicas, [(p.metadata.name, p.status.phase) for p in pods.items]


def test_the_release_manifests_apply_and_roll_the_operator_out_with_the_image_of_the_version(
    chart_cluster: KubeCluster, tmp_path: Path
) -> None:
    made = subprocess.run(
        [sys.executable, str(REPO / "hack" / "release.py"), "--version", "0.9.1", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    manifests = tmp_path / "0.9.1" / "manifests.yaml"
    assert (tmp_path / "0.9.1" / "aitj-0.9.1.tgz").exists()
    applied = chart_cluster.kubectl("apply", "--server-side", "-f", str(manifests), check=False)
    assert applied.returncode == 0, applied.stderr
    try:
        rolled_out(chart_cluster, "aitj-system", 1)
        deployment = chart_cluster.kubectl(
            "get", "deployment/aitj-operator", "-n", "aitj-system", "-o", "yaml"
        )
        (container,) = yaml.safe_load(deployment.stdout)["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.aitj.local/aitj:0.9.1"
    finally:
        # The namespace stays (the chart's test installs into it); the rest goes, the CRD too.
        docs = [d for d in yaml.safe_load_all(manifests.read_text()) if d and d["kind"] != "Namespace"]
        chart_cluster.kubectl("delete", "-f", "-", "--wait=true", input=yaml.safe_dump_all(docs))


def test_helm_installs_upgrades_to_high_availability_and_monitoring_and_uninstalls(
    chart_cluster: KubeCluster,
) -> None:
    installed = helm(chart_cluster, "install", "aitj", CHART, "-n", "aitj-system", "--wait", "--timeout=90s")
    assert installed.returncode == 0, installed.stderr
    try:
        rolled_out(chart_cluster, "aitj-system", 1)
        assert chart_cluster.kubectl("get", "crd", CRD_NAME, check=False).returncode == 0
        upgraded = helm(
            chart_cluster,
            "upgrade",
            "aitj",
            CHART,
            "-n",
            "aitj-system",
            "--set",
            "highAvailability.enabled=true,monitoring.enabled=true",
            "--wait",
            "--timeout=90s",
        )
        assert upgraded.returncode == 0, upgraded.stderr
        rolled_out(chart_cluster, "aitj-system", 2)
        pods = chart_cluster.core.list_namespaced_pod(
            "aitj-system", label_selector="app.kubernetes.io/name=aitj"
        )
        assert len({p.spec.node_name for p in pods.items if not p.metadata.deletion_timestamp}) == 2
        for kind in ("poddisruptionbudget", "servicemonitor", "prometheusrule", "networkpolicy"):
            assert chart_cluster.kubectl("get", kind, "-n", "aitj-system", "-o", "name").stdout.strip(), kind
    finally:
        uninstalled = helm(chart_cluster, "uninstall", "aitj", "-n", "aitj-system", "--wait")
    assert uninstalled.returncode == 0, uninstalled.stderr
    wait_for(
        lambda: (
            not chart_cluster.kubectl(
                "get", "deployment,clusterrole", "-A", "-l", "app.kubernetes.io/name=aitj", "-o", "name"
            ).stdout.strip()
        ),
        30,
        "the release's objects gone",
    )
    # Helm never deletes what crds/ installed: jobs survive an uninstall (docs/quickstart.md).
    assert chart_cluster.kubectl("get", "crd", CRD_NAME, check=False).returncode == 0
