"""The scale operations a status write finished, for ``aitj_scaling_operations_total``.

Pure. A pass that ends a scale operation appends its entry to ``status.scaleHistory``
(``aitj.core.planner.scaling.messages``): the entries of the status written that the status
planned from does not hold are the operations this write finished. The status write tests the
job's resourceVersion, so "the status planned from" is exactly the one it replaced, and a pass
replayed (after a conflict, or by a new operator) finds them there already: each is counted once.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitj.core.api import JobStatus, ScaleHistoryEntry, ScaleOperation
from aitj.core.planner.scaling.operation import CANCELLED, FAILED, SUCCEEDED, TIMED_OUT
from aitj.core.telemetry.labels import ScaleDirection, ScaleResult

_RESULTS = {
    SUCCEEDED: ScaleResult.SUCCEEDED,
    FAILED: ScaleResult.FAILED,
    TIMED_OUT: ScaleResult.ROLLED_BACK,
    CANCELLED: ScaleResult.CANCELLED,
}


@dataclass(frozen=True)
class Scaled:
    """Scaled: one scale operation finished: its replica, which way it went and how it ended."""

    replica: str
    direction: ScaleDirection
    result: ScaleResult


def finished_scalings(before: JobStatus | None, after: JobStatus) -> tuple[Scaled, ...]:
    """finished_scalings: the operations whose ``scaleHistory`` entry ``after`` adds to
    ``before`` (two statuses), oldest first. Entries it cannot read are skipped."""
    old = (before.scale_history if before is not None else None) or ()
    out = []
    for entry in after.scale_history or ():
        if entry in old:
            continue
        scaled = _scaled(entry)
        if scaled is not None:
            out.append(scaled)
    return tuple(out)


def _scaled(e: ScaleHistoryEntry) -> Scaled | None:
    """_scaled: one history entry's replica, direction and result. A rollback's direction is the
    one of the operation it ends (``from`` and ``to``)."""
    result = _RESULTS.get(str(e.reason))
    source, target = e.source, e.target
    if result is None or source is None or target is None:
        return None
    if e.operation is ScaleOperation.SCALE_OUT:
        direction = ScaleDirection.OUT
    elif e.operation is ScaleOperation.SCALE_IN:
        direction = ScaleDirection.IN
    else:
        direction = ScaleDirection.OUT if target > source else ScaleDirection.IN
    return Scaled(e.replica or "", direction, result)
