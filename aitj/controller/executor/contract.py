"""The executor's step table and its contract types: the order a Plan is carried out in
(``STEPS``, walked by ``walk``) and the errors a pass can end with. What the calls returned
is handed back in ``aitj.controller.written.Written``. The contract itself is written in the
package docstring (``aitj.controller.executor``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from aitj.controller.written import Written
from aitj.core.planner.lifecycle import PodRefusal
from aitj.core.planner.types import Plan


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
    Step("restarts"),
    Step("spec_replicas"),
    Step("deletes"),
    Step("release"),
    Step("budgets"),
    Step("podgroup"),
    Step("events"),
    Step("outcome"),
)
# Plan fields that are not sent: the reconciler's wake-up, and the host list and shortfalls for people.
NOT_SENT = ("requeue_after", "hosts", "shortfalls")


def walk(plan: Plan, sink: object, prefix: str, skip: Collection[str] = ()) -> None:
    """walk: call ``sink.<prefix><field>(value)`` for each step of ``STEPS`` in order whose
    part of ``plan`` is not empty, except those in ``skip``. The executor and its test double
    both carry Plans out through here, so they cannot disagree on the order."""
    for step in STEPS:
        value = getattr(plan, step.field)
        if step.field in skip or value is None or value == ():
            continue
        getattr(sink, prefix + step.field)(value)


def sends(plan: Plan) -> bool:
    """sends: some step of ``plan`` is not empty (a Plan that sends nothing needs no thread)."""
    return any(getattr(plan, step.field) not in (None, ()) for step in STEPS)


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


class Executor(Protocol):
    """Executor: what the reconciler hands Plans to (KubeExecutor; a recorder in tests). What
    the calls returned goes into ``written``, even when a step fails."""

    def execute(self, target: Target, plan: Plan, written: Written | None = None) -> None: ...


class StaleJob(RuntimeError):
    """The job changed since the snapshot this pass planned from; plan again from the new one."""


class NamespaceTerminating(RuntimeError):
    """The job's namespace is being deleted: nothing can be created in it any more."""


class StepFailed(RuntimeError):
    """A step of the plan failed; the rest of the pass was skipped and the job is requeued."""


class PodRefused(StepFailed):
    """The apiserver refused a pod create (4xx other than a conflict or a terminating
    namespace); ``refusal`` says what, for ``lifecycle.plan_refused`` to judge."""

    def __init__(self, message: str, refusal: PodRefusal) -> None:
        super().__init__(message)
        self.refusal = refusal
