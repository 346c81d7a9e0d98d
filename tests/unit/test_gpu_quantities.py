"""A GPU quantity plugin.discovery cannot count is refused by the model, naming the field
(issue 24, section 3): before, ``nvidia.com/gpu: "1.5"`` with discovery was admitted and every
pass of the job raised ValueError while rendering its host list. The apiserver cannot refuse it
at admission (a CEL rule over the PodSpec's unbounded lists is over the cost budget:
docs/api.md, "Checks only the model makes"); the job fails InvalidSpec instead
(tests/invalid_manifests.py's MODEL_ONLY case, run end to end by tests/e2e/test_lifecycle.py)."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core.api import InvalidJob, parse_job
from aitj.core.api.validation import _GPU_RESOURCE
from aitj.core.render import is_gpu_resource
from tests.seeds import seed_job

T = "spec.replicaSpecs.trainer.template.spec.containers[0].resources"


def job(resource: str, value: Any, kind: str = "limits", discovery: bool = True) -> dict[str, Any]:
    doc = seed_job()
    doc["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]["containers"][0]["resources"] = {
        kind: {resource: value}
    }
    if not discovery:
        del doc["spec"]["plugin"]["discovery"]
    return doc


def refused(doc: dict[str, Any]) -> list[str]:
    try:
        parse_job(doc)
    except InvalidJob as e:
        return [f"{x.path}: {x.message}" for x in e.errors]
    return []


@pytest.mark.parametrize(
    ("resource", "value", "kind"),
    [
        pytest.param("nvidia.com/gpu", "1.5", "limits", id="a fraction of a GPU"),
        pytest.param("nvidia.com/gpu", "500m", "requests", id="a milli-GPU, as a request"),
        pytest.param("nvidia.com/gpu", "1000m", "limits", id="a whole GPU written in millis: no slot count"),
        pytest.param("nvidia.com/gpu", "-1", "limits", id="a negative count"),
        pytest.param("baidu.com/v100_32g_cgpu", "0.5", "limits", id="a fraction of a shared CCE card"),
    ],
)
def test_a_gpu_quantity_discovery_cannot_count_is_refused_naming_the_field(
    resource: str, value: Any, kind: str
) -> None:
    (error,) = refused(job(resource, value, kind))
    assert error.startswith(f"{T}.{kind}[{resource}]: [GPU quantity]"), error
    assert repr(value).strip("'") in error


@pytest.mark.parametrize(
    ("resource", "value", "discovery"),
    [
        pytest.param("nvidia.com/gpu", "2", True, id="whole GPUs as a string"),
        pytest.param("nvidia.com/gpu", 4, True, id="whole GPUs as a number"),
        pytest.param("baidu.com/v100_32g_cgpu_core", "20", True, id="a card's core share is not counted"),
        pytest.param("baidu.com/v100_32g_cgpu_memory", "1.5", True, id="nor its memory share"),
        pytest.param("nvidia.com/gpu", "1.5", False, id="without discovery, pod validation says it"),
    ],
)
def test_what_discovery_counts_well_or_does_not_count_is_taken(
    resource: str, value: Any, discovery: bool
) -> None:
    assert refused(job(resource, value, discovery=discovery)) == []


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu",
        "baidu.com/v100_32g_cgpu",
        "baidu.com/a-1.b_cgpu",
        "baidu.com/v100_cgpu_core",
        "amd.com/gpu",
        "cpu",
    ],
)
def test_the_model_counts_the_gpu_names_discovery_counts(name: str) -> None:
    assert bool(_GPU_RESOURCE.fullmatch(name)) is is_gpu_resource(name)
