"""The dashboards' and alerts' own vocabulary: panels, queries, dashboards and alert rules as
plain data.

One source feeds everything: the Grafana JSON (``grafana``), the PrometheusRule and promtool's
rules file (``alerts``), the PNG renderer (``render``), the catalogue check (``promql``) and the
end-to-end test that evaluates every query on a real Prometheus. A panel is described once, so
what Grafana shows, what the pictures show and what the tests check cannot drift apart.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field


class Viz(enum.StrEnum):
    """Viz: how a panel draws its queries (the Grafana panel type)."""

    TIMESERIES = "timeseries"  # lines over the time range (a range query)
    STAT = "stat"  # one number per series, at the end of the range (an instant query)
    BARGAUGE = "bargauge"  # one bar per series, at the end of the range (an instant query)


@dataclass(frozen=True)
class Query:
    """Query: one PromQL expression of a panel and the legend of its series (Grafana's
    ``{{label}}`` template)."""

    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    """Panel: a titled visualisation of one or more queries, placed on Grafana's 24-column grid."""

    title: str
    viz: Viz
    queries: tuple[Query, ...]
    description: str
    # A Grafana unit id: short, s, percentunit, ops, or a custom "suffix:<text>" (GPU_HOURS).
    # Not "h": Grafana's hours are a duration, and draw 0.0005 GPU-hours as "1.8 s".
    unit: str = "short"
    # Digits after the point; 0 for counts of whole events (None: Grafana chooses).
    decimals: int | None = None
    width: int = 12
    height: int = 8
    # A value at or above it is drawn red (budgets near their limit, slow recoveries).
    red_from: float | None = None
    # What the panel is about, for the end-to-end test's "returns data" check.
    topic: str = ""


@dataclass(frozen=True)
class Row:
    """Row: a titled band of panels, laid left to right and wrapped at 24 columns."""

    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Variable:
    """Variable: a template variable filled from a label's values (``label_values(query, label)``)."""

    name: str
    label: str
    query: str  # the series selector whose label values are offered
    # With "All" offered and chosen at first, as the regex ``.*``: that also matches a series
    # without the label, so a variable over a label the setup may not have (``cluster``)
    # filters nothing there.
    everything: bool = False


@dataclass(frozen=True)
class Dashboard:
    """Dashboard: the uid is fixed so links and the Grafana sidecar's updates keep finding it."""

    uid: str
    title: str
    description: str
    rows: tuple[Row, ...]
    variables: tuple[Variable, ...] = ()
    tags: tuple[str, ...] = ("aitj",)

    @property
    def panels(self) -> tuple[Panel, ...]:
        """panels: every panel, row by row."""
        return tuple(p for row in self.rows for p in row.panels)


@dataclass(frozen=True)
class Alert:
    """Alert: a Prometheus alerting rule; its runbook is the section of docs/runbooks.md whose
    anchor is ``anchor``."""

    name: str
    expr: str
    duration: str  # the rule's ``for``
    severity: str
    summary: str
    description: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        """anchor: the runbook section's GitHub anchor (the heading is the alert's name)."""
        return self.name.lower()


# The unit of GPU-hours: a plain number with a suffix, never a duration.
GPU_HOURS = "suffix: GPU-h"

# Grafana's built-in variables and the dashboards' own, with the values a tool outside Grafana
# (the renderer, the end-to-end test) gives them.
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def substitute(expr: str, values: dict[str, str]) -> str:
    """substitute: ``expr`` with every ``$name`` / ``${name}`` replaced from ``values``; a name
    that is not there raises KeyError, so no query reaches Prometheus half-filled."""
    return _VARIABLE.sub(lambda m: values[m.group(1) or m.group(2)], expr)
