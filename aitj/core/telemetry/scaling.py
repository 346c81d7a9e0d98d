"""The scale operations a status write finished, for ``aitj_scaling_operations_total``.

Pure. A pass that ends a scale operation appends its entry to ``status.scaleHistory``
(``aitj.core.planner.scaling.messages``): the entries of the status written that the status
planned from does not hold are the operations this write finished. The status write tests the
job's resourceVersion, so "the status planned from" is exactly the one it replaced, and a pass
replayed (after a conflict, or by a new operator) finds them there already: each is counted once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aitj.core.api import ScaleOperation
from aitj.core.planner.scaling.operation import CANCELLED, FAILED, SUCCEEDED, TIMED_OUT
from aitj.core.telemetry.labels import ScaleDirection, ScaleResult
from aitj.core.wire import as_int, as_list, mapping

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


def finished_scalings(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> tuple[Scaled, ...]:
    """finished_scalings: the operations whose ``scaleHistory`` entry ``after`` adds to
    ``before`` (two statuses), oldest first. Entries it cannot read are skipped."""
    old = as_list(mapping(before).get("scaleHistory"))
    out = []
    for entry in as_list(after.get("scaleHistory")):
        if entry in old:
            continue
        scaled = _scaled(mapping(entry))
        if scaled is not None:
            out.append(scaled)
    return tuple(out)


def _scaled(e: Mapping[str, Any]) -> Scaled | None:
    """_scaled: one history entry's replica, direction and result. A rollback's direction is the
    one of the operation it ends (``from`` and ``to``)."""
    result = _RESULTS.get(str(e.get("reason")))
    source, target = as_int(e.get("from")), as_int(e.get("to"))
    if result is None or source is None or target is None:
        return None
    operation = str(e.get("operation"))
    if operation == ScaleOperation.SCALE_OUT.value:
        direction = ScaleDirection.OUT
    elif operation == ScaleOperation.SCALE_IN.value:
        direction = ScaleDirection.IN
    else:
        direction = ScaleDirection.OUT if target > source else ScaleDirection.IN
    return Scaled(str(e.get("replica", "")), direction, result)
