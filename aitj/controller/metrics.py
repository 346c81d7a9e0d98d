"""Prometheus metrics of the operator. Counted only after the effect succeeded.

Label values are constants with documented possible values:
- ``cause``: a policy failure kind (``exitCode``, ``nodeNotReady``, ``PodForceDeleted``,
  ``PodEvicted``, ``PodPreempted``, ``RestartTimeout`` ...), as the planner reports it;
- ``scope``: ``Pod``, ``Replica``, ``All``;
- ``phase``: a job phase (``Succeeded``, ``Failed``, ``Timeout``).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram, start_http_server

RESTARTS = Counter(
    "aitj_restarts_total",
    "Restarts carried out, by replica type, cause and scope.",
    ["namespace", "job", "replica", "cause", "scope"],
)
RESTART_DETECTION = Histogram(
    "aitj_restart_detection_seconds",
    "From the failure (as the cluster reports its time) to the pass that decided its restart.",
    ["cause"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
JOBS_FINISHED = Counter("aitj_jobs_finished_total", "Jobs that reached a final phase.", ["phase"])
RECONCILE_SECONDS = Histogram(
    "aitj_reconcile_seconds",
    "One reconcile pass: plan and carry out.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
# stage: stale, execute (aitj.controller.reconciler.ErrorStage).
RECONCILE_ERRORS = Counter(
    "aitj_reconcile_errors_total", "Passes that failed and will be retried.", ["stage"]
)
PODS_CREATED = Counter("aitj_pods_created_total", "Pods created.", ["replica"])
# kind: restart, stuck, unwanted, cleanup (aitj.core.planner.types.DeleteReason).
PODS_DELETED = Counter("aitj_pods_deleted_total", "Pods deleted, by why.", ["kind"])


def serve(port: int, address: str = "127.0.0.1") -> None:
    """serve exposes /metrics on address:port (port 0: off)."""
    if port:
        start_http_server(port, addr=address)
