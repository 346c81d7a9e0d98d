"""The executor's step table and its contract types: the order a Plan is carried out in
(``STEPS``, walked by ``walk`` into a ``PlanSink``), what a pass's calls did (``Sent``, with
what they returned for the cache in ``aitj.controller.written.Written``) and why a pass can
stop early. The contract itself is written in the package docstring (``aitj.controller.executor``).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from aitj.controller import passtrace
from aitj.controller.written import Written
from aitj.core.api import JobStatus
from aitj.core.planner.failed_pass import Report
from aitj.core.planner.lifecycle import PodRefusal
from aitj.core.planner.types import (
    Event,
    Manifest,
    ObjectRef,
    Outcome,
    Plan,
    PodCreate,
    PodDelete,
    PodNudge,
    ReplicasPatch,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """Step: one step of carrying out a Plan: the Plan field it sends."""

    field: str


# The order a Plan is carried out in (the module docstring says why each step is safe).
STEPS = (
    Step("ensure"),
    Step("removes"),
    Step("creates"),
    Step("discovery"),
    Step("nudges"),
    Step("restart_events"),
    Step("status"),
    Step("spec_replicas"),
    Step("deletes"),
    Step("release"),
    Step("budgets"),
    Step("podgroup"),
    Step("events"),
    Step("probes"),
    Step("outcome"),
)
# Plan fields that are not sent: the reconciler's wake-up; the restarts the status write
# records, which the reconciler counts once it reads that the write went through
# (``Sent.status_written``); the host list, the workers it holds back and shortfalls for people;
# the checkpoint hooks before a drain, which the reconciler starts (aitj.controller.drainhooks).
NOT_SENT = ("requeue_after", "restarts", "hosts", "held", "list_held", "shortfalls", "drain_hooks")


class PlanSink(Protocol):
    """PlanSink: what carries a Plan out, one method per step of ``STEPS``, each handed that
    step's part of the Plan (never an empty one). The executor's pass (``calls.Calls``)
    and the test double (tests/unit/builders.py ``Cluster``) declare it, so mypy checks that
    both take every step, with its type."""

    def send_ensure(self, manifests: Sequence[Manifest]) -> None: ...
    def send_removes(self, refs: Sequence[ObjectRef]) -> None: ...
    def send_creates(self, creates: Sequence[PodCreate]) -> None: ...
    def send_discovery(self, manifest: Manifest) -> None: ...
    def send_nudges(self, nudges: Sequence[PodNudge]) -> None: ...
    def send_restart_events(self, events: Sequence[Event]) -> None: ...
    def send_status(self, status: JobStatus) -> None: ...
    def send_spec_replicas(self, patches: Sequence[ReplicasPatch]) -> None: ...
    def send_deletes(self, deletes: Sequence[PodDelete]) -> None: ...
    def send_release(self, pods: Sequence[str]) -> None: ...
    def send_budgets(self, manifests: Sequence[Manifest]) -> None: ...
    def send_podgroup(self, manifest: Manifest) -> None: ...
    def send_events(self, events: Sequence[Event]) -> None: ...
    def send_probes(self, manifests: Sequence[Manifest]) -> None: ...
    def send_outcome(self, outcome: Outcome) -> None: ...


def walk(plan: Plan, sink: PlanSink, skip: Collection[str] = ()) -> None:
    """walk: hand each step's part of ``plan`` to ``sink``, in the order of ``STEPS``, skipping
    the empty ones and those in ``skip``. The executor and its test double both carry Plans out
    through here, so they cannot disagree on the order (tests/unit/test_executor.py checks it
    is the order of ``STEPS``)."""
    _step(skip, "ensure", plan.ensure, sink.send_ensure)
    _step(skip, "removes", plan.removes, sink.send_removes)
    _step(skip, "creates", plan.creates, sink.send_creates)
    _step(skip, "discovery", plan.discovery, sink.send_discovery)
    _step(skip, "nudges", plan.nudges, sink.send_nudges)
    _step(skip, "restart_events", plan.restart_events, sink.send_restart_events)
    _step(skip, "status", plan.status, sink.send_status)
    _step(skip, "spec_replicas", plan.spec_replicas, sink.send_spec_replicas)
    _step(skip, "deletes", plan.deletes, sink.send_deletes)
    _step(skip, "release", plan.release, sink.send_release)
    _step(skip, "budgets", plan.budgets, sink.send_budgets)
    _step(skip, "podgroup", plan.podgroup, sink.send_podgroup)
    _step(skip, "events", plan.events, sink.send_events)
    _step(skip, "probes", plan.probes, sink.send_probes)
    _step(skip, "outcome", plan.outcome, sink.send_outcome)


def _step(skip: Collection[str], name: str, part: T | None, send: Callable[[T], None]) -> None:
    """_step: one step of ``walk``: ``send(part)`` unless it is empty or skipped."""
    if name not in skip and part is not None and part != ():
        began = time.time()
        send(part)
        passtrace.step(name, began)


def sends(plan: Plan) -> bool:
    """sends: some step of ``plan`` is not empty (a Plan that sends nothing needs no thread)."""
    return any(getattr(plan, step.field) not in (None, ()) for step in STEPS)


def only_status(plan: Plan) -> bool:
    """only_status: ``plan`` writes the job's status and sends nothing else, nor records a
    restart (the kind of pass the reconciler may hold back a moment to write once for several:
    ``aitj.controller.reconciler``, STATUS_INTERVAL)."""
    return (
        plan.status is not None
        and not plan.restarts
        and all(getattr(plan, step.field) in (None, ()) for step in STEPS if step.field != "status")
    )


class Target(Protocol):
    """Target: the job a Plan is for: an ``api.Job``, or a ``lifecycle.JobRef`` when the spec
    did not parse or the job is gone. ``resource_version`` guards the status write."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...


@dataclass(frozen=True)
class CreatedPod:
    """CreatedPod: a pod this pass created: its slot, its generation, and when (the clock read
    right after the create returned: the end of fault detection for a restart's replacement)."""

    replica: str
    index: int
    generation: int
    at: dt.datetime


@dataclass
class Sent:
    """Sent: what one pass's calls did, as the executor returns it to the reconciler, which
    decides what follows from it. ``written``: what the calls returned, for the cache;
    ``created``: the pods created (not those found there already); ``status_written``: the
    status write went through (False when it was not sent, failed, or found the job gone);
    ``stopped``: why the pass stopped before its last step, None when it did not."""

    written: Written = field(default_factory=Written)
    created: list[CreatedPod] = field(default_factory=list)
    status_written: bool = False
    stopped: Stop | None = None


class Executor(Protocol):
    """Executor: what the reconciler hands Plans to (KubeExecutor; a recorder in tests). It
    returns what the calls did, also when a step stopped the pass (``Sent.stopped``)."""

    def execute(self, target: Target, plan: Plan) -> Sent: ...

    def report(self, target: Target, report: Report) -> Written:
        """report: post ``report``'s Event and write its ``status.passFailure`` (best effort:
        never raises); what the status write returned, for the cache."""
        ...


class Stop(RuntimeError):
    """Stop: why a pass stopped before its last step: always a fact the API server told (or
    its silence), never a decision; the reconciler decides what follows."""


class StaleJob(Stop):
    """The status write's version test failed: the job changed since the snapshot this pass
    planned from."""


class StatusRefused(Stop):
    """The status write was refused for what it holds (a CRD schema rule, an admission policy:
    a 422 that is not a failed version test) or by authorization (403)."""


class NamespaceTerminating(Stop):
    """The job's namespace is being deleted: nothing can be created in it any more."""


class StepFailed(Stop):
    """A call was refused, or got no answer; the rest of the pass was skipped."""


class PodRefused(StepFailed):
    """The apiserver refused a pod create (4xx other than a conflict or a terminating
    namespace); ``refusal`` says what, for ``lifecycle.plan_refused`` to judge."""

    def __init__(self, message: str, refusal: PodRefusal) -> None:
        super().__init__(message)
        self.refusal = refusal


class ForeignObject(StepFailed):
    """A create met an object of that name the job does not control (its controller
    ownerReference is not the job's uid): nothing was written to it, and what was read of it
    is in ``Written.owned`` for the next pass to see (aitj.core.planner.objects)."""


class GangRefused(StepFailed):
    """The apiserver refused a native gang PodGroup because its Workload is missing or being
    deleted (``gangapi.gang_refused``)."""
