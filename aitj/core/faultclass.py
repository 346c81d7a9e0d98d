"""Infrastructure faults apart from application faults (issue 28; docs/semantics.md section 25).

Pure. A restart is down either to the cluster, which took a healthy training's pod away, or to
the training itself. ``aitj.core.policy.FailureKind.fault_class`` says which of the two a failure
is; the status counts the infrastructure restarts apart (``status.infrastructureRestarts``), the
restart metric carries the class, and a rule with ``infrastructureFaults: Exempt`` keeps them off
its restartLimit.
"""

from __future__ import annotations

import enum

from aitj.core.api import ExceptionalEvent, FaultTolerantRule, InfrastructureFaults


class FaultClass(enum.StrEnum):
    """FaultClass: who a failure is down to (the ``class`` label of ``aitj_restarts_total``)."""

    INFRASTRUCTURE = "infrastructure"  # the node, a drain, the scheduler's preemption, an eviction
    APPLICATION = "application"  # the training: its exit code, a hang, a pod that will not start


# Infrastructure: nodeNotReady (a node gone, NotReady, showing a health signal, or drained:
# policy.node_failure and policy.drain), a preemption, and an eviction (node pressure, the
# descheduler, a manual eviction): the cluster took the pod of a training that was doing nothing
# wrong.
# PodForceDeleted is NOT one. The operator cannot tell who deleted the pod or why (a user's
# `kubectl delete --force`, a script, a stuck pod cleared by hand); a deletion by the node
# lifecycle on a bad node is already nodeNotReady (classify looks at the node first). What is
# left is most often a person acting on the training, and charging it keeps a budget from being
# sidestepped by deleting pods. PodFailed (a kubelet admission error, an image that cannot run),
# RestartTimeout, every exit code and a hang are the training's: application faults.
INFRASTRUCTURE_EVENTS: frozenset[ExceptionalEvent] = frozenset(
    {ExceptionalEvent.NODE_NOT_READY, ExceptionalEvent.POD_PREEMPTED, ExceptionalEvent.POD_EVICTED}
)


def event_class(event: ExceptionalEvent | None) -> FaultClass:
    """event_class: the class of a failure that is ``event`` (None: no exceptional event)."""
    return FaultClass.INFRASTRUCTURE if event in INFRASTRUCTURE_EVENTS else FaultClass.APPLICATION


def cause_class(cause: str) -> FaultClass:
    """cause_class: the class of a recorded cause (``status.restarts[].cause``: ``exitCode 137``,
    an event name, or a cause this version does not know, which is the application's)."""
    try:
        return event_class(ExceptionalEvent(cause))
    except ValueError:
        return FaultClass.APPLICATION


def exempt(rule: FaultTolerantRule, event: ExceptionalEvent | None) -> bool:
    """exempt: ``rule`` keeps a failure that is ``event`` off its restartLimit
    (``infrastructureFaults: Exempt`` and an infrastructure fault): the restart is neither
    counted by its budget nor refused by it."""
    return rule.infrastructure_faults is InfrastructureFaults.EXEMPT and event in INFRASTRUCTURE_EVENTS


def exempt_note(rule: FaultTolerantRule, event: ExceptionalEvent | None, spent: str | None) -> str:
    """exempt_note: what a rule that fires on ``event`` adds to its verdict (``aitj explain``)
    when it keeps the fault off its budget: ``; an infrastructure fault: not charged to its
    restartLimit (infrastructureFaults Exempt)``, and when its budget is used up (``spent``: the
    budget's words) that it does not refuse the restart either. Empty otherwise."""
    if not exempt(rule, event):
        return ""
    note = (
        f"; {event}, an infrastructure fault: not charged to its restartLimit (infrastructureFaults Exempt)"
    )
    return note + (
        f"; its budget is used up ({spent}), which refuses only the application's" if spent else ""
    )
