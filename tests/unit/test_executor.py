"""The executor's step table, pure: every Plan field is a step or is not sent, ``walk`` keeps the
order and skips empty steps, and the executor and its test double (builders.Cluster) implement
every step of the one table. What each call's answers mean is tested against the real
apiserver (tests/e2e/test_executor.py), never against a fake client."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from aitj.controller.executor import (
    NOT_SENT,
    STEPS,
    PlanSink,
    walk,
)
from aitj.controller.executor.calls import Calls
from aitj.core.api import JobStatus, Phase, RestartScope
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
    PodNudge,
    ReplicasPatch,
    RestartRecord,
)
from aitj.core.policy import Failure, FailureKind
from tests.unit.builders import Cluster

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
    nudges=(PodNudge("p-3", "u-3", "0123456789abcdef"),),
    status=JobStatus(phase=Phase.RUNNING),
    spec_replicas=(ReplicasPatch("trainer", 5, 3),),
    deletes=(PodDelete("p-1", "u-1", None, DeleteReason.UNWANTED, "scaled away"),),
    release=("p-2",),
    budgets=(Manifest(ObjectKind.PDB, "job-trainer", {"spec": {"minAvailable": 2}}),),
    podgroup=Manifest(ObjectKind.VOLCANO_PODGROUP, "job", {"spec": {"minMember": 2}}),
    probes=(Manifest(ObjectKind.CONFIGMAP, "job-discovery", {"data": {}}),),
    events=(Event("Normal", "Why", "because"),),
    restart_events=(
        Event("Warning", "TrainingJobRestarting", "p-0 failed", "job.uid-1.restart-trainer-0-0"),
    ),
    restarts=(RESTART,),
    outcome=Outcome(Phase.SUCCEEDED, "Done", "done"),
)


def test_every_plan_field_is_a_step_or_is_not_sent() -> None:
    fields = [f.name for f in dataclasses.fields(Plan)]
    assert sorted([s.field for s in STEPS] + list(NOT_SENT)) == sorted(fields)


@pytest.mark.parametrize("double", [Calls, Cluster], ids=["the executor", "its test double"])
def test_the_executor_and_its_test_double_carry_out_every_step(double: type) -> None:
    # mypy checks their signatures (both declare PlanSink); this checks the table has no step
    # the Protocol lacks.
    assert PlanSink in double.__mro__
    assert all(callable(getattr(double, "send_" + s.field, None)) for s in STEPS)


def test_walk_skips_empty_steps_and_keeps_the_order() -> None:
    seen: list[str] = []

    class Sink:
        def __getattr__(self, name: str) -> Callable[[Any], None]:
            return lambda value: seen.append(name)

    walk(EVERYTHING, cast(PlanSink, Sink()), skip=("status",))
    assert seen == ["send_" + s.field for s in STEPS if s.field != "status"]
    seen.clear()
    walk(Plan(creates=(POD,)), cast(PlanSink, Sink()))
    assert seen == ["send_creates"]


def test_the_deleted_pods_metric_labels_keep_their_values() -> None:
    assert [r.value for r in DeleteReason] == ["restart", "stuck", "unwanted", "cleanup", "suspend"]
