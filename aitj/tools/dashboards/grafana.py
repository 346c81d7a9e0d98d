"""grafana: the dashboards (``spec``) as Grafana dashboard JSON, built with Grafana Labs'
grafana-foundation-sdk (the types and builders generated from Grafana's own schema, so a field
Grafana 11.6 does not know cannot be written).

Panels sit on Grafana's 24-column grid: a row header, then its panels left to right, wrapped at
24 columns. Every query reads the ``datasource`` variable, so one dashboard serves any
Prometheus data source.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import bargauge, common, dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as models

from aitj.tools.dashboards.spec import Dashboard, Panel, Viz

DATASOURCE = models.DataSourceRef(type_val="prometheus", uid="${datasource}")
GRID_COLUMNS = 24
ROW_HEIGHT = 1


def _thresholds(red_from: float | None) -> dashboard.ThresholdsConfig:
    steps = [models.Threshold(value=None, color="green")]
    if red_from is not None:
        steps.append(models.Threshold(value=red_from, color="red"))
    return dashboard.ThresholdsConfig().mode(models.ThresholdsMode.ABSOLUTE).steps(steps)


def _panel(panel: Panel, pos: models.GridPos, panel_id: int) -> Any:
    """_panel: one spec panel as the SDK's builder of its visualisation."""
    builder: Any
    if panel.viz is Viz.TIMESERIES:
        builder = (
            timeseries.Panel()
            .fill_opacity(10)
            .legend(
                common.VizLegendOptions().display_mode(common_models.LegendDisplayMode.LIST).show_legend(True)
            )
        )
    elif panel.viz is Viz.STAT:
        builder = (
            stat.Panel()
            .graph_mode(common_models.BigValueGraphMode.AREA)
            .reduce_options(common.ReduceDataOptions().calcs(["lastNotNull"]))
        )
    else:
        builder = (
            bargauge.Panel()
            .display_mode(common_models.BarGaugeDisplayMode.GRADIENT)
            .orientation(common_models.VizOrientation.HORIZONTAL)
            .reduce_options(common.ReduceDataOptions().calcs(["lastNotNull"]))
            .min(0)
        )
        if panel.unit == "percentunit":
            builder = builder.max(1)
    builder = (
        builder.id(panel_id)
        .title(panel.title)
        .description(panel.description)
        .datasource(DATASOURCE)
        .unit(panel.unit)
        .grid_pos(pos)
        .thresholds(_thresholds(panel.red_from))
    )
    if panel.decimals is not None:
        builder = builder.decimals(panel.decimals)
    instant = panel.viz is not Viz.TIMESERIES
    for i, query in enumerate(panel.queries):
        target = (
            prometheus.Dataquery()
            .ref_id(chr(ord("A") + i))
            .expr(query.expr)
            .legend_format(query.legend)
            .datasource(DATASOURCE)
        )
        builder = builder.with_target(target.instant() if instant else target.range())
    return builder


def build(board: Dashboard) -> dict[str, Any]:
    """build: the Grafana dashboard JSON of ``board`` (as a dict, ready for json.dumps)."""
    out = (
        dashboard.Dashboard(board.title)
        .uid(board.uid)
        .description(board.description)
        .tags(list(board.tags))
        .time("now-6h", "now")
        .refresh("1m")
        .editable()
        .with_variable(dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus"))
    )
    for var in board.variables:
        variable = (
            dashboard.QueryVariable(var.name)
            .label(var.label)
            .datasource(DATASOURCE)
            .query(f"label_values({var.query}, {var.name})")
            .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(models.VariableSort.ALPHABETICAL_ASC)
        )
        if var.everything:
            everything = models.VariableOption(selected=True, text="All", value="$__all")
            variable = variable.include_all(True).all_value(".*").current(everything)
        out = out.with_variable(variable)
    y, ids = 0, 0
    for row in board.rows:
        ids += 1
        header = models.GridPos(h=ROW_HEIGHT, w=GRID_COLUMNS, x=0, y=y)
        out = out.with_row(dashboard.Row(row.title).id(ids).grid_pos(header))
        y += ROW_HEIGHT
        x, band = 0, 0
        for panel in row.panels:
            if x + panel.width > GRID_COLUMNS:
                x, y, band = 0, y + band, 0
            ids += 1
            out = out.with_panel(_panel(panel, models.GridPos(h=panel.height, w=panel.width, x=x, y=y), ids))
            x += panel.width
            band = max(band, panel.height)
        y += band
    return json.loads(JSONEncoder(sort_keys=True, indent=2).encode(out.build()))  # type: ignore[no-any-return]


def dumps(board: Dashboard) -> str:
    """dumps: the dashboard JSON as the file dashboards/<uid>.json holds it."""
    return json.dumps(build(board), indent=2, sort_keys=True) + "\n"
