"""crds/aitrainingjobs.yaml: generated, structural, and in step with the model (aitj/core/api/).

The apiserver's own verdict on the CRD is in tests/e2e/test_crd.py; these checks need no cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aitj.core import api, exitcodes
from aitj.core.api import parse_job

REPO = Path(__file__).resolve().parents[2]
CRD_PATH = REPO / "crds" / "aitrainingjobs.yaml"
CRD = yaml.safe_load(CRD_PATH.read_text())
VERSION = CRD["spec"]["versions"][0]
ROOT = VERSION["schema"]["openAPIV3Schema"]
SPEC = ROOT["properties"]["spec"]
REPLICA = SPEC["properties"]["replicaSpecs"]["additionalProperties"]
RULE = REPLICA["properties"]["faultTolerantPolicy"]["items"]
STATUS = ROOT["properties"]["status"]
TEMPLATE = REPLICA["properties"]["template"]


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """nodes yields every schema node with its path, template included."""
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}.*")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}[]")


def test_the_committed_crd_is_what_the_generator_writes() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen_crd.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 2:
        pytest.skip(f"the Kubernetes OpenAPI document is not on this machine: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr


def test_the_crd_names_the_seed_group_kind_and_short_name() -> None:
    assert CRD["metadata"]["name"] == "aitrainingjobs.kongming.cce.baiudbce.com"
    names = CRD["spec"]["names"]
    assert (CRD["spec"]["group"], names["kind"], names["plural"]) == (api.GROUP, api.KIND, api.PLURAL)
    assert names["shortNames"] == ["aitj"]
    assert {"all", "aitj"} <= set(names["categories"])
    assert (VERSION["name"], VERSION["served"], VERSION["storage"]) == ("v1", True, True)


def test_nothing_in_the_schema_preserves_unknown_fields() -> None:
    assert "x-kubernetes-preserve-unknown-fields" not in CRD_PATH.read_text()


def test_every_node_is_structural_typed() -> None:
    untyped = [p for p, n in nodes(ROOT) if "type" not in n and not n.get("x-kubernetes-int-or-string")]
    assert untyped == []


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        pytest.param(SPEC, "spec", id="every field of spec has a description"),
        pytest.param(STATUS, "status", id="every field of status has a description"),
    ],
)
def test_our_fields_are_described(schema: dict[str, Any], where: str) -> None:
    missing = [
        f"{where}{p}"
        for p, node in nodes(schema)
        if ".template" not in p and not p.endswith(("[]", ".*")) and not node.get("description")
    ]
    assert missing == []


def test_the_template_is_a_pod_template_that_needs_a_container() -> None:
    pod = TEMPLATE["properties"]["spec"]
    assert TEMPLATE["required"] == ["spec"]
    assert pod["properties"]["containers"]["minItems"] == 1
    assert pod["properties"]["containers"]["x-kubernetes-list-map-keys"] == ["name"]
    assert set(TEMPLATE["properties"]["metadata"]["properties"]) >= {"labels", "annotations"}
    limits = pod["properties"]["containers"]["items"]["properties"]["resources"]["properties"]["limits"]
    assert limits["additionalProperties"]["x-kubernetes-int-or-string"] is True


def test_the_crd_stays_small_enough_for_a_client_side_kubectl_apply() -> None:
    # kubectl apply keeps the object in an annotation, and annotations are limited to 256 KiB.
    assert len(json.dumps(CRD, separators=(",", ":"))) < 256 * 1024 - 16 * 1024
    assert CRD_PATH.stat().st_size < 1024 * 1024


def test_scale_drives_the_trainer_replica() -> None:
    assert VERSION["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicaSpecs.trainer.replicas",
        "statusReplicasPath": ".status.trainerReplicas",
        "labelSelectorPath": ".status.selector",
    }
    assert "status" in VERSION["subresources"]


def test_printer_columns_tell_the_story() -> None:
    columns = [c["name"] for c in VERSION["additionalPrinterColumns"] if not c.get("priority")]
    assert columns == ["Phase", "Trainers", "Desired", "Restarts", "Degraded", "Age"]


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(
            SPEC["properties"]["completePolicy"], [p.value for p in api.JOB_POLICIES], id="job policies"
        ),
        pytest.param(
            REPLICA["properties"]["completePolicy"], [p.value for p in api.Policy], id="replica policies"
        ),
        pytest.param(
            SPEC["properties"]["cleanPodPolicy"], [p.value for p in api.CleanPodPolicy], id="cleanPodPolicy"
        ),
        pytest.param(
            REPLICA["properties"]["restartPolicy"], [p.value for p in api.RestartPolicy], id="restartPolicy"
        ),
        pytest.param(
            REPLICA["properties"]["restartScope"], [p.value for p in api.REPLICA_SCOPES], id="restartScope"
        ),
        pytest.param(
            RULE["properties"]["restartScope"],
            [p.value for p in api.RestartScope],
            id="a rule's restartScope",
        ),
        pytest.param(
            RULE["properties"]["restartPolicy"], ["ExitCode", "OnNodeFail"], id="a rule's restartPolicy"
        ),
        pytest.param(STATUS["properties"]["phase"], [p.value for p in api.Phase], id="phases"),
    ],
)
def test_enums_are_the_models(node: dict[str, Any], expected: list[str]) -> None:
    assert node["enum"] == expected


# The CRD's defaults, read from the CRD, and the model's attribute that must hold the same value.
DEFAULTED = {
    ("spec", "faultTolerant"): lambda job: job.spec.fault_tolerant,
    ("spec", "suspend"): lambda job: job.spec.suspend,
    ("spec", "completePolicy"): lambda job: job.spec.complete_policy,
    ("spec", "failPolicy"): lambda job: job.spec.fail_policy,
    ("spec", "cleanPodPolicy"): lambda job: job.spec.clean_pod_policy,
    ("replica", "replicaType"): lambda job: job.spec.replicas[0].replica_type,
    ("replica", "replicas"): lambda job: job.spec.replicas[0].replicas,
    ("replica", "completePolicy"): lambda job: job.spec.replicas[0].complete_policy,
    ("replica", "failPolicy"): lambda job: job.spec.replicas[0].fail_policy,
    ("replica", "restartPolicy"): lambda job: job.spec.replicas[0].restart_policy,
    ("replica", "restartScope"): lambda job: job.spec.replicas[0].restart_scope,
    ("replica", "restartTimeLimit"): lambda job: job.spec.replicas[0].restart_time_limit,
    ("replica", "scaleTimeout"): lambda job: job.spec.replicas[0].scale_timeout,
}


def crd_defaults() -> dict[tuple[str, str], Any]:
    found = {}
    for level, schema in (("spec", SPEC), ("replica", REPLICA)):
        for name, node in schema["properties"].items():
            if "default" in node:
                found[(level, name)] = node["default"]
    return found


def test_the_model_defaults_every_field_the_crd_defaults() -> None:
    assert set(crd_defaults()) == set(DEFAULTED)


@pytest.mark.parametrize(("level", "name"), sorted(DEFAULTED))
def test_a_default_is_the_same_in_the_crd_and_the_model(level: str, name: str) -> None:
    job = parse_job(
        {
            "metadata": {"name": "tiny"},
            "spec": {"replicaSpecs": {"trainer": {"template": {"spec": {"containers": [{"name": "c"}]}}}}},
        }
    )
    assert DEFAULTED[(level, name)](job) == crd_defaults()[(level, name)]


@pytest.mark.parametrize(
    ("pattern", "where"),
    [
        pytest.param(exitcodes.LIST_PATTERN, "exitCodes", id="the exitCodes regex is exitcodes.LIST_PATTERN"),
        pytest.param(
            api.EVENTS_PATTERN, "exceptionalEvent", id="the exceptionalEvent regex is api.EVENTS_PATTERN"
        ),
    ],
)
def test_cel_rules_use_the_models_patterns(pattern: str, where: str) -> None:
    rules = " ".join(r["rule"] for r in RULE["properties"][where]["x-kubernetes-validations"])
    literal = "'" + pattern.replace("\\", "\\\\").replace("'", "\\'") + "'"
    assert literal in rules


@pytest.mark.parametrize(
    ("node", "bound", "value"),
    [
        pytest.param(
            SPEC["properties"]["replicaSpecs"], "maxProperties", api.MAX_REPLICA_SPECS, id="replica specs"
        ),
        pytest.param(REPLICA["properties"]["faultTolerantPolicy"], "maxItems", api.MAX_RULES, id="rules"),
        pytest.param(
            RULE["properties"]["exitCodes"], "maxLength", exitcodes.MAX_LENGTH, id="exitCodes length"
        ),
        pytest.param(
            RULE["properties"]["exceptionalEvent"], "maxLength", api.MAX_EVENTS_LENGTH, id="events length"
        ),
        pytest.param(REPLICA["properties"]["replicas"], "maximum", api.MAX_REPLICAS, id="replicas"),
        pytest.param(
            STATUS["properties"]["conditions"], "maxItems", api.MAX_STATUS_CONDITIONS, id="conditions"
        ),
    ],
)
def test_bounds_that_keep_cel_within_budget_are_the_models(
    node: dict[str, Any], bound: str, value: int
) -> None:
    assert node[bound] == value
