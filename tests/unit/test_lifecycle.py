"""The Plans that are not ``plan``'s (aitj.core.planner.lifecycle): a job being deleted, an
invalid spec, a terminating namespace, the pods of a job that is gone."""

from __future__ import annotations

from typing import Any

from aitj.core.api import Job
from aitj.core.observed import TRACKING_FINALIZER, PodView
from aitj.core.planner import Plan
from aitj.core.planner.lifecycle import JobRef, job_ref, plan_invalid, plan_orphans, release_tracked, triage
from tests.seeds import seed_job
from tests.unit.builders import T0, as_json, at

TRACKED = PodView(name="p-0", namespace="default", job="j", finalizers=(TRACKING_FINALIZER,))
UNTRACKED = PodView(name="p-1", namespace="default", job="j")
GOING = PodView(name="p-2", namespace="default", job="j", finalizers=(TRACKING_FINALIZER,), deleted_at=T0)
GOING_UNTRACKED = PodView(name="p-3", namespace="default", job="j", deleted_at=T0)
PODS = [TRACKED, UNTRACKED, GOING, GOING_UNTRACKED]


def body(**meta: Any) -> dict[str, Any]:
    doc = seed_job()
    doc["metadata"].update({"uid": "uid-1", "resourceVersion": "7", **meta})
    return doc


def test_a_job_that_parses_is_handed_on_to_plan() -> None:
    assert isinstance(triage(body(), PODS, T0), Job)


def test_a_job_being_deleted_only_lets_its_tracked_pods_go() -> None:
    assert triage(body(deletionTimestamp="2022-01-14T09:01:52Z"), PODS, T0) == Plan(release=("p-0", "p-2"))


def test_an_invalid_spec_fails_the_job_once_with_an_event() -> None:
    doc = body()
    doc["spec"]["replicaSpecs"]["trainer"]["replicas"] = -1
    result = triage(doc, PODS, T0)
    assert isinstance(result, Plan) and result.status is not None
    assert as_json(result.status)["phase"] == "Failed"
    assert as_json(result.status)["conditions"][-1]["reason"] == "InvalidSpec"
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "InvalidSpec")]
    doc["status"] = as_json(result.status)
    assert triage(doc, PODS, at(60)) == Plan()  # already said


def test_plan_invalid_keeps_the_rest_of_the_status_but_the_degraded_state() -> None:
    result = plan_invalid({"status": {"startTime": "x", "degraded": {"count": 1}}}, "bad", T0)
    assert result.status is not None and as_json(result.status)["startTime"] == "x"
    assert "degraded" not in as_json(result.status)  # a failed job runs short of nothing


def test_a_terminating_namespace_releases_every_tracked_pod() -> None:
    assert release_tracked(PODS) == Plan(release=("p-0", "p-2"))


def test_a_gone_job_s_pods_being_deleted_are_released() -> None:
    assert plan_orphans(PODS) == Plan(release=("p-2",))


def test_job_ref_reads_the_metadata() -> None:
    assert job_ref(body()) == JobRef("default", "test-horovod-elastic", "uid-1", "7")
    assert job_ref({}) == JobRef("", "", "", "")
