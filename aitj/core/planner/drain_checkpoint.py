"""Checkpoint before a drain: which pods to run their replica's ``checkpointOnDrain`` hook in,
and which replicas' PodDisruptionBudgets must hold every eviction meanwhile (docs/semantics.md,
section 26).

Pure. ``kubectl drain`` cordons a node and asks for its pods' evictions in the same second,
far sooner than any operator can react, so the hold cannot wait for the cordon: a replica with
``checkpointOnDrain`` has a budget that allows no eviction at all (``held``), except while every
one of its running pods on a cordoned node has had its hook (it exited, or its deadline
passed). Then the budget allows ``max_unavailable`` again (aitj.core.planner.disruption_budgets)
and the drain's next retry (every 5 s) evicts. Once those pods are gone, the hold is back.

Where a pod's hook stands is the pod's own annotation ANNOTATION_DRAIN_CHECKPOINT, written by
the operator that runs it (aitj.controller.drainhooks): ``started <time>`` before the exec,
``done <time> ...``, ``failed <time> ...`` or ``timedout <time>`` after. A pod without it gets
its hook (``Decision.hooks``); one ``started`` whose deadline passed counts as finished, so an
operator that died mid-hook holds the drain no longer than the deadline.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from aitj.core.api import Job, ReplicaSpec
from aitj.core.observed import NodeView, PodView
from aitj.core.planner.quick import quick_init
from aitj.core.planner.survey_terms import Slot
from aitj.core.planner.types import DrainHook, Event
from aitj.core.wire import as_list, format_time, mapping, parse_time


class HookPhase(enum.StrEnum):
    STARTED = "started"
    DONE = "done"  # the command exited 0
    FAILED = "failed"  # it exited non-zero, or could not be run
    TIMEDOUT = "timedout"  # the operator stopped waiting at the deadline


@dataclass(frozen=True)
class Mark:
    """Mark: a pod's ANNOTATION_DRAIN_CHECKPOINT read: its phase and when it was written."""

    phase: HookPhase
    at: datetime
    detail: str = ""  # what came of it, for people: ``exit 0``, ``still running after 60s``


@quick_init
@dataclass(frozen=True)
class Decision:
    """Decision: the hooks to start, the replicas whose budgets allow no eviction now, and
    seconds after which a started hook's deadline passes (plan again then)."""

    hooks: tuple[DrainHook, ...] = ()
    held: frozenset[str] = frozenset()
    wake: tuple[float, ...] = ()
    events: tuple[Event, ...] = ()  # what the draining pods' marks say (``hook_events``)


EVENT_STARTED = "DrainCheckpointStarted"  # Normal: the hook was started (the pod is marked)
EVENT_DONE = "DrainCheckpointDone"  # Normal: it exited 0
EVENT_FAILED = "DrainCheckpointFailed"  # Warning: it exited non-zero, or could not be run
EVENT_TIMED_OUT = "DrainCheckpointTimedOut"  # Warning: its deadline passed first
_EVENTS = {
    HookPhase.STARTED: ("Normal", EVENT_STARTED),
    HookPhase.DONE: ("Normal", EVENT_DONE),
    HookPhase.FAILED: ("Warning", EVENT_FAILED),
    HookPhase.TIMEDOUT: ("Warning", EVENT_TIMED_OUT),
}


def mark_text(phase: HookPhase, at: datetime, detail: str = "") -> str:
    """mark_text: the annotation's value (``detail``, for people, is cut short)."""
    return f"{phase.value} {format_time(at)}{' ' + detail[:160] if detail else ''}"


def read_mark(value: str | None) -> Mark | None:
    """read_mark: the annotation read; None when absent or not one the operator wrote."""
    words = (value or "").split(" ", 2)
    if len(words) < 2 or words[0] not in tuple(HookPhase):
        return None
    at = parse_time(words[1])
    return None if at is None else Mark(HookPhase(words[0]), at, words[2] if len(words) > 2 else "")


def decide(job: Job, slots: Sequence[Slot], nodes: Mapping[str, NodeView], now: datetime) -> Decision:
    """decide: for each replica with checkpointOnDrain, its running pods on cordoned nodes
    (``draining``): those not yet marked get their hook; the replica is held unless it has
    such pods and every one's hook is finished."""
    hooks: list[DrainHook] = []
    held: set[str] = set()
    wake: list[float] = []
    events: list[Event] = []
    for replica in job.spec.replicas:
        if replica.checkpoint_on_drain is None:
            continue
        draining = [
            s.pod for s in slots if s.replica.name == replica.name and s.pod and _draining(s.pod, nodes)
        ]
        waiting = [_pending(replica, pod, now) for pod in draining if pod is not None]
        hooks.extend(w for w in waiting if isinstance(w, DrainHook))
        events.extend(e for pod in draining if pod is not None for e in hook_events(job, replica, pod, now))
        wake.extend(w for w in waiting if isinstance(w, float))
        if not draining or any(w is not None for w in waiting):
            held.add(replica.name)
    return Decision(tuple(hooks), frozenset(held), tuple(wake), tuple(events))


def _pending(replica: ReplicaSpec, pod: PodView, now: datetime) -> DrainHook | float | None:
    """_pending: what a draining pod still waits for: its hook to start (the DrainHook), its
    hook to finish (the seconds left to its deadline), or nothing (None: finished)."""
    hook = replica.checkpoint_on_drain
    assert hook is not None
    mark = read_mark(pod.drain_checkpoint)
    if mark is None:
        return DrainHook(pod.name, pod.uid, _container(replica), hook.command, hook.timeout_seconds)
    if mark.phase is not HookPhase.STARTED:
        return None
    left = (mark.at + timedelta(seconds=hook.timeout_seconds) - now).total_seconds()
    return left if left > 0 else None


def _draining(pod: PodView, nodes: Mapping[str, NodeView]) -> bool:
    """_draining: the pod runs on a node that is cordoned (a drain under way, or about to be).
    A node gone is no drain: its pod is lost already."""
    if not pod.running or not pod.node_name:
        return False
    node = nodes.get(pod.node_name)
    return node is not None and node.unschedulable


def _container(replica: ReplicaSpec) -> str:
    """_container: the pod's main container, the template's first (the one the job's command
    runs in, by the seed's convention)."""
    containers = as_list(mapping(replica.template.get("spec")).get("containers"))
    return str(mapping(containers[0]).get("name", "")) if containers else ""


def outcome(replica: ReplicaSpec, pod: PodView, now: datetime) -> tuple[HookPhase, str] | None:
    """outcome: where ``pod``'s hook stands, read from its mark: the phase it counts as (a
    ``started`` whose deadline passed counts as ``timedout``: the operator that ran it died, or
    its end was not seen) and the words for people, ``done at <time> (exit 0): its eviction is
    let through``. None: no hook ran in it."""
    mark = read_mark(pod.drain_checkpoint)
    hook = replica.checkpoint_on_drain
    if mark is None or hook is None:
        return None
    at, said = format_time(mark.at), f" ({mark.detail})" if mark.detail else ""
    deadline = mark.at + timedelta(seconds=hook.timeout_seconds)
    if mark.phase is HookPhase.STARTED and deadline > now:
        return mark.phase, f"running since {at}: its eviction waits until {format_time(deadline)} at most"
    if mark.phase is HookPhase.STARTED:
        late = f"started at {at}, no end seen within timeoutSeconds {hook.timeout_seconds}"
        return HookPhase.TIMEDOUT, f"{late}: its eviction is let through"
    after = "" if mark.phase is HookPhase.DONE else " all the same"
    return mark.phase, f"{mark.phase.value} at {at}{said}: its eviction is let through{after}"


def hook_events(job: Job, replica: ReplicaSpec, pod: PodView, now: datetime) -> tuple[Event, ...]:
    """hook_events: the Events of a draining pod's hook, from its mark: started, then done,
    failed or timed out; each named after the pod and the step, so each is recorded once
    however many passes see the mark (a hook quicker than a pass still shows both)."""
    seen = outcome(replica, pod, now)
    if seen is None:
        return ()
    phase, words = seen
    hook = replica.checkpoint_on_drain
    assert hook is not None
    name = f"{job.name}.{job.uid[:8] or 'job'}.drainhook-{replica.name}-{pod.index}-{pod.generation}"
    node = f" on cordoned node {pod.node_name}" if pod.node_name else ""
    started = f"checkpointOnDrain of pod {pod.name}{node} started (timeoutSeconds {hook.timeout_seconds})"
    out = [Event(*_EVENTS[HookPhase.STARTED], started, f"{name}-{HookPhase.STARTED.value}")]
    if phase is not HookPhase.STARTED:
        finished = f"checkpointOnDrain of pod {pod.name}{node} {words}"
        out.append(Event(*_EVENTS[phase], finished, f"{name}-{phase.value}"))
    return tuple(out)


def exec_result(status: object) -> tuple[HookPhase, str]:
    """exec_result: what came of a hook's exec, from the status the apiserver sends on the exec's
    error channel when the command ends (a metav1.Status, parsed): ``Success`` is done (exit 0);
    ``NonZeroExitCode`` failed with the command's code; anything else (the container or the
    runtime would not run it, an answer that cannot be read) failed with the apiserver's words,
    which the mark and the DrainCheckpointFailed Event then show."""
    doc = mapping(status)
    if doc.get("status") == "Success":
        return HookPhase.DONE, "exit 0"
    causes = as_list(mapping(doc.get("details")).get("causes"))
    code = next((mapping(c).get("message") for c in causes if mapping(c).get("reason") == "ExitCode"), None)
    if doc.get("reason") == "NonZeroExitCode" and str(code).isdigit():
        return HookPhase.FAILED, f"exit {code}"
    said = str(doc.get("message") or "no status from the exec")
    return HookPhase.FAILED, f"could not run: {said}"
