"""One row of the bench table: a figure's measured value against its bar, and whether it holds.

Pure: a Check is made from numbers already measured. ``figures`` builds the whole table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "pass"
    MISS = "miss"
    MEASURED = "measured"  # a figure with no bar of its own (the floor, the peer)
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Check:
    """Check: one row: the figure (``F3``), what was measured, the value as text, the bar as
    text, pass/miss, and the numbers behind it (for results.json)."""

    figure: str
    what: str
    value: str
    bar: str
    status: Status
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """as_dict: the row as results.json holds it."""
        return {
            "figure": self.figure,
            "what": self.what,
            "value": self.value,
            "bar": self.bar,
            "status": str(self.status),
            "data": self.data,
        }


@dataclass(frozen=True)
class Bar:
    """Bar: what a figure must stay at or under, as a number (``limit``, None when its reference
    was not measured) and as the table says it (``text``)."""

    limit: float | None
    text: str


def against(
    figure: str,
    what: str,
    measured: float | None,
    bar: Bar,
    *,
    value: str,
    data: dict[str, Any] | None = None,
    why_not: str = "",
) -> Check:
    """against: a row whose bar is ``measured <= bar.limit``. No measurement: not measured (the
    value says ``why_not``); no limit (its reference was not measured): measured only."""
    if measured is None:
        return Check(
            figure,
            what,
            f"not measured: {why_not}" if why_not else "not measured",
            bar.text,
            Status.NOT_MEASURED,
            data or {},
        )
    if bar.limit is None:
        return Check(figure, what, value, bar.text, Status.MEASURED, data or {})
    status = Status.PASS if measured <= bar.limit else Status.MISS
    return Check(figure, what, value, bar.text, status, {**(data or {}), "limit": bar.limit})


def measured(figure: str, what: str, value: str, data: dict[str, Any] | None = None) -> Check:
    """measured: a row with no bar (the floor, the peer): reported, never pass or miss."""
    return Check(figure, what, value, "measured", Status.MEASURED, data or {})


def not_measured(figure: str, what: str, bar: str, why: str) -> Check:
    """not_measured: a row that this run could not measure, saying why."""
    return Check(figure, what, f"not measured: {why}", bar, Status.NOT_MEASURED, {"why": why})
