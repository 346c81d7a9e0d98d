"""Restarts recorded, and followed until their replacements run: the restart counters and log
line, and the recovery figures (``aitj.core.telemetry.recovery_time`` does the arithmetic).

``Recoveries`` holds the recoveries under way, in memory, by job; the reconciler owns one and
feeds it. After each pass it hands it what the executor's calls did (``passed``, reading the
executor's ``Sent``): the pods created end fault detection, and the restarts a status write
that went through recorded are counted, logged with the job's context and begun
(``record_restarts``). Each pass shows it the job's pods first (``seen``: the reconciler calls
it before planning; every pod change kicks a pass, so a replacement reaching Running is seen by
the pass its watch event starts), and it observes each recovery once, when all the indexes its
restart took down run again; only the pods the job made count (``telemetry.own_pods``), so a
pod that only carries the job's labels ends no recovery. A recovery observed there then waits
for its job's own figure (``aitj_job_recovery_seconds``, ``aitj_job_last_recovery_seconds``):
the end of that pass, or of the first later one, once its steps leave the discovery ConfigMap
holding the lists of a snapshot in which the replacements ran (``recovery_time.listed``;
``passed`` is handed the clock read when the executor returned). It forgets a job when the job
is deleted (nothing is observed for it), and drops the recoveries of a job that finished first.

Exactly once: a restart is handed here by the one pass whose status write first records it
(the restart ledger's ``recorded`` marks, docs/semantics.md "Each restart is recorded once");
a new operator process starts with no recoveries, and the restarts the previous one recorded
are not handed to it again. So the recovery histogram's count is the number of restarts this
process recorded whose replacements then ran.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from structlog.typing import FilteringBoundLogger

from aitj.controller import metrics
from aitj.controller.executor import Sent
from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.lifecycle import phase_of
from aitj.core.planner.types import Plan, RestartRecord
from aitj.core.telemetry import Recovery, desired_replicas, own_pods, recovery_time
from aitj.core.wire import format_time

JobKey = tuple[str, str]  # (namespace, name)
Created = Mapping[tuple[str, int], tuple[int, dt.datetime]]  # (replica, index) -> (generation, when)


class Recoveries:
    """Recoveries: the recoveries under way, by job. Called from the passes' threads (one pass
    per job at a time, several jobs at once): a lock guards the map. A job with none under way
    is told so without the lock (a pass of that job is the only one that could begin one), and
    its pass costs nothing here (``seen`` and ``passed`` were 6 % of the event loop's CPU in a
    profile of recoveries)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[JobKey, list[Recovery]] = {}
        # Replacements Running, waiting for the end of the pass that lists them for discovery.
        self._listing: dict[JobKey, list[Recovery]] = {}

    def begin(
        self,
        key: JobKey,
        job: api.Job,
        status: api.JobStatus,
        records: Sequence[RestartRecord],
        created: Created,
    ) -> None:
        """begin follows each of ``records``, just recorded by ``status``; ``created``: the pods
        this pass created. A job that finished in this status is not followed."""
        if status.phase in api.FINISHED_PHASES:
            return
        # The ledger's epochs are what a Replica or All restart waits for; a Pod restart needs
        # none, and the ledger of a job of thousands costs milliseconds to read.
        whole = any(r.scope is not api.RestartScope.POD for r in records)
        ledger = Ledger.from_status(status) if whole else None
        started = []
        for r in records:
            made = created.get((r.replica, r.index))
            at = made[1] if made is not None and made[0] > r.generation else None
            recovery = recovery_time.begin(r, job, ledger, at)
            _detected(recovery)
            started.append(recovery)
        with self._lock:
            self._pending.setdefault(key, []).extend(started)

    def created(self, key: JobKey, replica: str, index: int, generation: int, at: dt.datetime) -> None:
        """created: a pass created pod ``generation`` of (``replica``, ``index``) at ``at``: the
        end of fault detection for a recovery waiting for that replacement."""
        with self._lock:
            pending = self._pending.get(key)
            if not pending:
                return
            for i, recovery in enumerate(pending):
                r = recovery.record
                if (
                    recovery.created is None
                    and (r.replica, r.index) == (replica, index)
                    and generation > r.generation
                ):
                    pending[i] = recovery = Recovery(recovery.record, recovery.awaited, at, recovery.running)
                    _detected(recovery)

    def seen(
        self,
        key: JobKey,
        body: Mapping[str, Any],
        pods: Sequence[PodView],
        now: dt.datetime,
        at: Callable[[Collection[tuple[str, int]]], list[PodView]] | None = None,
    ) -> None:
        """seen: the job as a pass sees it at ``now``; observes the recoveries it finishes.
        ``at``: the job's pods at some slots (``Snapshot.at``), looked up rather than searched."""
        if key not in self._pending and key not in self._listing:
            return  # no recovery under way: nothing to observe, nothing to drop (most passes)
        with self._lock:
            if phase_of(body.get("status")) in api.FINISHED_PHASES:
                # It ended before its replacements ran (or were listed): nothing to observe.
                self._pending.pop(key, None)
                self._listing.pop(key, None)
                return
            pending = self._pending.get(key)
            if not pending:
                return
            desired = desired_replicas(body)
            # Only the pods a recovery waits on, and of those only the job's own: a pod that
            # only carries the job's labels ends nothing.
            pods = own_pods(body, recovery_time.awaited_pods(pending, pods, at))
            left = []
            for recovery in pending:
                later = recovery_time.advance(recovery, pods, now)
                if recovery.created is None and later.created is not None:
                    _detected(later)
                if recovery_time.finished(later, desired):
                    _observe(key, later)
                    self._listing.setdefault(key, []).append(later)
                else:
                    left.append(later)
            if left:
                self._pending[key] = left
            else:
                del self._pending[key]

    def passed(
        self, log: FilteringBoundLogger, key: JobKey, job: object, plan: Plan, sent: Sent, now: dt.datetime
    ) -> None:
        """passed: what the executor's calls did for ``plan`` (``sent``), returned at ``now``:
        each pod created ends the fault detection of a recovery waiting for it; the restarts the
        status write recorded, if it went through (not when it failed or found the job gone), are
        recorded here (``record_restarts``); the recoveries whose replacements run end for the
        job once a pass that planned it has listed them (``listed``)."""
        recorded = sent.status_written and plan.status is not None and bool(plan.restarts)
        if not recorded and key not in self._pending and key not in self._listing:
            return  # no recovery under way and none recorded now (most passes): nothing to do
        for c in sent.created:
            self.created(key, c.replica, c.index, c.generation, c.at)
        if recorded and plan.status is not None:
            created = {(c.replica, c.index): (c.generation, c.at) for c in sent.created}
            record_restarts(log, key, job, plan.status, plan.restarts, created, self)
        # Only a pass that planned the job has lists (not the Plans of a job being deleted or
        # of a spec that does not parse, made for a ``lifecycle.JobRef``).
        if isinstance(job, api.Job) and recovery_time.listed(
            plan, sent.stopped is None or sent.status_written
        ):
            self.listed(key, now)

    def listed(self, key: JobKey, now: dt.datetime) -> None:
        """listed: a pass of the job ended at ``now`` with its replacements listed for discovery:
        the recoveries waiting for that end, in the job's figures."""
        with self._lock:
            done = self._listing.pop(key, [])
        for recovery in sorted(done, key=lambda r: r.record.time):  # the last decided is the last
            _listed(key, recovery, now)

    def forget(self, key: JobKey) -> None:
        """forget: the job is deleted; its recoveries are dropped unobserved."""
        with self._lock:
            self._pending.pop(key, None)
            self._listing.pop(key, None)

    def pending(self, key: JobKey) -> tuple[Recovery, ...]:
        """pending: the job's recoveries under way (for tests and ``aitj`` diagnostics)."""
        with self._lock:
            return tuple(self._pending.get(key, ()))

    def listing(self, key: JobKey) -> tuple[Recovery, ...]:
        """listing: the job's recoveries whose replacements run, waiting to be listed (for tests)."""
        with self._lock:
            return tuple(self._listing.get(key, ()))


def _detected(recovery: Recovery) -> None:
    """_detected observes fault detection, once the replacement's create is known."""
    seconds = recovery.detection_seconds()
    if seconds is not None:
        metrics.FAULT_DETECTION.labels(recovery.record.failure.kind.value).observe(seconds)


def _observe(key: JobKey, recovery: Recovery) -> None:
    """_observe: the recovery is over: its time, and the GPU time it cost."""
    r = recovery.record
    cause = r.failure.kind.value
    metrics.RECOVERY.labels(cause, r.scope.value).observe(recovery.recovery_seconds())
    lost = recovery.lost_gpu_seconds()
    if lost > 0:
        metrics.per_job(metrics.LOST_GPU_SECONDS, *key, cause).inc(lost)


def _listed(key: JobKey, recovery: Recovery, now: dt.datetime) -> None:
    """_listed: the recovery as the job's dashboard shows it, ended when its replacements were
    listed for discovery (``now``)."""
    seconds = recovery.seconds_until(now)
    metrics.per_job(metrics.JOB_RECOVERY, *key).observe(seconds)
    metrics.per_job(metrics.JOB_LAST_RECOVERY, *key).set(seconds)


def record_restarts(
    log: FilteringBoundLogger,
    key: JobKey,
    job: object,
    status: api.JobStatus,
    records: Sequence[RestartRecord],
    created: Created,
    recoveries: Recoveries,
) -> None:
    """record_restarts: ``status``, just written for job ``key``, records ``records``: count and
    log each (``log`` carries the job's context), and follow its recovery (``job``: the job the
    pass planned; only a parsed ``api.Job`` has recoveries to follow)."""
    for r in records:
        cause = r.failure.kind.value
        fault_class = r.failure.kind.fault_class.value
        metrics.per_job(metrics.RESTARTS, *key, r.replica, cause, r.scope.value, fault_class).inc()
        log.warning(
            "restart",
            replica=r.replica,
            index=r.index,
            generation=r.generation,
            pod=r.pod,
            cause=cause,
            rule=r.rule,
            scope=r.scope.value,
            decided=format_time(r.time),
            latency_s=r.latency_seconds,
        )
    if isinstance(job, api.Job):
        recoveries.begin(key, job, status, records, created)
