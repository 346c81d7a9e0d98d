"""The dashboards and alerts (aitj/tools/dashboards), read as data and as the files made from them.

promtool checks the rules in test_promtool.py; a real Prometheus evaluates every query in
tests/e2e/test_prometheus.py. Here: the committed files are the generated ones, every query names
only what the operator exports, the layout and the runbooks are complete.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from aitj.controller.metrics import CATALOGUE
from aitj.tools.dashboards import alerts, generate, grafana
from aitj.tools.dashboards.boards import DASHBOARDS, FLEET, JOB
from aitj.tools.dashboards.promql import PromQLError, problems, usage
from aitj.tools.dashboards.render import fmt, legend
from aitj.tools.dashboards.spec import Dashboard, substitute
from tests.seeds import REPO

SCHEMA_VERSION = 41  # Grafana 11.6's dashboard schema


def every_expression() -> list[tuple[str, str, str]]:
    """every_expression: (where, expr, legend) of every panel query and alert rule."""
    out = [(f"{b.uid}/{p.title}", q.expr, q.legend) for b in DASHBOARDS for p in b.panels for q in p.queries]
    out += [(f"alert {a.name}", a.expr, "") for a in alerts.ALERTS]
    out += [(f"{b.uid} variable {v.name}", v.query, "") for b in DASHBOARDS for v in b.variables]
    return out


def test_the_committed_dashboards_rules_and_manifests_are_the_generated_ones() -> None:
    for rel, text in generate.files().items():
        path = REPO / rel
        assert path.exists(), f"{rel} is missing: run `aitj dev dashboards generate`"
        assert path.read_text() == text, f"{rel} is stale: run `aitj dev dashboards generate`"


@pytest.mark.parametrize(("where", "expr", "legend_format"), every_expression())
def test_every_query_and_rule_names_only_metrics_and_labels_the_operator_exports(
    where: str, expr: str, legend_format: str
) -> None:
    assert problems(expr, legend_format) == [], where


@pytest.mark.parametrize(
    ("expr", "legend_format", "complaint"),
    [
        ("sum(rate(aitj_restarts[5m]))", "", "metric 'aitj_restarts' is not exported"),
        ('aitj_jobs{job="x"}', "", "aitj_jobs has no label 'job'"),
        ('aitj_restarts_total{job="x"}', "", "aitj_restarts_total has no label 'job'"),
        ("sum by (replica) (aitj_jobs)", "", "label 'replica' is on none of ['aitj_jobs']"),
        ("sum by (phase) (aitj_jobs)", "{{cause}}", "label 'cause' is on none of ['aitj_jobs']"),
        ("aitj_recovery_seconds{le='1'}", "", "metric 'aitj_recovery_seconds' is not exported"),
        ("aitj_recovery_seconds_count{le='1'}", "", "aitj_recovery_seconds_count has no label 'le'"),
        ("instance_up(aitj_jobs)", "", "unknown function 'instance_up'"),
    ],
)
def test_the_check_names_what_the_operator_does_not_export(
    expr: str, legend_format: str, complaint: str
) -> None:
    assert any(complaint in p for p in problems(expr, legend_format)), problems(expr, legend_format)


def test_the_tokenizer_reads_selectors_grouping_and_calls_apart() -> None:
    found = usage(
        "histogram_quantile(0.99, sum by (cause, le) "
        '(rate(aitj_recovery_seconds_bucket{scope!="All"}[$__rate_interval])))'
        " > 300 and on (cause) sum without (scope) (aitj_restarts_total offset 5m) > bool 2"
    )
    assert found.selectors == {"aitj_recovery_seconds_bucket": {"scope"}, "aitj_restarts_total": set()}
    assert found.grouping == {"cause", "le", "scope"}
    assert found.functions == {"histogram_quantile", "sum", "rate"}


def test_the_tokenizer_refuses_what_it_cannot_read() -> None:
    with pytest.raises(PromQLError):
        usage("sum(aitj_jobs) @@ 1")


def test_every_family_of_the_catalogue_is_on_a_dashboard_or_in_a_rule() -> None:
    used = {name for _, expr, _ in every_expression() for name in usage(expr).selectors}
    missing = [f.name for f in CATALOGUE if not set(f.series_names()) & used]
    # Pods created and deleted are in the operator's logs and events; no panel needs them. The
    # work queue's adds are for controller-runtime's own dashboards (its depth and waits are here).
    assert missing == [
        "aitj_fault_detection_seconds",
        "aitj_pods_created_total",
        "aitj_pods_deleted_total",
        "workqueue_adds_total",
    ]


@pytest.mark.parametrize("board", DASHBOARDS, ids=lambda b: b.uid)
def test_each_dashboard_has_a_fixed_uid_the_current_schema_and_reads_the_datasource_variable(
    board: Dashboard,
) -> None:
    built = grafana.build(board)
    assert built["uid"] == board.uid
    assert built["schemaVersion"] == SCHEMA_VERSION
    panels = [p for p in built["panels"] if p["type"] != "row"]
    assert len(panels) == len(board.panels)
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}"
        assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= grafana.GRID_COLUMNS
    assert built["templating"]["list"][0]["name"] == "datasource"


def test_no_two_panels_of_a_dashboard_overlap() -> None:
    for board in DASHBOARDS:
        cells: set[tuple[int, int]] = set()
        for p in grafana.build(board)["panels"]:
            g = p["gridPos"]
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
            assert not mine & cells, f"{board.uid}: {p['title']} overlaps"
            cells |= mine


def test_the_job_dashboard_filters_every_query_on_its_namespace_and_job_variables() -> None:
    assert [v.name for v in JOB.variables] == ["cluster", "namespace", "job_name"]
    for panel in JOB.panels:
        for q in panel.queries:
            assert 'namespace="$namespace", job_name="$job_name"' in q.expr, panel.title


def test_the_fleet_overview_has_the_panels_the_issue_asks_for() -> None:
    titles = " | ".join(p.title for p in FLEET.panels).lower()
    for words in (
        "jobs by phase",
        "restarts by cause",
        "p50 / p90 / p99",
        "lost gpu-hours",
        "scaling",
        "budgets",
    ):
        assert words in titles, words
    assert "reconcile" in titles


def test_the_dashboards_config_map_carries_every_dashboard_for_the_grafana_sidecar() -> None:
    cm = generate.dashboards_config_map()
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert {json.loads(v)["uid"] for v in cm["data"].values()} == {b.uid for b in DASHBOARDS}


def test_every_alert_has_a_summary_a_description_and_a_runbook_section_and_every_section_an_alert() -> None:
    runbooks = (REPO / "docs" / "runbooks.md").read_text()
    sections = re.findall(r"^## (\w+)$", runbooks, re.M)
    assert sections == [a.name for a in alerts.ALERTS]
    for rule in alerts.rule_groups()["groups"][0]["rules"]:
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"]
        assert notes["runbook_url"] == f"{alerts.RUNBOOK_BASE}#{rule['alert'].lower()}"
        assert notes["runbook_url"].startswith("https://"), "an alert receiver opens only an absolute URL"


def test_the_issue_s_alerts_and_the_degraded_state_s_are_all_there() -> None:
    names = {a.name for a in alerts.ALERTS}
    assert names == {
        "AitjOperatorDown",
        "AitjRestartStorm",
        "AitjRestartBudgetNearLimit",
        "AitjJobStuck",
        "AitjJobDegraded",
        "AitjRecoveryP99High",
        "AitjReconcileErrors",
    }


def test_substitute_fills_grafana_variables_and_refuses_an_unknown_one() -> None:
    assert substitute(
        'x{job_name="$job_name"}[$__range] ${datasource}',
        {"job_name": "a", "__range": "5m", "datasource": "p"},
    ) == ('x{job_name="a"}[5m] p')
    with pytest.raises(KeyError):
        substitute("rate(x[$__rate_interval])", {})


def test_legends_and_values_read_as_grafana_shows_them() -> None:
    assert legend("{{cause}} ({{scope}})", {"cause": "exitCode", "scope": "Pod"}) == "exitCode (Pod)"
    assert legend("", {"phase": "Running"}) == "phase=Running"
    assert fmt(0.85, "percentunit") == "85 %"
    assert fmt(12.0, "s") == "12 s"
    assert fmt(0.0005, "h") == "1.8 s"
    assert fmt(0.495, "s") == "495 ms"
    assert fmt(5400, "s") == "1.5 h"
    assert fmt(0, "h") == "0 s"
    assert fmt(0, "short") == "0"


def test_every_panel_and_row_has_its_own_id() -> None:
    for board in DASHBOARDS:
        ids = [p["id"] for p in grafana.build(board)["panels"]]
        assert sorted(ids) == list(range(1, len(ids) + 1)), board.uid


# ---- units, read from the committed dashboard JSON ------------------------------------------

# Counters of whole events: an increase() of one of them is a count, shown whole.
EVENT_COUNTERS = (
    "aitj_restarts_total",
    "aitj_jobs_finished_total",
    "aitj_scaling_operations_total",
    "aitj_pods_created_total",
    "aitj_pods_deleted_total",
    "aitj_reconcile_errors_total",
)
# Grafana's time units: each draws a number as a duration.
TIME_UNITS = {"ns", "µs", "ms", "s", "m", "h", "d", "dtdurations", "dtdhms", "clocks", "clockms"}


def committed_panels() -> list[tuple[str, dict[str, Any]]]:
    """committed_panels: (dashboard file, panel) of every panel the committed JSON holds."""
    out = []
    for board in DASHBOARDS:
        built = json.loads((REPO / "dashboards" / f"{board.uid}.json").read_text())
        out += [(board.uid, p) for p in built["panels"] if p["type"] != "row"]
    return out


@pytest.mark.parametrize(
    ("uid", "panel"), committed_panels(), ids=lambda x: x if isinstance(x, str) else x["title"]
)
def test_each_panel_s_unit_says_what_its_number_is(uid: str, panel: dict[str, Any]) -> None:
    defaults = panel["fieldConfig"]["defaults"]
    exprs = [t["expr"] for t in panel["targets"]]
    if any("aitj_lost_gpu_seconds_total" in e for e in exprs):
        # GPU-hours: the seconds over 3600, as a number of GPU-hours, never as a duration.
        assert all(e.endswith("/ 3600") for e in exprs), exprs
        assert defaults["unit"] == "suffix: GPU-h", (uid, panel["title"])
    elif any("aitj_job_goodput_ratio" in e for e in exprs):
        # a share of time: the ratio, and seconds training over all seconds in the range
        assert defaults["unit"] == "percentunit", (uid, panel["title"])
    elif any(f"increase({c}" in e for e in exprs for c in EVENT_COUNTERS):
        # increase() extrapolates (one event reads 0.67 or 1.33): rounded, shown without decimals.
        assert all(e.startswith("round(") for e in exprs), exprs
        assert defaults["unit"] == "short" and defaults["decimals"] == 0, (uid, panel["title"])
    elif any("_seconds" in e for e in exprs) and "rate(aitj_reconcile_seconds_count" not in exprs[0]:
        assert defaults["unit"] == "s", (uid, panel["title"])
    if defaults["unit"] in TIME_UNITS:
        assert any("_seconds" in e for e in exprs), f"{panel['title']}: a duration unit on no duration"


def test_the_lost_gpu_hours_stat_reads_hours_as_a_number_not_as_a_duration() -> None:
    (stat,) = [p for p in FLEET.panels if p.title == "Lost GPU-hours"]
    assert fmt(0.0015, stat.unit) == "0.0015 GPU-h"
    assert fmt(1.78, stat.unit) == "1.78 GPU-h"


@pytest.mark.parametrize("board", DASHBOARDS, ids=lambda b: b.uid)
def test_each_dashboard_has_a_cluster_variable_that_defaults_to_all_and_every_query_reads_it(
    board: Dashboard,
) -> None:
    variables = {v["name"]: v for v in grafana.build(board)["templating"]["list"]}
    cluster = variables["cluster"]
    assert cluster["query"] == "label_values(aitj_build_info, cluster)"
    # "All" as .*, which also matches series that have no cluster label (one Prometheus).
    assert cluster["includeAll"] is True and cluster["allValue"] == ".*"
    assert cluster["current"]["value"] == "$__all"
    for panel in board.panels:
        for q in panel.queries:
            for name, labels in usage(q.expr).selectors.items():
                assert "cluster" in labels, (panel.title, name)
    for v in board.variables[1:]:
        assert 'cluster=~"$cluster"' in v.query, v.name


# ---- picked up by kube-prometheus-stack, as shipped ------------------------------------------

# kube-prometheus-stack's Prometheus with the chart's default values (release name
# kube-prometheus-stack): it selects ServiceMonitors and PrometheusRules labelled with its
# release, in every namespace.
KPS_SELECTOR = {"release": "kube-prometheus-stack"}


def base_service() -> dict[str, Any]:
    """base_service: the metrics Service as the base kustomization renders it (its labels)."""
    service = yaml.safe_load((REPO / "manifests" / "base" / "service.yaml").read_text())
    kustomization = yaml.safe_load((REPO / "manifests" / "base" / "kustomization.yaml").read_text())
    for pairs in kustomization.get("labels") or []:
        service["metadata"]["labels"].update(pairs["pairs"])
    return service  # type: ignore[no-any-return]


def test_kube_prometheus_stack_with_default_values_selects_the_service_monitor_and_the_rules() -> None:
    monitor, rule, service = generate.service_monitor(), alerts.prometheus_rule(), base_service()
    # The Prometheus Operator's selection, by hand: the Prometheus selects the ServiceMonitor and
    # the PrometheusRule by label; the ServiceMonitor (no namespaceSelector: its own namespace)
    # selects the Service by label and its endpoint by port name.
    assert KPS_SELECTOR.items() <= monitor["metadata"]["labels"].items()
    assert KPS_SELECTOR.items() <= rule["metadata"]["labels"].items()
    assert "namespaceSelector" not in monitor["spec"]
    assert service["metadata"]["namespace"] == monitor["metadata"]["namespace"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    # The scrape job is the Service's name: what AitjOperatorDown's up{job=...} reads.
    assert service["metadata"]["name"] == alerts.SCRAPE_JOB
    # No honorLabels: the target's job, instance and namespace stay Prometheus's; the relabelings
    # give the per-job series their training job's namespace back.
    assert "honorLabels" not in endpoint
    assert endpoint["metricRelabelings"] == [dict(r) for r in generate.METRIC_RELABELINGS]
