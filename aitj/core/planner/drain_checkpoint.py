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
from aitj.core.planner.survey_terms import Slot
from aitj.core.planner.types import DrainHook
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


@dataclass(frozen=True)
class Decision:
    """Decision: the hooks to start, the replicas whose budgets allow no eviction now, and
    seconds after which a started hook's deadline passes (plan again then)."""

    hooks: tuple[DrainHook, ...] = ()
    held: frozenset[str] = frozenset()
    wake: tuple[float, ...] = ()


def mark_text(phase: HookPhase, at: datetime, detail: str = "") -> str:
    """mark_text: the annotation's value (``detail``, for people, is cut short)."""
    return f"{phase.value} {format_time(at)}{' ' + detail[:160] if detail else ''}"


def read_mark(value: str | None) -> Mark | None:
    """read_mark: the annotation read; None when absent or not one the operator wrote."""
    words = (value or "").split(" ", 2)
    if len(words) < 2 or words[0] not in tuple(HookPhase):
        return None
    at = parse_time(words[1])
    return None if at is None else Mark(HookPhase(words[0]), at)


def decide(job: Job, slots: Sequence[Slot], nodes: Mapping[str, NodeView], now: datetime) -> Decision:
    """decide: for each replica with checkpointOnDrain, its running pods on cordoned nodes
    (``draining``): those not yet marked get their hook; the replica is held unless it has
    such pods and every one's hook is finished."""
    hooks: list[DrainHook] = []
    held: set[str] = set()
    wake: list[float] = []
    for replica in job.spec.replicas:
        if replica.checkpoint_on_drain is None:
            continue
        draining = [
            s.pod for s in slots if s.replica.name == replica.name and s.pod and _draining(s.pod, nodes)
        ]
        waiting = [_pending(replica, pod, now) for pod in draining if pod is not None]
        hooks.extend(w for w in waiting if isinstance(w, DrainHook))
        wake.extend(w for w in waiting if isinstance(w, float))
        if not draining or any(w is not None for w in waiting):
            held.add(replica.name)
    return Decision(tuple(hooks), frozenset(held), tuple(wake))


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
