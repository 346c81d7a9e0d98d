"""What hostile input the apiserver lets through becomes (docs/semantics.md, "Input the
operator cannot run"): a pod create refused for good fails the job naming the template's field,
an unschedulable pod says why the job waits, and the status stays small for the largest job
admission allows. The end-to-end twin is tests/e2e/test_hostile_input.py."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings

from aitj.core.api import MAX_LISTED, MAX_REPLICAS, InvalidJob, parse_job
from aitj.core.planner import Plan, plan
from aitj.core.planner.lifecycle import MAX_MESSAGE, PodRefusal, plan_invalid, plan_refused
from aitj.core.planner.status import pod_list
from tests.manifest_strategies import Hostile, hostile_manifests
from tests.seeds import seed_job as seed_manifest
from tests.unit.builders import (
    T0,
    Cluster,
    Pod,
    as_json,
    at,
    nodes,
    seed_job,
    trainer,
    views,
    with_replica,
    with_status,
)

# The byte size a status may reach for a job of MAX_REPLICAS pods: etcd refuses objects past
# 1.5 MiB, and the job's spec shares the object with it.
STATUS_BUDGET = 512 * 1024
SCHEDULER_SAYS = (
    "0/4 nodes are available: 4 Insufficient cpu. no new claims to deallocate, preemption: 0/4 nodes "
    "are available: 4 Preemption is not helpful for scheduling."
)


def body() -> dict[str, Any]:
    doc = seed_manifest()
    doc["metadata"].update(uid="uid-1", resourceVersion="7")
    return doc


def refusal(
    code: int = 422, fields: tuple[str, ...] = ("spec.containers[0].image",), message: str = ""
) -> PodRefusal:
    said = message or 'Pod "p-0" is invalid: spec.containers[0].image: Required value'
    return PodRefusal("p-0", "trainer", code, said, fields)


def unschedulable(pod: Pod, message: str = SCHEDULER_SAYS) -> Pod:
    """unschedulable: the scheduler tried and could not place the pod."""
    pod.raw["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    ]
    return pod


def condition(result: Plan) -> dict[str, Any]:
    assert result.status is not None
    last: dict[str, Any] = as_json(result.status)["conditions"][-1]
    return last


# --- a pod the apiserver refuses ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("refused", "named"),
    [
        pytest.param(
            refusal(),
            "spec.replicaSpecs.trainer.template.spec.containers[0].image",
            id="a template without an image fails the job naming the image field",
        ),
        pytest.param(
            refusal(fields=("metadata.annotations", "metadata.annotations")),
            "spec.replicaSpecs.trainer.template.metadata.annotations: the apiserver",
            id="a field named by two causes is named once",
        ),
        pytest.param(
            refusal(400, fields=(), message="Pod in version v1 cannot be handled as a Pod"),
            "spec.replicaSpecs.trainer.template: the apiserver refused pod p-0",
            id="a pod the apiserver cannot decode names the template",
        ),
    ],
)
def test_a_pod_refused_for_good_fails_the_job_naming_the_field(refused: PodRefusal, named: str) -> None:
    result = plan_refused(body(), refused, T0)
    assert result is not None and result.status is not None
    assert as_json(result.status)["phase"] == "Failed"
    assert (condition(result)["reason"], condition(result)["status"]) == ("InvalidSpec", "True")
    assert named in condition(result)["message"]
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "InvalidSpec")]
    assert result.requeue_after == 0.0, "one more pass cleans up the pods already made"


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(403, id="a quota or policy refusal is retried"),
        pytest.param(429, id="throttling is retried"),
        pytest.param(404, id="a namespace not found yet is retried"),
    ],
)
def test_a_refusal_a_retry_may_get_past_does_not_fail_the_job(code: int) -> None:
    assert plan_refused(body(), refusal(code), T0) is None


def test_a_refusal_already_recorded_plans_nothing_and_asks_for_no_pass() -> None:
    doc = body()
    first = plan_refused(doc, refusal(), T0)
    assert first is not None
    doc["status"] = as_json(first.status)
    assert plan_refused(doc, refusal(), at(2)) == Plan()


def test_a_huge_message_is_cut_so_the_status_stays_small() -> None:
    huge = "metadata.annotations: Too long: " + "x" * 300_000
    result = plan_invalid(body(), huge, T0)
    message = condition(result)["message"]
    assert len(message) < MAX_MESSAGE + 40 and message.endswith(f"({len(huge)} characters)")


# --- a pod the scheduler cannot place -----------------------------------------------------------


def test_a_pod_view_keeps_the_scheduler_s_message_while_the_pod_is_unplaced() -> None:
    assert unschedulable(Pod("trainer", 0)).view().unschedulable == SCHEDULER_SAYS
    assert unschedulable(Pod("trainer", 0)).on("node-a").view().unschedulable is None
    assert Pod("trainer", 0).view().unschedulable is None
    other = Pod("trainer", 0)
    other.raw["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    assert other.view().unschedulable is None


@pytest.mark.parametrize(
    ("pods", "phase", "says"),
    [
        pytest.param(
            [unschedulable(Pod("trainer", i)) for i in range(3)],
            "Pending",
            f"all pods are waiting for scheduling; the scheduler cannot place pod {Pod('trainer', 0).name} "
            f"(and 2 more): {SCHEDULER_SAYS}",
            id="no pod placed: Pending says the scheduler cannot place them and why",
        ),
        pytest.param(
            [Pod("trainer", 0).creating(), unschedulable(Pod("trainer", 1)), Pod("trainer", 2)],
            "Creating",
            f"; the scheduler cannot place pod {Pod('trainer', 1).name}: {SCHEDULER_SAYS}",
            id="some pods placed: Creating lists the pods and says which one cannot be placed",
        ),
        pytest.param(
            [Pod("trainer", i) for i in range(3)],
            "Pending",
            "all pods are waiting for scheduling",
            id="pods the scheduler has not tried yet: the seed's message alone",
        ),
    ],
)
def test_an_unschedulable_pod_says_why_the_job_waits(pods: list[Pod], phase: str, says: str) -> None:
    result = plan(seed_job(), views(pods), nodes(), at(5))
    assert condition(result)["type"] == phase
    assert condition(result)["message"].endswith(says)


def test_a_long_scheduler_message_is_cut() -> None:
    pods = [unschedulable(Pod("trainer", i), "0/4 nodes are available: " + "x" * 10_000) for i in range(3)]
    message = condition(plan(seed_job(), views(pods), nodes(), at(5)))["message"]
    assert len(message) < 1000 and message.endswith("...")


def test_the_same_unschedulable_pods_write_no_new_status() -> None:
    pods = views([unschedulable(Pod("trainer", i)) for i in range(3)])
    first = plan(seed_job(), pods, nodes(), at(5))
    assert plan(with_status(seed_job(), first.status), pods, nodes(), at(65)).status is None


# --- the largest job admission allows -----------------------------------------------------------


def test_a_pod_list_names_at_most_max_listed_pods_and_counts_the_rest() -> None:
    names = [f"p-{i}" for i in range(MAX_LISTED + 5)]
    assert pod_list(names) == "[" + " ".join(names[:MAX_LISTED]) + " ... and 5 more]"
    assert pod_list(names[:2]) == "[p-0 p-1]"


def test_the_status_of_a_job_of_max_replicas_pods_stays_within_its_budget() -> None:
    job = seed_job(trainer(replicas=MAX_REPLICAS, max_replicas=MAX_REPLICAS))
    started = time.perf_counter()
    created = plan(job, [], nodes(), at(0))
    assert len(created.creates) == MAX_REPLICAS
    job = with_status(job, created.status)
    pods = [Pod("trainer", i).creating() for i in range(MAX_REPLICAS)]
    waiting = plan(job, views(pods), nodes(), at(1))
    assert waiting.status is not None
    print(f"planned {MAX_REPLICAS} pods twice in {time.perf_counter() - started:.1f}s")
    for status in (created.status, waiting.status):
        size = len(json.dumps(as_json(status)))
        assert size < STATUS_BUDGET, f"status of {size} bytes"
    assert "... and" in condition(waiting)["message"]


@pytest.mark.parametrize(
    "mistake",
    [
        pytest.param({}, id="a replica otherwise fine"),
        pytest.param({"restartPolicy": "Sometimes"}, id="a replica with another mistake"),
        pytest.param({"maxReplicas": 2**63}, id="a replica whose maxReplicas is out of range"),
    ],
)
def test_pod_names_past_63_characters_are_refused_naming_metadata_name(mistake: dict[str, Any]) -> None:
    doc = seed_manifest()
    doc["metadata"]["name"] = "j" * 20
    specs = doc["spec"]["replicaSpecs"]
    specs["r" * 40] = {**specs.pop("trainer"), **mistake}
    with pytest.raises(InvalidJob) as refused:
        parse_job(doc)
    assert "metadata.name" in {e.path for e in refused.value.errors}


# --- the hostile manifests' oracle agrees with the model ---------------------------------------


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(hostile_manifests())
def test_the_model_refuses_what_the_hostile_oracle_says_admission_refuses(h: Hostile) -> None:
    """The oracle of tests/manifest_strategies.py (``hostile_manifests``) is written apart from
    the model; they must agree on every drawn job: refused naming a field the oracle expects,
    or parsed, with the model's own refusals (MODEL_ONLY_CHECKS) as the only other failures."""
    try:
        parse_job(h.manifest)
    except InvalidJob as e:
        paths = {err.path for err in e.errors}
        if not h.refused:
            assert h.model_only and paths <= h.fields, f"{e} ({h.what})"
            return
        assert any(p == r or p.startswith((r + ".", r + "[")) for p in paths for r in h.refused), (
            f"none of {sorted(h.refused)} in {e} ({h.what})"
        )
        return
    assert not h.refused, f"parsed, but {sorted(h.refused)} is wrong ({h.what})"
    assert not h.model_only, f"parsed a template the model refuses ({h.what})"


def test_a_scale_out_of_many_pods_records_at_most_max_listed_of_them_in_scale_history() -> None:
    job = with_replica(seed_job(), "trainer", replicas=3, max_replicas=200)
    cluster = Cluster(job, [Pod("trainer", i).running() for i in range(3)] + [Pod("launcher", 0).running(2)])
    cluster.step(10)
    cluster.job = dataclasses.replace(with_replica(cluster.job, "trainer", replicas=103), generation=2)
    cluster.step(20)
    cluster.run_all(30)
    cluster.step(30)
    entry = cluster.status["scaleHistory"][-1]
    assert (entry["reason"], entry["from"], entry["to"]) == ("ScaleSucceeded", 3, 103)
    assert len(entry["pods"]) == MAX_LISTED
    assert "... and 68 more]" in entry["message"]
