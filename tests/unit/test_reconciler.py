"""The reconciler's glue, with a recording executor: passes are serialised per job, kicks during
a pass coalesce into one more pass, and each way a pass can end is handled as documented. The
executor itself is tested against the real apiserver (tests/e2e)."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from aitj.controller.executor import NamespaceTerminating, StaleJob, StepFailed
from aitj.controller.reconciler import JobKey, Reconciler, Snapshot
from aitj.core.api import Job
from aitj.core.observed import TRACKING_FINALIZER, NodeView, PodView
from aitj.core.planner.types import Plan
from tests.seeds import seed_job

KEY: JobKey = ("default", "test-horovod-elastic")
NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def body(**meta: Any) -> dict[str, Any]:
    doc = seed_job()
    doc["metadata"].update({"uid": "uid-1", "resourceVersion": "7", **meta})
    return doc


NOTHING = Plan()
POD = PodView(name="p-0", namespace="default", job=KEY[1], finalizers=(TRACKING_FINALIZER,))
OTHER = PodView(name="p-1", namespace="default", job=KEY[1])


class Recorder:
    """Recorder is an executor that records calls and can fail or block on demand."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.executed: list[tuple[str, Plan]] = []
        self.released: list[str] = []
        self.invalid: list[str] = []
        self.fail = fail
        self.gate: threading.Event | None = None

    def execute(self, job: Job, plan: Plan) -> None:
        if self.gate is not None:
            self.gate.wait(5)
        self.executed.append((job.resource_version, plan))
        if self.fail is not None:
            raise self.fail

    def fail_invalid(self, body: Mapping[str, Any], message: str) -> None:
        self.invalid.append(message)

    def release(self, namespace: str, pod: str) -> None:
        self.released.append(pod)


def reconciler(
    executor: Recorder, doc: dict[str, Any] | None, pods: Sequence[PodView] = (), plan: Plan = NOTHING
) -> tuple[Reconciler, list[int]]:
    planned: list[int] = []

    def snapshot(key: JobKey) -> Snapshot:
        return doc, list(pods), {}

    def planner(job: Job, pods: Sequence[PodView], nodes: Mapping[str, NodeView], now: dt.datetime) -> Plan:
        planned.append(1)
        return plan

    return Reconciler(executor, snapshot, clock=lambda: NOW, planner=planner), planned


def test_a_kick_plans_the_job_once_and_hands_the_plan_to_the_executor() -> None:
    rec = Recorder()
    r, planned = reconciler(rec, body())
    asyncio.run(r.kick(KEY))
    assert len(planned) == 1
    assert [v for v, _ in rec.executed] == ["7"]  # the job's version goes with it (stale check)


def test_kicks_during_a_pass_coalesce_into_one_more_pass() -> None:
    rec = Recorder()
    rec.gate = threading.Event()
    r, planned = reconciler(rec, body())

    async def burst() -> None:
        first = asyncio.ensure_future(r.kick(KEY))
        await asyncio.sleep(0.05)  # the first pass is now blocked in the executor
        await asyncio.gather(*(r.kick(KEY) for _ in range(5)))
        rec.gate.set()  # type: ignore[union-attr]
        await first

    asyncio.run(burst())
    assert len(planned) == 2


def test_a_job_gone_from_the_index_is_forgotten_without_planning() -> None:
    rec = Recorder()
    r, planned = reconciler(rec, None)
    asyncio.run(r.kick(KEY))
    assert planned == [] and rec.executed == []


def test_a_job_being_deleted_is_not_planned_and_its_tracked_pods_are_released() -> None:
    rec = Recorder()
    r, planned = reconciler(rec, body(deletionTimestamp="2026-11-22T00:00:00Z"), [POD, OTHER])
    asyncio.run(r.kick(KEY))
    assert planned == []
    assert rec.released == ["p-0"]  # only the pod that carries the finalizer


def test_a_spec_only_the_model_refuses_fails_the_job_instead_of_planning() -> None:
    doc = body()
    doc["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["name"] = (
        "nope"
    )
    rec = Recorder()
    r, planned = reconciler(rec, doc)
    asyncio.run(r.kick(KEY))
    assert planned == []
    assert len(rec.invalid) == 1 and "volumeMounts[0].name" in rec.invalid[0]


def test_a_terminating_namespace_releases_every_tracked_pod() -> None:
    rec = Recorder(fail=NamespaceTerminating("default"))
    r, _ = reconciler(rec, body(), [POD, OTHER])
    asyncio.run(r.kick(KEY))
    assert rec.released == ["p-0"]


@pytest.mark.parametrize(
    ("error", "delay"),
    [
        pytest.param(StaleJob("changed"), 0.5, id="a stale snapshot is planned again in half a second"),
        pytest.param(StepFailed("boom"), 2.0, id="a failed step is retried after two seconds"),
    ],
)
def test_a_pass_that_fails_is_requeued(error: Exception, delay: float) -> None:
    rec = Recorder(fail=error)
    r, planned = reconciler(rec, body())

    async def run() -> float:
        await r.kick(KEY)
        timer = r._jobs[KEY].timer
        assert timer is not None
        due = timer.when() - asyncio.get_running_loop().time()
        timer.cancel()
        return due

    due = asyncio.run(run())
    assert delay - 0.1 < due <= delay
    assert len(planned) == 1


def test_the_plan_s_requeue_after_schedules_the_next_pass() -> None:
    rec = Recorder()
    r, planned = reconciler(rec, body(), plan=Plan(requeue_after=0.05))

    async def run() -> None:
        await r.kick(KEY)
        await asyncio.sleep(0.2)

    asyncio.run(run())
    assert len(planned) >= 2
