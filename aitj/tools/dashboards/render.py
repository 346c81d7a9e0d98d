"""render: every panel of a dashboard drawn with matplotlib from a live Prometheus, laid out on
Grafana's grid, one PNG per dashboard. Grafana itself cannot run here; the queries are the same
ones Grafana runs (``spec.substitute`` fills its variables), a range query for a time series and
an instant query at the end of the range for a stat or a bar gauge.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aitj.devcluster.prometheus import PrometheusAPI
from aitj.tools.dashboards.grafana import GRID_COLUMNS
from aitj.tools.dashboards.spec import Dashboard, Panel, Viz, substitute

UNIT_SUFFIX = {"s": " s", "h": " h", "ops": "/s", "short": "", "percentunit": " %"}
GRID_UNIT_INCHES = 0.36  # one grid row's height, and one column's width is 16 in / 24
BAR_LEFT = 0.42  # where a bar gauge's bars start, in the panel's width (the names are left of it)
PALETTE = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0")


@dataclass(frozen=True)
class Window:
    """Window: the time range drawn and the values of the dashboard's variables."""

    start: float
    end: float
    variables: dict[str, str]

    def values(self) -> dict[str, str]:
        """values: Grafana's built-in variables for this range, and the dashboard's own."""
        span = max(1, round(self.end - self.start))
        rate = self.variables.get("__rate_interval", f"{max(60, span // 20)}s")
        # "cluster": Grafana's "All" (boards.CLUSTER), which matches series without the label.
        return {
            "__range": f"{span}s",
            "__rate_interval": rate,
            "datasource": "",
            "cluster": ".*",
            **self.variables,
        }


def legend(template: str, labels: dict[str, str]) -> str:
    """legend: Grafana's ``{{label}}`` legend template filled from a series' labels."""
    text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
    return text.strip() or ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "value"


def _number(value: float) -> str:
    # Whole numbers as they are, others to three significant digits, never in e-notation.
    if value == int(value):
        return f"{value:.0f}"
    return f"{value:.3g}" if 0.001 <= abs(value) < 1000 else f"{value:.3f}"


# Grafana's time units scale to the one that reads best: 0.0005 h shows as 1.8 s.
_TIME_UNITS = ((3600.0, "h"), (60.0, "min"), (1.0, "s"), (0.001, "ms"))


def fmt(value: float, unit: str) -> str:
    """fmt: a value as Grafana would label it in ``unit``."""
    if math.isnan(value):
        return "NaN"
    if unit in ("s", "h"):
        seconds = value * (3600 if unit == "h" else 1)
        if not seconds:
            return "0 s"
        size, name = next(((f, n) for f, n in _TIME_UNITS if abs(seconds) >= f), _TIME_UNITS[-1])
        return f"{_number(seconds / size)} {name}"
    if unit == "percentunit":
        value *= 100
    if unit.startswith("suffix:"):  # Grafana's custom unit: the number, then the text as written
        return f"{_number(value)}{unit.removeprefix('suffix:')}"
    return f"{_number(value)}{UNIT_SUFFIX.get(unit, ' ' + unit)}"


def _instant(api: PrometheusAPI, panel: Panel, window: Window) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for q in panel.queries:
        for series in api.query(substitute(q.expr, window.values()), at=window.end):
            out.append((legend(q.legend, series["metric"]), float(series["value"][1])))
    return out


def _draw(ax: Any, api: PrometheusAPI, panel: Panel, window: Window) -> None:
    ax.set_title(panel.title, loc="left", fontsize=10, color="#d8d9da")
    if panel.viz is Viz.TIMESERIES:
        step = max(1.0, (window.end - window.start) / 240)
        drawn = 0
        for q in panel.queries:
            expr = substitute(q.expr, window.values())
            for series in api.query_range(expr, window.start, window.end, step):
                xs = [float(t) for t, _ in series["values"]]
                ys = [float(v) * (100 if panel.unit == "percentunit" else 1) for _, v in series["values"]]
                color = PALETTE[drawn % len(PALETTE)]
                ax.plot(xs, ys, lw=1.4, color=color, label=legend(q.legend, series["metric"]))
                drawn += 1
        if drawn:
            ax.legend(fontsize=7, loc="upper left", frameon=False, labelcolor="#d8d9da")
        axis = UNIT_SUFFIX.get(panel.unit, panel.unit.removeprefix("suffix:"))
        ax.set_ylabel(axis.strip(), fontsize=8, color="#9fa7b3")
        _time_axis(ax, window)
        _no_data(ax, drawn == 0)
        return
    values = [(name, v) for name, v in _instant(api, panel, window) if not math.isnan(v)]
    ax.set_xticks([])
    ax.set_yticks([])
    if panel.viz is Viz.STAT:
        for i, (name, v) in enumerate(values):
            y = 1 - (i + 1) / (len(values) + 1)
            ax.text(0.5, y + 0.08, fmt(v, panel.unit), ha="center", fontsize=20, color=_color(panel, v))
            ax.text(0.5, y - 0.05, name, ha="center", fontsize=8, color="#9fa7b3")
    else:
        # Grafana's horizontal bar gauge: the name on the left, the bar, the value at its end.
        values.sort(key=lambda nv: nv[1])
        top = 1.0 if panel.unit == "percentunit" else max((v for _, v in values), default=1) or 1
        size = 7 if len(values) <= 8 else 6
        for i, (name, v) in enumerate(values):
            width = 0.45 * min(max(v / top, 0), 1)
            ax.barh(i, width, left=BAR_LEFT, color=_color(panel, v), height=0.7)
            ax.text(0.01, i, name, fontsize=size, color="#d8d9da", va="center")
            ax.text(
                BAR_LEFT + width + 0.01, i, fmt(v, panel.unit), fontsize=size, color="#d8d9da", va="center"
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.6, max(len(values), 3) - 0.4)
    _no_data(ax, not values)


def _color(panel: Panel, value: float) -> str:
    return "#e24d42" if panel.red_from is not None and value >= panel.red_from else "#73bf69"


def _no_data(ax: Any, empty: bool) -> None:
    if empty:
        ax.text(0.5, 0.5, "No data", transform=ax.transAxes, ha="center", va="center", color="#9fa7b3")


def _time_axis(ax: Any, window: Window) -> None:
    """Five ticks over the range, labelled HH:MM:SS in UTC (the title says UTC)."""
    ticks = [window.start + (window.end - window.start) * i / 4 for i in range(5)]
    ax.set_xlim(window.start, window.end)
    ax.set_xticks(ticks, [datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S") for t in ticks])


def render(board: Dashboard, api: PrometheusAPI, window: Window, out: Path) -> Path:
    """render: draws ``board`` into ``out`` (a PNG) and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The same placement as the Grafana JSON: a one-unit row header, panels wrapped at 24.
    placed: list[tuple[str | Panel, int, int, int, int]] = []
    y = 0
    for row in board.rows:
        placed.append((row.title, 0, y, GRID_COLUMNS, 1))
        y += 1
        x, band = 0, 0
        for panel in row.panels:
            if x + panel.width > GRID_COLUMNS:
                x, y, band = 0, y + band, 0
            placed.append((panel, x, y, panel.width, panel.height))
            x += panel.width
            band = max(band, panel.height)
        y += band
    header = 2
    total = y + header
    fig = plt.figure(figsize=(16, total * GRID_UNIT_INCHES), facecolor="#111217")
    taken = datetime.fromtimestamp(window.end, UTC).strftime("%Y-%m-%d %H:%M UTC")
    fig.text(0.01, 1 - 0.9 / total, f"{board.title}   ({taken}, last {window.values()['__range']})",
             fontsize=14, color="#d8d9da", va="center")  # fmt: skip
    for item, x, y0, w, h in placed:
        left, bottom = x / GRID_COLUMNS, 1 - (header + y0 + h) / total
        if isinstance(item, str):
            fig.text(left + 0.005, bottom + 0.3 / total, item, fontsize=11, color="#d8d9da", weight="bold")
            continue
        # Room on the left for a time series' value axis; a stat or bar gauge has none.
        pad_x = 0.032 if item.viz is Viz.TIMESERIES else 0.004
        pad_y = 0.9 / total
        ax = fig.add_axes(
            (left + 0.006 + pad_x, bottom + pad_y, w / GRID_COLUMNS - 0.012 - pad_x, h / total - 1.5 / total)
        )
        ax.set_facecolor("#181b1f")
        ax.tick_params(colors="#9fa7b3", labelsize=7)
        for spine in ax.spines.values():
            spine.set_color("#2c3235")
        _draw(ax, api, item, window)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90, facecolor=fig.get_facecolor())
    plt.close(fig)
    return out
