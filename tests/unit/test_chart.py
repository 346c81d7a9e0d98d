"""charts/aitj read by Helm itself (built by ``make build-cluster`` from the Go module proxy):
``helm lint`` and ``helm template`` for each choice of values.

The chart's objects are the kustomize install's (tests/e2e/test_chart.py compares the two for
each combination of components); here are the values' effects a reader would otherwise check
by eye, and the copies the chart takes from the repository (hack/gen_chart.py --check). Helm
missing fails every test here with what to run: a chart nobody lints is how charts rot.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aitj.cli.run import run_operator
from aitj.devcluster.versions import BUILT, HELM_COMPONENT, helm_binary
from tests.seeds import REPO

CHART = REPO / "charts" / "aitj"
NAMESPACE = "aitj-system"
# The values of each choice the kustomize components make (and the rest of values.yaml).
CHOICES: dict[str, list[str]] = {
    "defaults": [],
    "single-namespace": ["--set", "watchNamespaces={training,research}"],
    "ha": ["--set", "highAvailability.enabled=true"],
    "monitoring": ["--set", "monitoring.enabled=true"],
    "ha+monitoring+single-namespace": [
        "--set",
        "highAvailability.enabled=true,monitoring.enabled=true,watchNamespaces={training}",
    ],
    "node health, priorities, sizes, image": [
        "--set",
        "nodeHealth.faultConditions={KernelDeadlock=True},nodeHealth.faultTaints={example.com/gpu-xid}",
        "--set",
        "jobPriorityClasses.high=train-high,jobPriorityClasses.low=train-low,priorityClassName=aitj-critical",
        "--set",
        "resources.limits.memory=2Gi,image.repository=registry.example.com/aitj,image.tag=1.2.3",
        "--set",
        "image.pullPolicy=IfNotPresent",
    ],
}


def helm(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """helm runs the built helm, or fails the test saying how to build it."""
    if not helm_binary().exists():
        pytest.fail(
            f"helm is not built ({helm_binary()} is missing): run `make build-cluster` "
            "(it builds Helm from the Go module proxy into ~/.cache/aitj, about 90 s)",
            pytrace=False,
        )
    return subprocess.run(
        [str(helm_binary()), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def render(*values: str) -> dict[tuple[str, str], Any]:
    """render: ``helm template`` of the chart into aitj-system, by (kind, name) (namespaced
    objects of another namespace as (kind, "namespace/name"))."""
    out = helm("template", "aitj", CHART, "--namespace", NAMESPACE, *values)
    assert out.returncode == 0, out.stderr
    objects: dict[tuple[str, str], Any] = {}
    for doc in yaml.safe_load_all(out.stdout):
        if doc:
            meta = doc["metadata"]
            name = (
                meta["name"]
                if meta.get("namespace") in (None, NAMESPACE)
                else f"{meta['namespace']}/{meta['name']}"
            )
            assert (doc["kind"], name) not in objects, (doc["kind"], name)
            objects[doc["kind"], name] = doc
    return objects


def container(objects: dict[tuple[str, str], Any]) -> Any:
    (only,) = objects["Deployment", "aitj-operator"]["spec"]["template"]["spec"]["containers"]
    return only


def test_helm_is_built_with_the_control_plane_from_the_go_module_proxy() -> None:
    assert HELM_COMPONENT in BUILT
    assert HELM_COMPONENT.packages == ("helm.sh/helm/v3/cmd/helm",)
    assert "helm.sh/helm/v3 " + HELM_COMPONENT.version in (HELM_COMPONENT.module_dir / "go.mod").read_text()


def test_the_chart_holds_current_copies_of_the_crd_and_the_generated_manifests() -> None:
    checked = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen_chart.py"), "--check"], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("values", CHOICES.values(), ids=CHOICES.keys())
def test_helm_lint_passes_strictly(values: list[str]) -> None:
    linted = helm("lint", "--strict", CHART, *values)
    assert linted.returncode == 0, linted.stdout + linted.stderr


@pytest.mark.parametrize("values", CHOICES.values(), ids=CHOICES.keys())
def test_every_argument_the_chart_gives_the_operator_is_an_option_of_aitj_run(values: list[str]) -> None:
    args = container(render(*values))["args"]
    assert args[0] == "run"
    run_operator.make_context("run", list(args[1:]))  # raises on an unknown option or a bad value


def test_the_defaults_are_the_cluster_wide_install_with_the_local_clusters_image() -> None:
    objects = render()
    deployment = objects["Deployment", "aitj-operator"]["spec"]
    assert deployment["replicas"] == 1 and deployment["strategy"] == {"type": "Recreate"}
    assert container(objects)["image"] == "registry.aitj.local/aitj:dev"
    assert container(objects)["imagePullPolicy"] == "Always"
    rules = yaml.safe_load((REPO / "manifests" / "base" / "clusterrole.yaml").read_text())["rules"]
    assert objects["ClusterRole", "aitj-operator"]["rules"] == rules
    kinds = {kind for kind, _ in objects}
    assert not kinds & {"Role", "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule", "NetworkPolicy"}
    assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds
    assert {("ClusterRole", "aitj-view"), ("ClusterRole", "aitj-edit")} <= set(objects)
    assert "Namespace" not in kinds  # the release's namespace is made before the install


def test_listed_namespaces_get_a_role_each_and_the_cluster_role_keeps_only_cluster_scoped_rules() -> None:
    objects = render(*CHOICES["single-namespace"])
    rules = yaml.safe_load((REPO / "manifests" / "single-namespace" / "role.yaml").read_text())["rules"]
    for ns in ("training", "research"):
        assert objects["Role", f"{ns}/aitj-operator"]["rules"] == rules
        (subject,) = objects["RoleBinding", f"{ns}/aitj-operator"]["subjects"]
        assert (subject["name"], subject["namespace"]) == ("aitj-operator", NAMESPACE)
    cluster_wide = {r for rule in objects["ClusterRole", "aitj-operator"]["rules"] for r in rule["resources"]}
    assert cluster_wide == {"nodes", "tokenreviews", "subjectaccessreviews"}
    args = container(objects)["args"]
    assert "--namespace=training" in args and "--namespace=research" in args


def test_high_availability_runs_two_electing_replicas_on_different_nodes_under_a_budget() -> None:
    objects = render(*CHOICES["ha"])
    deployment = objects["Deployment", "aitj-operator"]["spec"]
    assert deployment["replicas"] == 2 and deployment["strategy"]["type"] == "RollingUpdate"
    assert "--leader-elect" in container(objects)["args"]
    (term,) = deployment["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["labelSelector"] == deployment["selector"]
    assert objects["PodDisruptionBudget", "aitj-operator"]["spec"]["maxUnavailable"] == 1
    role = yaml.safe_load((REPO / "manifests" / "ha" / "role.yaml").read_text())
    assert objects["Role", "aitj-operator-leader-election"]["rules"] == role["rules"]


def test_monitoring_carries_the_release_label_kube_prometheus_stack_selects_by() -> None:
    objects = render(*CHOICES["monitoring"])
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert objects[kind, "aitj-operator"]["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    mine = render(*CHOICES["monitoring"], "--set", "monitoring.release=prom")
    assert mine["ServiceMonitor", "aitj-operator"]["metadata"]["labels"]["release"] == "prom"
    none = render(*CHOICES["monitoring"], "--set", "monitoring.release=")
    assert "release" not in none["PrometheusRule", "aitj-operator"]["metadata"]["labels"]
    dashboards = objects["ConfigMap", "aitj-dashboards"]
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"
    generated = yaml.safe_load((REPO / "manifests" / "monitoring" / "dashboards-configmap.yaml").read_text())
    assert dashboards["data"] == generated["data"]
    service = objects["Service", "aitj-operator-metrics"]["metadata"]
    assert service["annotations"]["prometheus.io/scrape"] == "true"
    (subject,) = objects["ClusterRoleBinding", "aitj-metrics-reader"]["subjects"]
    assert (subject["name"], subject["namespace"]) == ("kube-prometheus-stack-prometheus", "monitoring")


def runbooks(objects: dict[tuple[str, str], Any]) -> list[str]:
    groups = objects["PrometheusRule", "aitj-operator"]["spec"]["groups"]
    return [rule["annotations"]["runbook_url"] for group in groups for rule in group["rules"]]


def test_the_runbook_urls_point_at_the_base_given_with_each_alerts_anchor() -> None:
    generated = runbooks(render(*CHOICES["monitoring"]))
    rule = yaml.safe_load((REPO / "manifests" / "monitoring" / "prometheusrule.yaml").read_text())
    assert generated == [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
    base = "https://docs.example.com/aitj/runbooks"
    moved = runbooks(render(*CHOICES["monitoring"], "--set", f"monitoring.runbookBaseURL={base}"))
    assert moved == [f"{base}#{url.rsplit('#', 1)[1]}" for url in generated] and len(moved) >= 7


def test_node_health_job_priorities_sizes_and_the_image_are_values() -> None:
    objects = render(*CHOICES["node health, priorities, sizes, image"])
    operator = container(objects)
    assert {
        "--node-fault-condition=KernelDeadlock=True",
        "--node-fault-taint=example.com/gpu-xid",
        "--priority-class=high=train-high",
        "--priority-class=low=train-low",
    } <= set(operator["args"])
    assert not any(a.startswith("--priority-class=normal") for a in operator["args"])
    pod = objects["Deployment", "aitj-operator"]["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "aitj-critical"
    assert operator["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert (
        operator["image"] == "registry.example.com/aitj:1.2.3"
        and operator["imagePullPolicy"] == "IfNotPresent"
    )
    pinned = container(render("--set", "image.digest=sha256:" + "a" * 64))
    assert pinned["image"] == "registry.aitj.local/aitj@sha256:" + "a" * 64


def test_the_crd_ships_in_the_charts_crds_folder_as_helm_installs_crds() -> None:
    (copy,) = (CHART / "crds").iterdir()
    crd = yaml.safe_load(copy.read_text())
    assert crd == yaml.safe_load((REPO / "crds" / "aitrainingjobs.yaml").read_text())
    shown = helm("show", "crds", CHART)
    assert shown.returncode == 0 and "name: aitrainingjobs.kongming.cce.baiudbce.com" in shown.stdout


def test_the_templates_read_every_copied_file_and_no_other() -> None:
    held = {str(p.relative_to(CHART)) for p in (CHART / "files").iterdir()}
    read = {
        m
        for path in (CHART / "templates").iterdir()
        for m in re.findall(r'"(files/[a-z-]+\.yaml)"', path.read_text())
    }
    assert read == held


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param(
            "highAvailability.enable=true", "additional properties 'enable' not allowed", id="a misspelt key"
        ),
        pytest.param(
            "image.digest=abc", "'/image/digest': 'abc' does not match", id="a digest that is not sha256"
        ),
        pytest.param(
            "nodeHealth.faultConditions={KernelDeadlock}",
            "'KernelDeadlock' does not match",
            id="a condition without its status",
        ),
        pytest.param(
            "watchNamespaces={Training}",
            "'Training' does not match",
            id="a namespace name Kubernetes refuses",
        ),
    ],
)
def test_values_the_operator_could_not_run_with_are_refused_by_the_charts_schema(
    value: str, said: str
) -> None:
    refused = helm("template", "aitj", CHART, "--set", value)
    assert refused.returncode != 0 and said in refused.stderr, refused.stderr
