"""The executor against a recording fake of the client: it walks STEPS in order, sends what the
Plan holds and nothing else, and maps the API's answers as its contract says. Its test double
(builders.Cluster) walks the very same table."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import REGISTRY

from aitj.controller.executor import (
    NOT_SENT,
    STEPS,
    KubeExecutor,
    NamespaceTerminating,
    StaleJob,
    StepFailed,
    walk,
)
from aitj.controller.executor.kube import _Pass
from aitj.core.api import Phase, RestartScope
from aitj.core.planner.lifecycle import JobRef
from aitj.core.planner.types import (
    DeleteReason,
    Event,
    Manifest,
    ObjectKind,
    ObjectRef,
    Outcome,
    Plan,
    PodCreate,
    PodDelete,
    ReplicasPatch,
    RestartRecord,
)
from aitj.core.policy import Failure, FailureKind
from tests.unit.builders import Cluster

JOB = JobRef("default", "job", "uid-1", "7")
SERVICE = Manifest(ObjectKind.SERVICE, "job", {"kind": "Service"})
CONFIGMAP = Manifest(ObjectKind.CONFIGMAP, "job-discovery", {"kind": "ConfigMap"})
POD = PodCreate("job-trainer-abcde-0", "trainer", 0, 0, {"kind": "Pod"})
FAILURE = Failure(FailureKind.POD_FAILED, "it failed", at=datetime(2022, 1, 14, 9, 0, 0, tzinfo=UTC))
RESTART = RestartRecord(
    "trainer",
    0,
    0,
    "p-0",
    FAILURE,
    "exitCodes 1",
    RestartScope.POD,
    datetime(2022, 1, 14, 9, 0, 1, tzinfo=UTC),
)

# One of everything, and the client call each step makes for it.
EVERYTHING = Plan(
    ensure=(SERVICE,),
    removes=(ObjectRef(ObjectKind.SERVICE, "old"),),
    creates=(POD,),
    discovery=CONFIGMAP,
    status={"phase": "Running"},
    spec_replicas=(ReplicasPatch("trainer", 5, 3),),
    deletes=(PodDelete("p-1", "u-1", None, DeleteReason.UNWANTED, "scaled away"),),
    release=("p-2",),
    budgets=(Manifest(ObjectKind.PDB, "job-trainer", {"spec": {"minAvailable": 2}}),),
    events=(Event("Normal", "Why", "because"),),
    restart_events=(
        Event("Warning", "TrainingJobRestarting", "p-0 failed", "job.uid-1.restart-trainer-0-0"),
    ),
    restarts=(RESTART,),
    outcome=Outcome(Phase.SUCCEEDED, "Done", "done"),
)
CALLS = [
    "create_namespaced_service",
    "delete_namespaced_service",
    "create_namespaced_pod",
    "replace_namespaced_config_map",
    "create_namespaced_event",
    "patch_namespaced_custom_object_status",
    "patch_namespaced_custom_object",
    "delete_namespaced_pod",
    "patch_namespaced_pod",
    "patch_namespaced_pod_disruption_budget",
    "create_namespaced_event",
]


class FakeApi:
    """FakeApi records every call in ``log``; ``answers[method]`` raises the ApiException it
    holds (once)."""

    def __init__(self, log: list[tuple[str, tuple[Any, ...]]], answers: dict[str, ApiException]) -> None:
        self.log, self.answers = log, answers

    def __getattr__(self, method: str) -> Callable[..., None]:
        def call(*args: Any, **kwargs: Any) -> None:
            assert kwargs.get("_preload_content") is False, method  # no model objects built
            self.log.append((method, args))
            if method in self.answers:
                raise self.answers.pop(method)

        return call


def executor(**answers: ApiException) -> tuple[KubeExecutor, list[tuple[str, tuple[Any, ...]]]]:
    ex = KubeExecutor(client.ApiClient())
    log: list[tuple[str, tuple[Any, ...]]] = []
    ex.core = ex.custom = ex.policy = FakeApi(log, dict(answers))
    return ex, log


def refused(status: int, message: str = "") -> ApiException:
    e = ApiException(status=status, reason=message)
    e.body = f'{{"message": "{message}"}}'
    return e


def test_the_executor_sends_each_step_in_the_order_of_the_table() -> None:
    ex, log = executor()
    ex.execute(JOB, EVERYTHING)
    assert [method for method, _ in log] == CALLS


def test_every_plan_field_is_a_step_or_is_not_sent() -> None:
    fields = [f.name for f in dataclasses.fields(Plan)]
    assert sorted([s.field for s in STEPS] + list(NOT_SENT)) == sorted(fields)


@pytest.mark.parametrize("double", [_Pass, Cluster], ids=["the executor", "its test double"])
def test_the_executor_and_its_test_double_carry_out_every_step(double: type) -> None:
    prefix = "send_" if double is _Pass else "apply_"
    assert all(callable(getattr(double, prefix + s.field, None)) for s in STEPS)


def test_walk_skips_empty_steps_and_keeps_the_order() -> None:
    seen: list[str] = []

    class Sink:
        def __getattr__(self, name: str) -> Callable[[Any], None]:
            return lambda value: seen.append(name)

    walk(EVERYTHING, Sink(), "x_", skip=("status",))
    assert seen == ["x_" + s.field for s in STEPS if s.field != "status"]
    seen.clear()
    walk(Plan(creates=(POD,)), Sink(), "x_")
    assert seen == ["x_creates"]


def test_already_existing_objects_and_pods_count_as_created() -> None:
    ex, log = executor(create_namespaced_service=refused(409), create_namespaced_pod=refused(409))
    ex.execute(JOB, Plan(ensure=(SERVICE,), creates=(POD,), release=("p-2",)))
    assert [m for m, _ in log] == [
        "create_namespaced_service",
        "create_namespaced_pod",
        "patch_namespaced_pod",
    ]


def test_a_missing_discovery_configmap_is_created() -> None:
    ex, log = executor(replace_namespaced_config_map=refused(404))
    ex.execute(JOB, Plan(discovery=CONFIGMAP))
    assert [m for m, _ in log] == ["replace_namespaced_config_map", "create_namespaced_config_map"]


@pytest.mark.parametrize(
    ("answers", "raised"),
    [
        pytest.param(
            {"create_namespaced_pod": refused(403, "namespace default is being terminated")},
            NamespaceTerminating,
            id="a create in a namespace being deleted says so",
        ),
        pytest.param(
            {"create_namespaced_service": refused(403, "namespace default is being terminated")},
            NamespaceTerminating,
            id="so does a Service create there",
        ),
        pytest.param(
            {"create_namespaced_pod": refused(500)}, StepFailed, id="a refused create stops the pass"
        ),
        pytest.param(
            {"patch_namespaced_custom_object_status": refused(422)},
            StaleJob,
            id="a failed version test is stale",
        ),
    ],
)
def test_errors_stop_the_pass(answers: dict[str, ApiException], raised: type[Exception]) -> None:
    ex, log = executor(**answers)
    with pytest.raises(raised):
        ex.execute(JOB, EVERYTHING)
    assert "delete_namespaced_pod" not in [m for m, _ in log]


def test_the_status_write_tests_the_version_the_pass_planned_from() -> None:
    ex, log = executor()
    ex.execute(JOB, Plan(status={"phase": "Running"}))
    [(_, args)] = log
    assert args[-1][0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}


def test_gone_pods_and_a_replaced_pod_are_not_errors() -> None:
    ex, log = executor(delete_namespaced_pod=refused(404), patch_namespaced_pod=refused(404))
    ex.execute(JOB, Plan(deletes=EVERYTHING.deletes, release=("p-2",)))
    assert [m for m, _ in log] == ["delete_namespaced_pod", "patch_namespaced_pod"]


def test_the_deleted_pods_metric_labels_keep_their_values() -> None:
    assert [r.value for r in DeleteReason] == ["restart", "stuck", "unwanted", "cleanup"]


def test_a_disruption_budget_that_is_not_there_is_created() -> None:
    ex, log = executor(patch_namespaced_pod_disruption_budget=refused(404))
    ex.execute(JOB, Plan(budgets=EVERYTHING.budgets))
    assert [method for method, _ in log] == [
        "patch_namespaced_pod_disruption_budget",
        "create_namespaced_pod_disruption_budget",
    ]


def restarts_counted() -> float:
    """restarts_counted: aitj_restarts_total for RESTART's labels."""
    labels = {
        "namespace": "default",
        "job": "job",
        "replica": "trainer",
        "cause": "PodFailed",
        "scope": "Pod",
    }
    return REGISTRY.get_sample_value("aitj_restarts_total", labels) or 0.0


RESTARTING = Plan(
    creates=(POD,),
    restart_events=EVERYTHING.restart_events,
    status={"phase": "Restarting"},
    restarts=(RESTART,),
)


def test_a_stale_status_write_has_posted_the_restart_event_and_counts_nothing() -> None:
    before = restarts_counted()
    ex, log = executor(patch_namespaced_custom_object_status=refused(422))
    with pytest.raises(StaleJob):
        ex.execute(JOB, RESTARTING)
    assert [m for m, _ in log] == [
        "create_namespaced_pod",
        "create_namespaced_event",
        "patch_namespaced_custom_object_status",
    ]
    assert log[1][1][1]["metadata"]["name"] == "job.uid-1.restart-trainer-0-0"
    assert restarts_counted() == before


def test_the_pass_that_records_a_restart_counts_it_once_and_its_event_already_posted_is_fine() -> None:
    before = restarts_counted()
    ex, _ = executor(create_namespaced_pod=refused(409), create_namespaced_event=refused(409))
    ex.execute(JOB, RESTARTING)
    assert restarts_counted() == before + 1
