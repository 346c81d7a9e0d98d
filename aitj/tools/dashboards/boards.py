"""boards: the two dashboards, fleet overview and per-job drill-down, as data (``spec``).

Every expression names only families of ``aitj.controller.metrics.CATALOGUE`` and their labels
(a unit test parses them). ``$__rate_interval`` and ``$__range`` are Grafana's: the rate window
it picks for the scrape interval, and the whole time range shown. The recovery histogram has no
``job_name`` label (a histogram per job would multiply its buckets by the jobs): the fleet overview
shows its percentiles, and the drill-down the job's own recovery figure (a summary without
quantiles and the last recovery's gauge: its mean and its last), which ends where the operator's
view ends, the replacements Running and listed for discovery.
"""

from __future__ import annotations

import re
from dataclasses import replace

from aitj.controller.metrics import CATALOGUE
from aitj.tools.dashboards.goodput import goodput_row
from aitj.tools.dashboards.spec import GPU_HOURS, Dashboard, Panel, Query, Row, Variable, Viz

QUANTILES = (0.5, 0.9, 0.99)
BUDGET_RED = 0.8  # the AitjRestartBudgetNearLimit alert's threshold


# The dashboards' first variable: the ``cluster`` label a multi-cluster setup puts on every series
# (an external label, a remote write's, Thanos'), "All" by default; a single Prometheus whose
# series have no such label sees all of them (``.*`` matches an absent label).
CLUSTER = Variable("cluster", "Cluster", "aitj_build_info", everything=True)
# Every series name of the catalogue, longest first (``x_bucket`` before ``x``).
_NAMES = sorted((n for f in CATALOGUE for n in f.series_names()), key=len, reverse=True)
_SELECTOR = re.compile(r"\b(" + "|".join(map(re.escape, _NAMES)) + r")\b(\{)?")


def in_cluster(expr: str) -> str:
    """in_cluster: ``expr`` with every operator series selector matching ``cluster=~"$cluster"``."""
    matcher = 'cluster=~"$cluster"'
    return _SELECTOR.sub(
        lambda m: f"{m.group(1)}{{{matcher}, " if m.group(2) else f"{m.group(1)}{{{matcher}}}", expr
    )


def per_cluster(board: Dashboard) -> Dashboard:
    """per_cluster: ``board`` with the ``cluster`` variable first and every query and variable
    filtered on it (the alerts are not: a Prometheus evaluates its own cluster's rules)."""
    rows = tuple(
        replace(
            row,
            panels=tuple(
                replace(p, queries=tuple(replace(q, expr=in_cluster(q.expr)) for q in p.queries))
                for p in row.panels
            ),
        )
        for row in board.rows
    )
    variables = tuple(replace(v, query=in_cluster(v.query)) for v in board.variables)
    return replace(board, rows=rows, variables=(CLUSTER, *variables))


def recovery_quantile(q: float, window: str, by: str = "cause") -> str:
    """recovery_quantile: the q-quantile of recovery time over ``window``, per ``by``."""
    return f"histogram_quantile({q}, sum by ({by}, le) (rate(aitj_recovery_seconds_bucket[{window}])))"


_FLEET_BOARD = Dashboard(
    uid="aitj-fleet-overview",
    title="aitj / Fleet overview",
    description="Every AITrainingJob the operator holds: phases, restarts, recovery time, "
    "what failures cost in GPU time, scaling, restart budgets, the operator's own health, its work "
    "queue and its API calls.",
    rows=(
        Row(
            "Jobs",
            (
                Panel(
                    "Jobs by phase",
                    Viz.BARGAUGE,
                    (Query("sum by (phase) (aitj_jobs)", "{{phase}}"),),
                    "Jobs the operator holds now, by phase (computed at scrape time).",
                    decimals=0,
                    width=8,
                ),
                Panel(
                    "Jobs finished",
                    Viz.BARGAUGE,
                    (
                        Query(
                            "round(sum by (phase, reason) (increase(aitj_jobs_finished_total[$__range])))",
                            "{{phase}} {{reason}}",
                        ),
                    ),
                    "Jobs that reached a final phase in the time range, by phase and reason.",
                    decimals=0,
                    width=8,
                ),
                Panel(
                    "Operator",
                    Viz.STAT,
                    (
                        Query("sum(aitj_build_info)", "replicas up"),
                        Query("sum(aitj_leader)", "leading"),
                        Query("sum(leader_election_master_status)", "Lease held"),
                    ),
                    "Operator replicas exporting metrics, how many lead (exactly one should), and "
                    "how many hold the leader election's Lease (none without leader election).",
                    decimals=0,
                    width=8,
                ),
            ),
        ),
        Row(
            "Restarts and recovery",
            (
                Panel(
                    "Restarts by cause",
                    Viz.TIMESERIES,
                    (
                        Query(
                            "round(sum by (cause) (increase(aitj_restarts_total[$__rate_interval])))",
                            "{{cause}}",
                        ),
                    ),
                    "Restarts carried out, by the failure that caused them.",
                    decimals=0,
                    topic="restarts",
                ),
                Panel(
                    "Restarts in range",
                    Viz.BARGAUGE,
                    (
                        Query(
                            "round(sum by (cause, scope) (increase(aitj_restarts_total[$__range])))",
                            "{{cause}} ({{scope}})",
                        ),
                    ),
                    "Restarts in the time range by cause and scope (Pod, Replica, All).",
                    decimals=0,
                    topic="restarts",
                ),
                Panel(
                    "Recovery time p50 / p90 / p99 by cause",
                    Viz.TIMESERIES,
                    tuple(
                        Query(recovery_quantile(q, "$__rate_interval"), f"p{round(q * 100)} {{{{cause}}}}")
                        for q in QUANTILES
                    ),
                    "From the fault observed by the operator to the replacement pod Running.",
                    unit="s",
                    topic="recovery",
                ),
                Panel(
                    "Recovery time in range",
                    Viz.BARGAUGE,
                    tuple(
                        Query(recovery_quantile(q, "$__range"), f"p{round(q * 100)} {{{{cause}}}}")
                        for q in QUANTILES
                    ),
                    "Recovery percentiles over the whole time range, by cause.",
                    unit="s",
                    topic="recovery",
                ),
            ),
        ),
        Row(
            "Cost and scaling",
            (
                Panel(
                    "Lost GPU-hours",
                    Viz.STAT,
                    (Query("sum(increase(aitj_lost_gpu_seconds_total[$__range])) / 3600", "GPU-hours"),),
                    "GPUs of each restarted pod times the time from its fault to its replacement "
                    "Running, summed over the time range.",
                    unit=GPU_HOURS,
                    width=6,
                    topic="lost GPU",
                ),
                Panel(
                    "Lost GPU-hours by cause",
                    Viz.TIMESERIES,
                    (
                        Query(
                            "sum by (cause) (increase(aitj_lost_gpu_seconds_total[$__rate_interval])) / 3600",
                            "{{cause}}",
                        ),
                    ),
                    "GPU time lost to failures, by cause.",
                    unit=GPU_HOURS,
                    width=9,
                    topic="lost GPU",
                ),
                Panel(
                    "Scaling operations",
                    Viz.BARGAUGE,
                    (
                        Query(
                            "round(sum by (direction, result) "
                            "(increase(aitj_scaling_operations_total[$__range])))",
                            "{{direction}} {{result}}",
                        ),
                    ),
                    "Scaling operations finished in the time range, by direction and result.",
                    decimals=0,
                    width=9,
                    topic="scaling",
                ),
            ),
        ),
        Row(
            "Budgets and the operator's health",
            (
                Panel(
                    "Restart budgets near their limit",
                    Viz.BARGAUGE,
                    (
                        Query(
                            "topk(10, aitj_restart_budget_used_ratio)",
                            "{{namespace}}/{{job_name}} {{replica}}",
                        ),
                    ),
                    "RestartCount / restartLimit, the ten highest; at 100 % the job fails.",
                    unit="percentunit",
                    red_from=BUDGET_RED,
                    width=8,
                ),
                Panel(
                    "Reconcile passes and errors",
                    Viz.TIMESERIES,
                    (
                        Query("sum(rate(aitj_reconcile_seconds_count[$__rate_interval]))", "passes"),
                        Query(
                            "sum by (stage) (rate(aitj_reconcile_errors_total[$__rate_interval]))",
                            "errors {{stage}}",
                        ),
                        Query("sum(rate(aitj_paced_passes_total[$__rate_interval]))", "paced"),
                    ),
                    "Reconcile passes per second, failed passes by stage (stale: planned "
                    "again at once; execute: an API call failed, retried with backoff), and "
                    "passes that waited for their job's pace (a large job's last plan was long).",
                    unit="ops",
                    width=8,
                ),
                Panel(
                    "Reconcile duration p50 / p99",
                    Viz.TIMESERIES,
                    tuple(
                        Query(
                            f"histogram_quantile({q}, sum by (le) "
                            "(rate(aitj_reconcile_seconds_bucket[$__rate_interval])))",
                            f"p{round(q * 100)}",
                        )
                        for q in (0.5, 0.99)
                    ),
                    "One reconcile pass: plan and carry out.",
                    unit="s",
                    width=8,
                ),
            ),
        ),
        Row(
            "Work queue and API calls (controller-runtime metrics)",
            (
                Panel(
                    "Work queue depth",
                    Viz.TIMESERIES,
                    (Query("sum by (name) (workqueue_depth)", "{{name}}"),),
                    "Jobs waiting for their pass (kicked, not yet taken by a pass thread).",
                    decimals=0,
                    width=6,
                ),
                Panel(
                    "Work queue wait and work p99",
                    Viz.TIMESERIES,
                    tuple(
                        Query(
                            "histogram_quantile(0.99, sum by (le) "
                            f"(rate({family}_bucket[$__rate_interval])))",
                            legend,
                        )
                        for family, legend in (
                            ("workqueue_queue_duration_seconds", "wait p99"),
                            ("workqueue_work_duration_seconds", "work p99"),
                        )
                    ),
                    "From a job's kick to its pass starting (wait), and the pass itself (work).",
                    unit="s",
                    width=6,
                ),
                Panel(
                    "API requests by code",
                    Viz.TIMESERIES,
                    (
                        Query(
                            "sum by (code, method) (rate(rest_client_requests_total[$__rate_interval]))",
                            "{{method}} {{code}}",
                        ),
                    ),
                    "The operator's requests to the API server per second, by method and status "
                    "code (<error>: no answer).",
                    unit="reqps",
                    width=6,
                ),
                Panel(
                    "API request latency p99",
                    Viz.TIMESERIES,
                    (
                        Query(
                            "histogram_quantile(0.99, sum by (verb, le) "
                            "(rate(rest_client_request_duration_seconds_bucket[$__rate_interval])))",
                            "{{verb}}",
                        ),
                    ),
                    "To each answer's headers, by verb (a watch: until it starts streaming).",
                    unit="s",
                    width=6,
                ),
            ),
        ),
    ),
)
FLEET = per_cluster(_FLEET_BOARD)

_JOB = 'namespace="$namespace", job_name="$job_name"'
# What the job's recovery figure cannot hold: docs/metrics.md, "When each one moves".
JOB_RECOVERY_DESCRIPTION = (
    "From the fault observed by the operator to the replacements Running and listed for "
    "discovery (the discovery ConfigMap written and the launchers nudged): the last recovery, "
    "and the mean over the time range. It ends where the operator's view ends. Not in it: the "
    "launcher's host file refreshed by its kubelet (about 1 s after the write); the new "
    "worker's sshd and the framework's start on it (Running means its containers started, not "
    "that it is ready); the framework noticing the new host (Horovod runs discover_hosts.sh "
    "about every second and takes a new host up at its next commit); the ring re-forming "
    "(Gloo, NCCL); the steps redone. The training's output shows those: make bench-real "
    '(docs/bench.md, "Training on real nodes") measured full width 4.3 s (p50) after a force '
    "delete on real nodes, the replacement Running at about 2.5 s."
)

_JOB_BOARD = Dashboard(
    uid="aitj-job",
    title="aitj / Job",
    description="One AITrainingJob: its replicas, restarts, recovery as the operator sees it, restart "
    "budget, goodput, lost GPU time and scaling.",
    variables=(
        Variable("namespace", "Namespace", "aitj_job_replicas"),
        Variable("job_name", "Job", 'aitj_job_replicas{namespace="$namespace"}'),
    ),
    rows=(
        Row(
            "Replicas",
            (
                Panel(
                    "Replicas by state",
                    Viz.TIMESERIES,
                    (
                        Query(
                            f"sum by (replica, state) (aitj_job_replicas{{{_JOB}}})",
                            "{{replica}} {{state}}",
                        ),
                    ),
                    "Desired, running, pending and vacant (no pod at all) replicas of each type.",
                    decimals=0,
                    width=16,
                ),
                Panel(
                    "Restart budget used",
                    Viz.BARGAUGE,
                    (Query(f"aitj_restart_budget_used_ratio{{{_JOB}}}", "{{replica}}"),),
                    "RestartCount / restartLimit of each replica type that has a limit.",
                    unit="percentunit",
                    red_from=BUDGET_RED,
                    width=8,
                ),
            ),
        ),
        Row(
            "Restarts and recovery",
            (
                Panel(
                    "Restarts",
                    Viz.TIMESERIES,
                    (
                        Query(
                            "round(sum by (replica, cause, scope) "
                            f"(increase(aitj_restarts_total{{{_JOB}}}[$__rate_interval])))",
                            "{{replica}} {{cause}} ({{scope}})",
                        ),
                    ),
                    "Restarts of the job by replica type, cause and scope.",
                    decimals=0,
                    width=16,
                    topic="restarts",
                ),
                Panel(
                    "Recovery (as the operator sees it)",
                    Viz.STAT,
                    (
                        Query(f"max(aitj_job_last_recovery_seconds{{{_JOB}}})", "last"),
                        Query(
                            f"sum(increase(aitj_job_recovery_seconds_sum{{{_JOB}}}[$__range])) / "
                            f"sum(increase(aitj_job_recovery_seconds_count{{{_JOB}}}[$__range]))",
                            "mean in range",
                        ),
                    ),
                    JOB_RECOVERY_DESCRIPTION,
                    unit="s",
                    width=8,
                    topic="recovery",
                ),
            ),
        ),
        goodput_row(_JOB),
        Row(
            "Cost and scaling",
            (
                Panel(
                    "Lost GPU-hours by cause",
                    Viz.BARGAUGE,
                    (
                        Query(
                            "sum by (cause) "
                            f"(increase(aitj_lost_gpu_seconds_total{{{_JOB}}}[$__range])) / 3600",
                            "{{cause}}",
                        ),
                    ),
                    "GPU time the job lost to failures in the time range.",
                    unit=GPU_HOURS,
                    topic="lost GPU",
                ),
                Panel(
                    "Scaling operations",
                    Viz.BARGAUGE,
                    (
                        Query(
                            "round(sum by (direction, result) "
                            f"(increase(aitj_scaling_operations_total{{{_JOB}}}[$__range])))",
                            "{{direction}} {{result}}",
                        ),
                    ),
                    "The job's scaling operations in the time range.",
                    decimals=0,
                    topic="scaling",
                ),
            ),
        ),
    ),
)
JOB = per_cluster(_JOB_BOARD)

DASHBOARDS = (FLEET, JOB)
