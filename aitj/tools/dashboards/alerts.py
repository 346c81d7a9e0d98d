"""alerts: the alert rules as data, and the two files made from them: the PrometheusRule the
Prometheus Operator loads, and the plain rules file promtool and a bare Prometheus read.

Each alert's runbook is the section of docs/runbooks.md named after it, linked absolutely
(``RUNBOOK_BASE``) so that an alert receiver can open it. The thresholds are
constants here so the runbooks, the promtool unit tests and the rules say the same numbers.
"""

from __future__ import annotations

from typing import Any

from aitj.tools.dashboards.boards import BUDGET_RED, recovery_quantile
from aitj.tools.dashboards.spec import Alert

# The scrape job of the operator: a ServiceMonitor names it after the metrics Service
# (manifests/base/service.yaml); a hand-written scrape config must use the same job_name.
SCRAPE_JOB = "aitj-operator-metrics"
GROUP = "aitj"
# Where the runbooks are: every alert's runbook_url is RUNBOOK_BASE#<alert name, lower case>.
# The project has no public site, so the default is a reserved name (RFC 2606's .invalid) that
# says "set me" in every alert rather than a link that looks right and is not; docs/runbooks.md
# ("Where runbook_url points") is the one place that says how to point it at a served copy of
# docs/runbooks.md (`aitj dashboards generate --runbook-base`, a kustomize patch, the chart).
RUNBOOK_BASE = "https://aitj.invalid/docs/runbooks.md"
# The label kube-prometheus-stack's Prometheus selects ServiceMonitors and PrometheusRules by
# (its release name; the chart's default install is named kube-prometheus-stack).
PROMETHEUS_SELECTOR = {"release": "kube-prometheus-stack"}

STORM_RESTARTS = 5  # restarts of one job ...
STORM_WINDOW = "15m"  # ... within this window
RECOVERY_P99_SECONDS = 300
STUCK_FOR = "15m"
DEGRADED_FOR = "30m"  # a replacement that waits this long for a node, a backoff or a budget
RECONCILE_ERRORS = 5  # failed API calls within 10 minutes

ALERTS: tuple[Alert, ...] = (
    Alert(
        "AitjOperatorDown",
        # "or on ()": absent() speaks only when no target is down, so one outage is one alert.
        f'up{{job="{SCRAPE_JOB}"}} == 0 or on () absent(aitj_build_info)',
        "5m",
        "critical",
        "The aitj operator is down or not scraped.",
        "No operator replica has exported metrics for 5 minutes: failed pods are not being "
        "replaced and no job makes progress.",
    ),
    Alert(
        "AitjRestartStorm",
        f"sum by (namespace, job_name) (increase(aitj_restarts_total[{STORM_WINDOW}])) > {STORM_RESTARTS}",
        "0m",
        "warning",
        "Job {{ $labels.namespace }}/{{ $labels.job_name }} restarts again and again.",
        f"{{{{ $value | humanize }}}} restarts in the last {STORM_WINDOW}: a crash loop or a bad "
        "node is eating the job's restart budget and GPU time.",
    ),
    Alert(
        "AitjRestartBudgetNearLimit",
        f"aitj_restart_budget_used_ratio > {BUDGET_RED}",
        "1m",
        "warning",
        "Job {{ $labels.namespace }}/{{ $labels.job_name }} used most of its restart budget.",
        "Replica {{ $labels.replica }} used {{ $value | humanizePercentage }} of its restartLimit; "
        "at 100 % the job fails.",
    ),
    Alert(
        "AitjJobStuck",
        # aitj_job_replicas says which job misses pods, aitj_job_phase whether that same job
        # (namespace and name: two jobs of a namespace are apart) is Restarting or Scaling.
        'sum by (namespace, job_name) (aitj_job_replicas{state=~"pending|vacant"}) > 0 '
        'and on (namespace, job_name) aitj_job_phase{phase=~"Restarting|Scaling"}',
        STUCK_FOR,
        "warning",
        "Job {{ $labels.namespace }}/{{ $labels.job_name }} is stuck Restarting or Scaling.",
        f"{{{{ $value }}}} replicas have been pending or missing for {STUCK_FOR} while the job "
        "restarts or scales: no node fits, an image does not pull, or a quota is full.",
    ),
    Alert(
        "AitjJobDegraded",
        "aitj_job_degraded_indices > 0",
        DEGRADED_FOR,
        "warning",
        "Job {{ $labels.namespace }}/{{ $labels.job_name }} runs short of workers.",
        f"{{{{ $value }}}} indices have had no Running pod for {DEGRADED_FOR}: a replacement "
        "that does not schedule, a restart backoff, a rule's budget used up or a node excluded "
        "(status.degraded says which).",
    ),
    Alert(
        "AitjRecoveryP99High",
        f"{recovery_quantile(0.99, '30m')} > {RECOVERY_P99_SECONDS}",
        "5m",
        "warning",
        "Recovery from {{ $labels.cause }} takes too long.",
        "The 99th percentile of recovery time (fault observed to replacement Running) over 30 "
        f"minutes is {{{{ $value | humanizeDuration }}}}, above {RECOVERY_P99_SECONDS} s.",
    ),
    Alert(
        "AitjReconcileErrors",
        f'sum(increase(aitj_reconcile_errors_total{{stage="execute"}}[10m])) > {RECONCILE_ERRORS}',
        "10m",
        "warning",
        "The aitj operator's API calls keep failing.",
        "{{ $value | humanize }} reconcile passes failed on an API call in 10 minutes; the "
        "operator retries them with backoff, so jobs react late.",
    ),
)


def rule_groups(runbook_base: str = RUNBOOK_BASE) -> dict[str, Any]:
    """rule_groups: the alerts as Prometheus rule groups (the rules file's whole content, and
    the PrometheusRule's spec)."""
    return {
        "groups": [
            {
                "name": GROUP,
                "rules": [
                    {
                        "alert": a.name,
                        "expr": a.expr,
                        "for": a.duration,
                        "labels": {"severity": a.severity, **a.labels},
                        "annotations": {
                            "summary": a.summary,
                            "description": a.description,
                            "runbook_url": f"{runbook_base}#{a.anchor}",
                        },
                    }
                    for a in ALERTS
                ],
            }
        ]
    }


def prometheus_rule(runbook_base: str = RUNBOOK_BASE) -> dict[str, Any]:
    """prometheus_rule: the PrometheusRule object (monitoring.coreos.com/v1) holding the alerts."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "aitj-operator",
            "namespace": "aitj-system",
            "labels": {"app.kubernetes.io/component": "operator", **PROMETHEUS_SELECTOR},
        },
        "spec": rule_groups(runbook_base),
    }
