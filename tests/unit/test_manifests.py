"""The install: manifests/ (kustomize), the Dockerfile and the lock files, read as files.

kubectl applies the overlays on the real control plane in tests/e2e/test_manifests.py; here
are the properties a reader would otherwise have to check by eye: no wildcard in any RBAC rule,
the single-namespace Role in step with the ClusterRole, the Deployment's hardening, the image
built from the lock file, and every dependency locked.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.markers import Marker

from tests.seeds import REPO

MANIFESTS = REPO / "manifests"
COMPONENTS = ("single-namespace", "monitoring", "ha")
RBAC_KEYS = ("verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs")


def documents() -> Iterator[tuple[Path, Any]]:
    """documents: every YAML document under manifests/ but the examples, and every kustomize
    patch inside a kustomization.yaml, parsed."""
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        if "examples" in path.parts:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            yield path, doc
            for patch in (doc or {}).get("patches") or []:
                if "patch" in patch:
                    yield path, yaml.safe_load(patch["patch"])


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def base(kind: str, name: str = "aitj-operator") -> dict[str, Any]:
    for _, doc in documents():
        if isinstance(doc, dict) and doc.get("kind") == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"no {kind} {name} in manifests/")


def test_no_rbac_rule_anywhere_in_the_manifests_holds_a_wildcard() -> None:
    rules = 0
    for path, doc in documents():
        for node in walk(doc):
            if "verbs" in node:
                rules += 1
                for key in RBAC_KEYS:
                    assert "*" not in (node.get(key) or []), f"{path}: wildcard in {key}: {node}"
    assert rules >= 10  # the ClusterRole's, the Role's and the overlay's patch were all read


def test_the_install_builds_on_the_base_and_the_base_on_the_generated_crd() -> None:
    kustomizations = {
        p.parent.name: yaml.safe_load(p.read_text()) for p in MANIFESTS.glob("*/kustomization.yaml")
    }
    assert set(kustomizations) == {"base", "cluster-wide", *COMPONENTS}
    assert "../../crds" in kustomizations["base"]["resources"]
    assert kustomizations["cluster-wide"]["resources"] == ["../base"]
    assert yaml.safe_load((REPO / "crds" / "Kustomization").read_text())["resources"] == [
        "aitrainingjobs.yaml"
    ]


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_choice_is_a_component_that_adds_to_the_base_and_refuses_to_build_alone(component: str) -> None:
    kustomization = yaml.safe_load((MANIFESTS / component / "kustomization.yaml").read_text())
    assert (kustomization["apiVersion"], kustomization["kind"]) == (
        "kustomize.config.k8s.io/v1alpha1",
        "Component",
    )
    # Combining components must not bring the base twice.
    assert not any(r.startswith("..") for r in kustomization["resources"]), kustomization["resources"]
    # Alone it fails (nothing selected by the Deployment) instead of applying a part of an install.
    (guard, *_) = kustomization["replacements"]
    assert guard["source"] == {
        "kind": "Deployment",
        "name": "aitj-operator",
        "fieldPath": "metadata.namespace",
    }


def test_the_single_namespace_role_holds_exactly_the_namespaced_rules_of_the_cluster_role() -> None:
    cluster_scoped = {"nodes", "customresourcedefinitions", "tokenreviews", "subjectaccessreviews"}
    namespaced = [r for r in base("ClusterRole")["rules"] if not cluster_scoped & set(r["resources"])]
    assert base("Role")["rules"] == namespaced


def test_the_cluster_role_grants_pod_disruption_budgets_and_the_job_status() -> None:
    grants = {
        (g, r, v)
        for rule in base("ClusterRole")["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    for verb in ("create", "delete", "list"):
        assert ("policy", "poddisruptionbudgets", verb) in grants
    # Listed every 30 s, never watched (aitj.controller.cache.RELISTED): no right it does not use.
    assert ("policy", "poddisruptionbudgets", "watch") not in grants
    assert ("kongming.cce.baiudbce.com", "aitrainingjobs/status", "patch") in grants
    assert not any(v in ("escalate", "bind", "impersonate") for _, _, v in grants)


def test_the_deployment_runs_hardened_with_a_liveness_probe_on_kopfs_health_endpoint() -> None:
    pod = base("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert f"--liveness=http://0.0.0.0:{ports['health']}/healthz" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert f"--metrics-port={ports['metrics']}" in container["args"]
    assert set(container["resources"]) == {"requests", "limits"}
    assert base("Service", "aitj-operator-metrics")["spec"]["ports"][0]["targetPort"] == "metrics"


def stages(dockerfile: str) -> list[str]:
    return re.split(r"^FROM ", dockerfile, flags=re.M)[1:]


def test_the_image_is_multi_stage_non_root_and_installs_from_the_lock_file() -> None:
    text = (REPO / "Dockerfile").read_text()
    build, final = stages(text)
    assert "--require-hashes" in build and "requirements.lock" in build
    assert re.search(r"^USER 65532:65532$", final, re.M)
    assert "pip install" not in final and "apt-get" not in text and ":latest" not in text
    assert "COPY --from=build /opt/aitj /opt/aitj" in final
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim", text, re.M)
    ignored = (REPO / ".dockerignore").read_text().splitlines()
    assert ignored[1:5] == ["*", "!requirements.lock", "!pyproject.toml", "!README.md"]


# The Python the project runs on; a universal lock may pin a package twice, once per marker.
PYTHON_311 = {"python_version": "3.11", "python_full_version": "3.11.7"}


def pins(lock: str) -> dict[str, str]:
    """pins: the version each package is pinned at for Python 3.11 (every line pins one, with
    its hashes; a package pinned twice differs by environment marker)."""
    text = (REPO / lock).read_text()
    found = re.findall(r"^([A-Za-z0-9_.-]+)==([^ \\\n;]+)(?: ; ([^\\\n]+))?", text, re.M)
    requirements = [line for line in text.splitlines() if line[:1].isalnum()]
    assert len(requirements) == len(found) and text.count("--hash=sha256:") >= len(found), lock
    return {
        re.sub(r"[-_.]+", "-", name).lower(): version
        for name, version, marker in found
        if not marker or Marker(marker.strip()).evaluate(PYTHON_311)
    }


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]).lower() for r in requirements}


@pytest.mark.parametrize(
    ("lock", "extras"),
    [
        pytest.param("requirements.lock", (), id="the runtime lock holds every runtime dependency"),
        pytest.param(
            "requirements-test.lock",
            ("test", "bench"),
            id="the test lock holds them and the tools",
        ),
    ],
)
def test_every_dependency_in_pyproject_is_locked_run_make_lock_after_adding_one(
    lock: str, extras: tuple[str, ...]
) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = requirement_names(project["dependencies"])
    for extra in extras:
        wanted |= requirement_names(project["optional-dependencies"][extra])
    assert wanted - set(pins(lock)) == set()


def test_the_test_lock_pins_the_runtime_packages_at_the_runtime_locks_versions() -> None:
    runtime, test = pins("requirements.lock"), pins("requirements-test.lock")
    assert {name: test.get(name) for name in runtime} == runtime


# --- privilege (issue 24, section 5) -------------------------------------------------------------


def test_the_deployment_serves_metrics_over_https_and_pulls_its_image_always() -> None:
    (container,) = base("Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--metrics-secure" in container["args"] and "--metrics-insecure" not in container["args"]
    # A moving tag from a node's cache could be stale or planted; with a digest, Always is cheap.
    assert container["imagePullPolicy"] == "Always"
    (image,) = yaml.safe_load((MANIFESTS / "base" / "kustomization.yaml").read_text())["images"]
    assert image["newName"] == "registry.aitj.local/aitj", "the local cluster's image, not a bare aitj:dev"


def test_the_operators_namespace_enforces_the_restricted_pod_security_level() -> None:
    labels = base("Namespace", "aitj-system")["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"


def test_the_operator_may_review_tokens_and_access_and_prometheus_may_get_metrics() -> None:
    rules = base("ClusterRole")["rules"]
    assert {
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["tokenreviews"],
        "verbs": ["create"],
    } in rules
    assert {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    } in rules
    assert base("ClusterRole", "aitj-metrics-reader")["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]
    endpoint = base("ServiceMonitor")["spec"]["endpoints"][0]
    assert endpoint["scheme"] == "https" and endpoint["bearerTokenFile"].endswith("serviceaccount/token")
    policy = base("NetworkPolicy", "aitj-operator-metrics")["spec"]
    assert policy["podSelector"] == base("Deployment")["spec"]["selector"]
    assert [p["port"] for rule in policy["ingress"] for p in rule["ports"]] == ["metrics"]


def test_the_pod_template_policy_is_shipped_in_the_base_and_on_for_every_namespace_not_exempt() -> None:
    resources = yaml.safe_load((MANIFESTS / "base" / "kustomization.yaml").read_text())["resources"]
    assert "admission-policy.yaml" in resources
    binding = base("ValidatingAdmissionPolicyBinding", "aitj-pod-templates")["spec"]
    assert binding["policyName"] == "aitj-pod-templates" and binding["validationActions"] == ["Deny"]
    (expression,) = binding["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expression == {
        "key": "aitj.kongming.cce.baiudbce.com/pod-template-policy",
        "operator": "NotIn",
        "values": ["exempt"],
    }


def test_the_image_keeps_no_pip_of_its_base() -> None:
    _, final = stages((REPO / "Dockerfile").read_text())
    assert "python -m pip uninstall --yes pip" in final
    assert "! python -c 'import pip'" in final and "/usr/share/python-wheels/pip-*.whl" in final


def documented_grants() -> set[tuple[str, str, str]]:
    """documented_grants: (group, resource, verb) of docs/security.md's RBAC table; a row with an
    empty group and resource continues the one above."""
    text = (REPO / "docs" / "security.md").read_text()
    table = text.split("| API group | resource | verbs | why |", 1)[1].split("\n\n", 1)[0]
    out: set[tuple[str, str, str]] = set()
    group = resources = ""
    for line in table.strip().splitlines()[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        group, resources = (cells[0].strip('"'), cells[1]) if cells[1] else (group, resources)
        for resource in resources.split(", "):
            out |= {(group, resource, verb) for verb in cells[2].split(", ")}
    return out


def test_the_security_docs_rbac_table_is_the_cluster_role_verb_by_verb() -> None:
    granted = {
        (g, r, v)
        for rule in base("ClusterRole")["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert documented_grants() == granted


# --- tenants' roles (issue 27) -----------------------------------------------------------------


def test_aitrainingjobs_are_readable_by_view_and_writable_by_edit_and_admin_by_aggregation() -> None:
    view, edit = base("ClusterRole", "aitj-view"), base("ClusterRole", "aitj-edit")
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    assert {k for k, v in view["metadata"]["labels"].items() if v == "true"} == {
        aggregate + "view",
        aggregate + "edit",
        aggregate + "admin",
    }
    assert {k for k, v in edit["metadata"]["labels"].items() if v == "true"} == {
        aggregate + "edit",
        aggregate + "admin",
    }
    assert {v for rule in view["rules"] for v in rule["verbs"]} == {"get", "list", "watch"}
    writes = {(r, v) for rule in edit["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert {("aitrainingjobs", v) for v in ("create", "update", "patch", "delete")} <= writes
    assert {("aitrainingjobs/scale", "update"), ("aitrainingjobs/scale", "patch")} <= writes
    assert not any(r == "aitrainingjobs/status" for r, _ in writes), "only the operator writes status"
