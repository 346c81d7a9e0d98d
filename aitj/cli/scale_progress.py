"""How a scale asked for by ``aitj scaleout`` / ``aitj scalein`` goes, read from the job alone.

Pure and clock-free (the command passes ``now``), so every answer is table-tested without a
cluster: ``follow`` says what to show and, once the operator has decided, the exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aitj.core import api
from aitj.core.planner.scaling import SUCCEEDED as SCALE_SUCCEEDED
from aitj.core.wire import mapping, parse_time

# The command's exit codes (the CLI's one table: aitj.cli.options): done, or not.
EXIT_DONE, EXIT_UNDONE = 0, 1


@dataclass(frozen=True)
class Progress:
    """Progress: where the scale asked for by one edit stands. ``code`` is None while it goes on."""

    text: str
    code: int | None = None


def follow(
    job: Mapping[str, Any],
    replica: str,
    generation: int,
    pods_running: Callable[[Sequence[str]], int],
    now: datetime,
) -> Progress:
    """follow reads ``job`` at ``now`` for the operation started by the edit that made
    ``generation``. ``pods_running`` counts the Running pods among names (for a scale-out's
    progress)."""
    status = mapping(job.get("status"))
    phase = status.get("phase")
    conditions = status.get("conditions") or [{}]
    if isinstance(phase, str) and phase in api.FINISHED_PHASES:
        last = mapping(conditions[-1]).get("message", "")
        return Progress(f"the job ended ({phase}) before the scale finished: {last}", EXIT_UNDONE)
    seen = status.get("observedGeneration")
    if not isinstance(seen, int) or seen < generation:
        return Progress("waiting for the operator to see the edit")
    if (recorded := recorded_outcome(status, replica, generation)) is not None:
        return recorded
    op = mapping(mapping(status.get("scaling")).get(replica))
    if op:
        if isinstance(op.get("generation"), int) and op["generation"] > generation:
            return Progress(f"replaced by a newer edit of replicas, to {op.get('to')}", EXIT_UNDONE)
        return Progress(op_text(op, pods_running, now))
    current = mapping(status.get("currentReplicas")).get(replica)
    wanted = mapping(mapping(mapping(job.get("spec")).get("replicaSpecs")).get(replica)).get("replicas")
    if current is not None and current == wanted:
        if not status.get("startRunningTime"):
            return Progress(f"the job has not run yet: replica {replica} now has {wanted} pods", EXIT_DONE)
        return Progress(f"replica {replica} already has {wanted} pods", EXIT_DONE)
    return Progress("waiting for the operator")


def recorded_outcome(status: Mapping[str, Any], replica: str, generation: int) -> Progress | None:
    """recorded_outcome: the end of the scale as ``status.scaleHistory`` records it, or None
    while it holds nothing on it. Only the newest entry of ``replica`` counts: a newer
    generation's means this edit was replaced, an older one's that this one is not done yet."""
    for entry in reversed(status.get("scaleHistory") or []):
        h = mapping(entry)
        if h.get("replica") != replica or not isinstance(h.get("generation"), int):
            continue
        if h["generation"] > generation:
            return Progress(f"replaced by a newer edit: {h.get('message', '')}", EXIT_UNDONE)
        if h["generation"] == generation:
            done = h.get("reason") == SCALE_SUCCEEDED
            return Progress(str(h.get("message", "")), EXIT_DONE if done else EXIT_UNDONE)
        return None
    return None


def op_text(op: Mapping[str, Any], pods_running: Callable[[Sequence[str]], int], now: datetime) -> str:
    """op_text: one line on the operation in flight (``status.scaling.<replica>``) at ``now``."""
    pods = [str(p) for p in op.get("pods") or []]
    head = f"{op.get('operation')} from {op.get('from')} to {op.get('to')}"
    deadline = parse_time(op.get("deadline"))
    left = max(int((deadline - now).total_seconds()), 0) if deadline else None
    if op.get("operation") == api.ScaleOperation.SCALE_OUT.value:
        when = f", rolled back in {left}s if not" if left is not None else ""
        return f"{head}: {pods_running(pods)} of {len(pods)} new pods running{when}"
    if op.get("operation") == api.ScaleOperation.SCALE_IN.value:
        draining = op.get("draining") or []
        when = f"; deleted in {left}s" if left is not None else ""
        return f"{head}: pods [{' '.join(pods)}] left the host list ({len(draining)} draining){when}"
    return f"rolling back: {op.get('message', '')}"
