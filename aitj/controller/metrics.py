"""Prometheus metrics of the operator: the catalogue every dashboard panel and alert is checked
against. Counters move only after the effect succeeded, once per restart.

Every family is declared once in ``CATALOGUE`` (name, kind, labels); the dashboards, the alert
rules and their tests read it, so a panel naming a metric or label the operator does not export
fails a test. Label values are constants, listed in ``LABEL_VALUES`` where the set is closed:
- ``cause``: a policy failure kind (``aitj.core.policy.FailureKind``);
- ``scope``: ``Pod``, ``Replica``, ``All`` (``aitj.core.api.RestartScope``);
- ``phase``: a job phase (``aitj.core.api.Phase``);
- ``state``: desired, running, pending, vacant (``ReplicaState``);
- ``direction``: out, in (``ScaleDirection``); ``result``: succeeded, failed, rolledBack,
  cancelled (``ScaleResult``; these three live in ``aitj.core.telemetry``, re-exported here);
- ``stage``: stale, execute (``ErrorStage``);
- ``kind`` (pods deleted): restart, stuck, unwanted, cleanup, suspend (``DeleteReason``);
- ``class`` (restarts): infrastructure, application (``aitj.core.faultclass.FaultClass``).
controller-runtime's families (``workqueue_*``, ``rest_client_*``, ``leader_election_*``) keep
its labels: ``name`` (the queue, the Lease), ``code`` (an HTTP status or ``<error>``), ``method``
and ``verb`` (HTTP methods), ``host`` (the API server's host:port).
``namespace``, ``job_name``, ``replica`` and ``reason`` are open sets: the cluster's names and the
condition reasons. A family labelled ``replica`` (a name the user chooses) is per job. The job's
label is ``job_name``, as kube-state-metrics names it: ``job`` is Prometheus's own target label
(the scrape job), and an exported ``job`` would be renamed ``exported_job`` or, with honor
labels, would overwrite the scrape job.
docs/metrics.md says what each family means and when each counter moves.

Per-job series (the counters, the summary and the gauge labelled ``namespace`` and ``job_name``; not
the scrape-time gauges, which the collector computes from the cache) are moved through ``per_job``,
which remembers their label sets so that ``forget_job`` removes them when the job is deleted.
``aitj_jobs_finished_total`` is per namespace: moved through ``job_finished``, its series of a
namespace are removed once every job they counted is deleted, so a deleted namespace leaves
none behind.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.metadata
import threading
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import Counter, Gauge, Histogram, Summary
from prometheus_client.metrics import MetricWrapperBase

from aitj.core import api
from aitj.core.api import REPLICA_SCOPES, Phase
from aitj.core.faultclass import FaultClass, cause_class
from aitj.core.planner.types import DeleteReason
from aitj.core.policy import FailureKind
from aitj.core.telemetry import ReplicaState as ReplicaState  # re-exported: the catalogue's
from aitj.core.telemetry import ScaleDirection as ScaleDirection
from aitj.core.telemetry import ScaleResult as ScaleResult
from aitj.core.telemetry import known


class ErrorStage(enum.StrEnum):
    """ErrorStage: the ``stage`` label of ``aitj_reconcile_errors_total``; dashboards match the values."""

    STALE = "stale"  # the job changed under the pass: planned again at once
    EXECUTE = "execute"  # an API call failed: retried with backoff


class Kind(enum.StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"
    SUMMARY = "summary"  # without quantiles: ``_sum`` and ``_count`` only


@dataclass(frozen=True)
class Family:
    """Family: one exported metric family. ``name`` is the family name as Prometheus shows it
    (a counter's series carry ``_total``; a histogram's ``_bucket``, ``_sum``, ``_count``)."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()

    def series_names(self) -> tuple[str, ...]:
        """series_names: the names a query may use for this family."""
        if self.kind is Kind.HISTOGRAM:
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        if self.kind is Kind.SUMMARY:
            return (f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


JOB = ("namespace", "job_name")
# Recovery time spans sub-second pod replacements to an hour of waiting for a node.
RECOVERY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
DETECTION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
# A job waits for its pass from microseconds (a free thread) to a minute (a backoff's kick).
WORKQUEUE_BUCKETS = (0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60)
REST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)  # client-go's

CATALOGUE: tuple[Family, ...] = (
    Family("aitj_build_info", Kind.GAUGE, "Always 1; the operator's version.", ("version",)),
    Family("aitj_leader", Kind.GAUGE, "1 on the replica that leads (acts), 0 on a standby."),
    Family(
        "aitj_restarts_total",
        Kind.COUNTER,
        "Restarts carried out, by replica type, cause, scope and class (infrastructure or application).",
        (*JOB, "replica", "cause", "scope", "class"),
    ),
    Family(
        "aitj_recovery_seconds",
        Kind.HISTOGRAM,
        "From the fault observed by the operator to the replacement pod Running.",
        ("cause", "scope"),
    ),
    # Per job, the recovery as the job's own dashboard shows it: a summary without quantiles
    # (two series per job; a histogram's buckets per job would be a dozen and more) and the last
    # one's seconds. docs/metrics.md says where it ends and why it has no other label.
    Family(
        "aitj_job_recovery_seconds",
        Kind.SUMMARY,
        "From the fault observed by the operator to the replacements Running and listed for discovery.",
        JOB,
    ),
    Family(
        "aitj_job_last_recovery_seconds",
        Kind.GAUGE,
        "The job's last recovery, as aitj_job_recovery_seconds measures it.",
        JOB,
    ),
    Family(
        "aitj_fault_detection_seconds",
        Kind.HISTOGRAM,
        "From the fault's own timestamp (where the cluster gives one) to the replacement's create.",
        ("cause",),
    ),
    Family(
        "aitj_jobs", Kind.GAUGE, "Jobs the operator holds, by phase (at scrape time).", ("namespace", "phase")
    ),
    # One series per job, its value 1, its phase the label: an alert can ask what phase a job
    # is in (AitjJobStuck joins it on namespace and job_name), and a job costs one series, not
    # one per phase as kube-state-metrics' 0-or-1 series would.
    Family(
        "aitj_job_phase",
        Kind.GAUGE,
        "1 for each job, labelled with its phase now (at scrape time).",
        (*JOB, "phase"),
    ),
    Family(
        "aitj_jobs_finished_total",
        Kind.COUNTER,
        "Jobs that reached a final phase, by the condition reason.",
        ("namespace", "phase", "reason"),
    ),
    Family(
        "aitj_scaling_operations_total",
        Kind.COUNTER,
        "Scaling operations finished, by direction and result.",
        (*JOB, "direction", "result"),
    ),
    Family(
        "aitj_job_replicas",
        Kind.GAUGE,
        "Replicas of each type by state (at scrape time).",
        (*JOB, "replica", "state"),
    ),
    Family(
        "aitj_restart_budget_used_ratio",
        Kind.GAUGE,
        "RestartCount / restartLimit of each replica type that has a limit (at scrape time).",
        (*JOB, "replica"),
    ),
    Family(
        "aitj_job_degraded_indices",
        Kind.GAUGE,
        "Indices the job runs short of, as its status.degraded says; 0 when it is not (at scrape time).",
        JOB,
    ),
    # Goodput (issue 28; aitj.core.planner.goodput): computed at scrape time from the status,
    # like the gauges above; the counters are held so they never go back (telemetry.goodput).
    Family(
        "aitj_job_goodput_ratio",
        Kind.GAUGE,
        "Of the job's time since it first ran, the share spent training (at scrape time).",
        JOB,
    ),
    Family(
        "aitj_job_training_seconds_total",
        Kind.COUNTER,
        "Seconds the job was Running with no fault waiting for the operator (at scrape time).",
        JOB,
    ),
    Family(
        "aitj_job_badput_seconds_total",
        Kind.COUNTER,
        "Seconds since the job first ran lost to a cause: fault, hang, recovery, scaling, starting.",
        (*JOB, "cause"),
    ),
    Family(
        "aitj_lost_gpu_seconds_total",
        Kind.COUNTER,
        "GPUs of each restarted pod times the seconds from its fault to its replacement Running.",
        (*JOB, "cause"),
    ),
    Family("aitj_reconcile_seconds", Kind.HISTOGRAM, "One reconcile pass: plan and carry out."),
    Family(
        "aitj_reconcile_errors_total", Kind.COUNTER, "Passes that failed and will be retried.", ("stage",)
    ),
    Family(
        "aitj_paced_passes_total",
        Kind.COUNTER,
        "Passes that waited for their job's pace (its last plan took 5 ms of CPU or more).",
    ),
    # Per job, like every family with a ``replica`` label: the replica name is the user's to
    # choose, so its series go with the job (``forget_job``), never piling up on /metrics.
    Family("aitj_pods_created_total", Kind.COUNTER, "Pods created, by replica type.", (*JOB, "replica")),
    Family("aitj_pods_deleted_total", Kind.COUNTER, "Pods deleted, by why.", ("kind",)),
    # controller-runtime's own names, labels and meanings (no aitj_ prefix), so that what is
    # written for controller-runtime operators reads aitj too: the work queue is the
    # reconciler's per-job pass queue, the REST client every call of the operator's API
    # clients, the leader election its Lease (aitj.controller.clientmetrics moves them).
    Family("workqueue_depth", Kind.GAUGE, "Current depth of workqueue", ("name",)),
    Family("workqueue_adds_total", Kind.COUNTER, "Total number of adds handled by workqueue", ("name",)),
    Family(
        "workqueue_queue_duration_seconds",
        Kind.HISTOGRAM,
        "How long in seconds an item stays in workqueue before being requested",
        ("name",),
    ),
    Family(
        "workqueue_work_duration_seconds",
        Kind.HISTOGRAM,
        "How long in seconds processing an item from workqueue takes.",
        ("name",),
    ),
    Family(
        "rest_client_requests_total",
        Kind.COUNTER,
        "Number of HTTP requests, partitioned by status code, method, and host.",
        ("code", "method", "host"),
    ),
    Family(
        "rest_client_request_duration_seconds",
        Kind.HISTOGRAM,
        "Request latency in seconds. Broken down by verb, and host.",
        ("verb", "host"),
    ),
    Family(
        "leader_election_master_status",
        Kind.GAUGE,
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
        "1 indicates master. 'name' is the string used to identify the lease.",
        ("name",),
    ),
)
BY_NAME = {f.name: f for f in CATALOGUE}

# The closed label sets (tests and docs read these; the dashboards use them for legends).
LABEL_VALUES: dict[str, tuple[str, ...]] = {
    "cause": tuple(k.value for k in FailureKind),
    "scope": tuple(s.value for s in REPLICA_SCOPES),  # an in-place restart is no RestartRecord
    "phase": tuple(p.value for p in Phase),
    "state": tuple(s.value for s in ReplicaState),
    "direction": tuple(d.value for d in ScaleDirection),
    "result": tuple(r.value for r in ScaleResult),
    "stage": tuple(s.value for s in ErrorStage),
    "kind": tuple(k.value for k in DeleteReason),
    "class": tuple(c.value for c in FaultClass),
}


def _counter(name: str) -> Counter:
    family = BY_NAME[name]
    # prometheus_client adds the _total suffix itself.
    return Counter(name.removesuffix("_total"), family.help, family.labels)


def _histogram(name: str, buckets: tuple[float, ...]) -> Histogram:
    family = BY_NAME[name]
    return Histogram(name, family.help, family.labels, buckets=buckets)


def _summary(name: str) -> Summary:
    family = BY_NAME[name]
    return Summary(name, family.help, family.labels)  # prometheus_client's: no quantiles


def _gauge(name: str) -> Gauge:
    family = BY_NAME[name]
    return Gauge(name, family.help, family.labels)


# Every label set known up front exists at 0 before its first increment (``job_planned`` for a
# job's, ``_known_at_zero`` for the operator's own), so that increase() counts that increment
# without Prometheus's created-timestamp-zero-ingestion feature (aitj.core.telemetry.known).
BUILD_INFO = _gauge("aitj_build_info")
LEADER = _gauge("aitj_leader")
RESTARTS = _counter("aitj_restarts_total")
RECOVERY = _histogram("aitj_recovery_seconds", RECOVERY_BUCKETS)
JOB_RECOVERY = _summary("aitj_job_recovery_seconds")
JOB_LAST_RECOVERY = _gauge("aitj_job_last_recovery_seconds")
FAULT_DETECTION = _histogram("aitj_fault_detection_seconds", DETECTION_BUCKETS)
JOBS_FINISHED = _counter("aitj_jobs_finished_total")
SCALING_OPERATIONS = _counter("aitj_scaling_operations_total")
LOST_GPU_SECONDS = _counter("aitj_lost_gpu_seconds_total")
RECONCILE_SECONDS = _histogram("aitj_reconcile_seconds", RECONCILE_BUCKETS)
RECONCILE_ERRORS = _counter("aitj_reconcile_errors_total")
PACED_PASSES = _counter("aitj_paced_passes_total")
PODS_CREATED = _counter("aitj_pods_created_total")
PODS_DELETED = _counter("aitj_pods_deleted_total")
WORKQUEUE_DEPTH = _gauge("workqueue_depth")
WORKQUEUE_ADDS = _counter("workqueue_adds_total")
WORKQUEUE_QUEUE_DURATION = _histogram("workqueue_queue_duration_seconds", WORKQUEUE_BUCKETS)
WORKQUEUE_WORK_DURATION = _histogram("workqueue_work_duration_seconds", WORKQUEUE_BUCKETS)
REST_REQUESTS = _counter("rest_client_requests_total")
REST_DURATION = _histogram("rest_client_request_duration_seconds", REST_BUCKETS)
LEADER_ELECTION = _gauge("leader_election_master_status")
# aitj_jobs, aitj_job_replicas and aitj_restart_budget_used_ratio are computed at scrape time
# from the operator's cache by a collector (never incremented and decremented).


# The per-job children made through ``per_job``, by (namespace, job), for ``forget_job``.
_PER_JOB: dict[tuple[str, str], set[tuple[MetricWrapperBase, tuple[str, ...]]]] = {}
_PER_JOB_LOCK = threading.Lock()  # passes of different jobs run in threads at once
# The generation of each job whose known label sets ``job_planned`` made.
_KNOWN: dict[tuple[str, str], int] = {}
M = TypeVar("M", bound=MetricWrapperBase)


def per_job(metric: M, namespace: str, job: str, *rest: str) -> M:
    """per_job: the child of a per-job counter, summary or gauge (its labels start with
    namespace and job), remembered so that ``forget_job`` removes it."""
    labels = (namespace, job, *rest)
    with _PER_JOB_LOCK:
        _PER_JOB.setdefault((namespace, job), set()).add((metric, labels))
    return metric.labels(*labels)


def job_planned(job: api.Job) -> None:
    """job_planned: a pass plans ``job``: the label sets its spec makes known
    (``telemetry.known``) exist at 0 from now on, once per generation (a spec edit may add a
    replica type or a rule). Its namespace's ``aitj_jobs_finished_total`` too, held for it as
    ``job_finished`` holds a job it counted."""
    key = (job.namespace, job.name)
    with _PER_JOB_LOCK:
        if _KNOWN.get(key) == job.generation:
            return
        _KNOWN[key] = job.generation
    for replica, cause, scope in known.restart_labels(job):
        per_job(RESTARTS, *key, replica, cause, scope, cause_class(cause).value)
    for cause in known.lost_gpu_causes(job):
        per_job(LOST_GPU_SECONDS, *key, cause)
    if known.scales(job):
        for direction, result in known.SCALINGS:
            per_job(SCALING_OPERATIONS, *key, direction, result)
    for r in job.spec.replicas:
        per_job(PODS_CREATED, *key, r.name)
    per_job(JOB_RECOVERY, *key)
    with _PER_JOB_LOCK:
        jobs, series = _FINISHED.setdefault(job.namespace, (set(), set()))
        jobs.add(job.name)
        for phase, reason in known.FINISHED:
            series.add((job.namespace, phase, reason))
            JOBS_FINISHED.labels(job.namespace, phase, reason)


def forget_job(namespace: str, job: str) -> None:
    """forget_job removes every per-job series of a deleted job from /metrics (Prometheus sees
    them go stale), so the page does not grow with every job ever run."""
    with _PER_JOB_LOCK:
        made = _PER_JOB.pop((namespace, job), set())
        _KNOWN.pop((namespace, job), None)
    for metric, labels in made:
        with contextlib.suppress(KeyError):  # never moved: no child to remove
            metric.remove(*labels)
    _forget_finished(namespace, job)


# The jobs whose end ``job_finished`` counted, by namespace, and the series they moved.
_FINISHED: dict[str, tuple[set[str], set[tuple[str, ...]]]] = {}


def job_finished(namespace: str, job: str, phase: str, reason: str) -> None:
    """job_finished counts a job's end in ``aitj_jobs_finished_total``, remembering the job, so
    that the namespace's series go once every job they counted is deleted (``forget_job``)."""
    labels = (namespace, phase, reason)
    with _PER_JOB_LOCK:  # with the count: a removal of the namespace's series cannot come between
        jobs, series = _FINISHED.setdefault(namespace, (set(), set()))
        jobs.add(job)
        series.add(labels)
        JOBS_FINISHED.labels(*labels).inc()


def _forget_finished(namespace: str, job: str) -> None:
    """_forget_finished: ``job`` is deleted; the last of its namespace's counted jobs takes the
    namespace's ``aitj_jobs_finished_total`` series with it (increase() over a past range still
    sees what they counted: Prometheus marks them stale, it does not drop their samples)."""
    with _PER_JOB_LOCK:
        held = _FINISHED.get(namespace)
        if held is None:
            return
        held[0].discard(job)
        if held[0]:
            return
        del _FINISHED[namespace]
        for labels in held[1]:
            with contextlib.suppress(KeyError):
                JOBS_FINISHED.remove(*labels)


def version() -> str:
    """version: the installed aitj distribution's version ("unknown" when not installed)."""
    try:
        return importlib.metadata.version("aitj")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def set_leader(leading: bool, lease: str | None = None) -> None:
    """set_leader: ``aitj_leader`` is 1 while this replica leads (acts), 0 on a standby. Without
    leader election the only replica leads: handlers.startup says so. With it, ``lease`` names
    the Lease, and ``leader_election_master_status`` says the same for it (controller-runtime
    exports it only under leader election, and so does aitj)."""
    LEADER.set(1 if leading else 0)
    if lease is not None:
        LEADER_ELECTION.labels(lease).set(1 if leading else 0)


def _known_at_zero() -> None:
    """_known_at_zero: the operator's own label sets, every value of their closed sets, at 0:
    the errors by stage, the pods deleted by kind, and the recovery and detection histograms by
    each restartable cause (and scope). The histograms are 18 and 6 children of 15 buckets: a
    constant 450 lines on the page, for the recovery alert to see a cause's first recovery."""
    for stage in ErrorStage:
        RECONCILE_ERRORS.labels(stage.value)
    for kind in DeleteReason:
        PODS_DELETED.labels(kind.value)
    for cause in FailureKind:
        if cause is FailureKind.RESTART_TIMEOUT:  # the failure of a restart: never restarted
            continue
        FAULT_DETECTION.labels(cause.value)
        for scope in REPLICA_SCOPES:
            RECOVERY.labels(cause.value, scope.value)


BUILD_INFO.labels(version()).set(1)
_known_at_zero()
