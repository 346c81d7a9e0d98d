"""One reconcile pass per job at a time: snapshot, plan, carry out, requeue.

Level-triggered: any change to a job, its pods, their nodes or the objects the job owns calls
``kick(job)``; the pass reads the current snapshot (``aitj.controller.cache``), asks the pure
planner what to do and hands the Plan to the executor. Kicks that arrive during a pass
coalesce into one more pass right after it, so a burst of events costs two passes, not one
each. Nothing sits between a pod's watch event and its replacement's create: the event kicks,
the pass plans the create, the executor sends it. Only a job whose last plan took long
(thousands of pods, ``PACED_PLAN_SECONDS``) waits up to twice that plan before its next one.

The reconciler decides nothing about the job: ``lifecycle.triage`` says whether the job is
planned or ends the pass with a Plan of its own (being deleted, invalid spec); a terminating
namespace, a pod create refused for good and the pods of a job that is gone get
``lifecycle``'s Plans too. What it does decide is what the executor's record of a pass
(``Sent``) means for the next one: a stop the API server caused is retried with a backoff, a
stale write is planned again soon, and a refused create or a terminating namespace is input to
the next pass, run right away (never a second execute inside the same pass). Any other refusal,
and any exception raised in a pass, is a failed pass: backed off, logged, and reported once per
way of failing (``failed_pass``: an Event and ``status.passFailure``), never a dead task. It
counts what a status write that went through recorded (finished scale operations; restarts,
through its own ``Recoveries``). What it adds is what the pure core must not do: read the
clock, make randomness (ssh key pairs when ``resources.needs_ssh_keys`` says so; a job's key,
``ownership.key_pass``), and confirm with the API server that a job missing from the cache is
really gone.

Blocking work (the executor's calls, key generation, the existence check) runs on a bounded
pool of ``PASS_WORKERS`` threads of its own; what the calls returned is handed to ``written``
(the cache's write-through) when the pass ends, however it ends. ``close`` stops taking kicks,
cancels the requeue timers, lets the passes in flight finish (for a while) and shuts the pool:
a SIGTERM under load ends quietly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from aitj.controller import clientmetrics, metrics, passtrace
from aitj.controller.cache import JobKey, Snapshot
from aitj.controller.executor import (
    Executor,
    GangRefused,
    NamespaceTerminating,
    PodRefused,
    Sent,
    StaleJob,
    Stop,
    Target,
    only_status,
    sends,
)
from aitj.controller.jobstate import JobState, Sources, new_keys
from aitj.controller.logs import log
from aitj.controller.metrics import ErrorStage
from aitj.controller.passtrace import Trace
from aitj.controller.recovery_metrics import Recoveries
from aitj.controller.retries import failure_reason, pass_failure, retry_after, retry_delay
from aitj.controller.written import Seen, Written, returned_news
from aitj.core import api
from aitj.core.planner import failed_pass, lifecycle, resources
from aitj.core.planner.failed_pass import FailureReason
from aitj.core.planner.lifecycle import PodRefusal
from aitj.core.planner.memo import Memo
from aitj.core.planner.ownership import key_pass
from aitj.core.planner.types import DrainHook, Plan, Settings
from aitj.core.telemetry import finished_scalings

STALE_RETRY_SECONDS = 0.5
# How long a pass may lag behind a requeue request it could not serve (timer coalescing).
MIN_REQUEUE_SECONDS = 0.2
# A pass whose plan only writes the status comes at most this often per job: one sooner waits
# for the interval's end and is planned again then, so the pod transitions in between cost one
# write (a job of 8 coming up: a status write per pod that runs, before). Creates, deletes and
# everything else go out at once. The Job controller batches its status updates the same way
# (syncJobBatchPeriod, 1 s). docs/operator.md, "The hot path", has the figures.
STATUS_INTERVAL = 1.0
# A job whose plan took long (thousands of pods: tens of ms of CPU, on the event loop) has its
# next plan start no sooner than twice as long after that plan ended. In a storm of pod events
# (a bring-up, a node lost) its plans take at most a third of the loop, and the pods' creates
# (on the pass pool, which needs the GIL too), other jobs and the informers' deltas get the
# rest: a job of 4,096 came up with 30 % less of the operator's CPU (docs/operator.md, "The hot
# path"). A plan under PACED_PLAN_SECONDS (a job of hundreds of pods plans in about a
# millisecond) is never paced, and a kick later than the wait is served at once.
PACED_PLAN_SECONDS = 0.005
# Threads that carry passes' calls out at once (docs/operator.md, "Start-up at scale", says how
# this was measured): past it, more threads only queue on the GIL and the apiserver.
PASS_WORKERS = 16
R = TypeVar("R")


class Reconciler:
    """Reconciler serialises passes per job and coalesces kicks."""

    def __init__(
        self,
        executor: Executor,
        snapshot: Callable[[JobKey], Snapshot],
        *,
        job_exists: Callable[[str, str], bool],
        settings: Settings | None = None,
        written: Callable[[JobKey, Written], None] = lambda _key, _w: None,
        sources: Sources | None = None,
        status_interval: float = STATUS_INTERVAL,
    ) -> None:
        self.executor = executor
        self.snapshot = snapshot
        self.job_exists = job_exists
        self.settings = settings or Settings()
        self.written = written
        self.status_interval = status_interval
        sources = sources or Sources()
        self.sources = sources  # .name_key, .progress
        self.clock, self.planner, self.keygen = sources.clock, sources.planner, sources.keygen
        self.recoveries = Recoveries()  # this reconciler's restarts, followed
        self.pool = concurrent.futures.ThreadPoolExecutor(PASS_WORKERS, thread_name_prefix="pass")
        self.closing = False
        self._jobs: dict[JobKey, JobState] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # kicks spawned, kept until done
        self.queue = clientmetrics.WorkQueue()  # the passes as controller-runtime's workqueue_* see them
        # Where a plan's checkpoint hooks before a drain go (aitj.controller.drainhooks; the
        # operator sets it): (namespace, hooks), called on the loop, returning at once.
        self.drain_hooks: Callable[[str, tuple[DrainHook, ...]], None] | None = None

    async def _run(self, fn: Callable[..., R], *args: Any) -> R:
        """_run: ``fn(*args)`` on the pass pool (once closing: the pass ends here, cancelled)."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        except RuntimeError:
            if self.closing:  # the pool is shut: this pass is not started
                raise asyncio.CancelledError() from None
            raise

    async def close(self, timeout: float = 10.0) -> None:
        """close: no new passes, and none of those waiting for a thread starts (the next
        operator's first pass plans them); the calls already under way may finish within
        ``timeout`` seconds; a pass cut short later is completed by the next operator too."""
        self.closing = True
        for state in self._jobs.values():
            if state.timer is not None:
                state.timer.cancel()
                state.timer = None
        self.pool.shutdown(wait=False, cancel_futures=True)
        tasks = list(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=timeout)
            for task in late:
                task.cancel()
            if late:
                log.warning("passes abandoned at shutdown", passes=len(late))

    async def kick(self, key: JobKey) -> None:
        """kick plans the job now, or right after the pass already running for it."""
        if self.closing:
            return
        state = self._jobs.setdefault(key, JobState())
        state.queued = False
        self.queue.add(key)
        if state.lock.locked():
            state.dirty = True
            return
        async with state.lock:
            state.dirty = True
            while state.dirty and not self.closing:
                wait = max(state.retry_at, state.paced_until) - asyncio.get_running_loop().time()
                if wait > 0:  # backing off or paced: the kick is served when the wait is over
                    state.trace.paced |= state.paced_until > state.retry_at
                    self._requeue(key, state, wait)
                    self.queue.defer(key)
                    break
                state.dirty = False
                state.seen = []
                started = self.queue.get(key)
                state.tracing, state.trace = state.trace, Trace()
                if state.tracing.start():  # it waited for the job's pace
                    metrics.PACED_PASSES.inc()
                try:
                    await self._pass(key, state)
                except Exception as e:  # a bug, or an input the core cannot take:
                    # a failed pass (backoff, Event, passFailure), never a dead task
                    await self._failed(key, state, e)
                finally:
                    self.queue.done(started)
                self._settle(state)

    @staticmethod
    def _settle(state: JobState) -> None:
        """_settle: the pass is over and written through; any event of the job and its pods
        that came while it ran marks it for one more pass, the echoes of its own writes too.
        Telling those apart by the version a call returned was tried and dropped: in CI it let
        others' changes go unplanned (a pod failed by the kubelet, a scale-in, a suspension), where a call's
        response or a patch that changed nothing returned another's change at a version the
        pass then took for its own; see docs/operator.md, "A pass's own echoes"."""
        if state.seen:
            state.dirty = True
        state.seen = []

    async def _pass(self, key: JobKey, state: JobState) -> None:
        """_pass: snapshot, triage, plan (with a key pair only when one is wanted), execute."""
        snap = self.snapshot(key)
        if snap.body is None:
            await self._gone(key, state, snap)
            return
        now = self.clock()
        # Replacements of restarts under way that run now end their recovery (metrics).
        self.recoveries.seen(key, snap.body, snap.pods, now, snap.at)
        refused, state.refused = state.refused, None
        if state.terminating:  # nothing can be created in the namespace: let the pods go
            state.terminating = False
            await self._execute(
                key, state, lifecycle.job_ref(snap.body), lifecycle.release_tracked(snap.pods), snap
            )
            return
        job = self._triage(state, snap, now)
        if isinstance(job, Plan):
            await self._execute(key, state, lifecycle.job_ref(snap.body), job, snap)
            return
        metrics.job_planned(job)  # the label sets its spec makes known, at 0 (once per generation)
        failed = lifecycle.plan_refused(snap.body, refused, now) if refused is not None else None
        if failed is not None:  # the last pass's create was refused for good: the job fails
            await self._execute(key, state, job, failed, snap)
            return
        if (keyed := key_pass(job, snap.pods, snap.owned, self.sources.name_key(), now)) is not None:
            await self._execute(key, state, job, keyed, snap)  # a new job's key, and nothing else
            return
        keys = None
        if resources.needs_ssh_keys(job, snap.owned, snap.pods):
            keys = await self._run(self.keygen, job.name)  # tens of ms: off the loop
        given = {"owned": snap.owned, "keys": keys, "settings": self.settings, "memo": state.memo}
        started = time.thread_time()  # the planner's CPU: the loop's time it took, not the machine's load
        plan = self.planner(job, self.sources.progress(key, snap.pods), snap.nodes, now, **given)
        self._pace(state, time.thread_time() - started)
        if plan.drain_hooks and self.drain_hooks is not None:  # their own threads, whatever the pass does
            self.drain_hooks(key[0], plan.drain_hooks)
        if self._held(key, state, plan):
            return
        await self._execute(key, state, job, plan, snap)

    @staticmethod
    def _pace(state: JobState, planned: float) -> None:
        """_pace: after a plan that took ``planned`` seconds of CPU, PACED_PLAN_SECONDS or more,
        the job's next plan starts no sooner than twice that after this one ended (its calls, on
        the pass pool, count towards the wait: they leave the loop free)."""
        state.tracing.planned, state.tracing.plan_cpu = passtrace.now(), planned
        if planned >= PACED_PLAN_SECONDS:
            state.paced_until = asyncio.get_running_loop().time() + 2 * planned

    @staticmethod
    def _triage(state: JobState, snap: Snapshot, now: dt.datetime) -> api.Job | Plan:
        """_triage: ``lifecycle.triage``, with the job's last parse kept for the passes that
        follow: a version of the job whose spec is the one parsed before (a status write makes
        a new version) is made from that parse (``api.parse_again``), as parsing the spec on
        every pass cost 6 % of the operator's busy CPU. The planner's input is the same. (The
        cache never changes a body it has handed out: a new version is a new body.)"""
        body = snap.body or {}
        if state.parsed is not None and not lifecycle.being_deleted(body):
            job = api.parse_again(body, *state.parsed)
            if job is not None:
                state.parsed = (body, job)
                return job
        triaged = lifecycle.triage(body, snap.pods, now)
        state.parsed = (body, triaged) if isinstance(triaged, api.Job) else None
        return triaged

    def _held(self, key: JobKey, state: JobState, plan: Plan) -> bool:
        """_held: ``plan`` only writes the status, and the job's last status write is less than
        STATUS_INTERVAL ago: the job is planned again when the interval is over (whatever
        happens in between is in that one write), and this plan is dropped."""
        if state.status_written_at is None or not only_status(plan):
            return False
        wait = state.status_written_at + self.status_interval - asyncio.get_running_loop().time()
        if wait <= 0:
            return False
        self._requeue(key, state, wait)
        return True

    async def _gone(self, key: JobKey, state: JobState, snap: Snapshot) -> None:
        """_gone: the job is not in the cache. Its pods being deleted (garbage collection) are
        let go once the API server confirms the job is gone; otherwise the job is forgotten."""
        orphans = lifecycle.plan_orphans(snap.pods)
        if not orphans.release:
            if state.timer:
                state.timer.cancel()
            self._jobs.pop(key, None)
            self._forget(key)
            return
        if await self._run(self.job_exists, *key):
            return  # the cache has not caught up yet; the job's own pass will handle the pods
        self._forget(key)
        state.memo = Memo()  # what it held was the gone job's
        log.info("releasing pods of a deleted job", namespace=key[0], job=key[1], pods=list(orphans.release))
        await self._execute(key, state, lifecycle.JobRef(key[0], key[1], ""), orphans, snap)

    def _forget(self, key: JobKey) -> None:
        """_forget: the job is deleted: its per-job series leave /metrics, its recoveries are
        dropped. Its delete event kicked this pass, so that happens as the informer sees it."""
        metrics.forget_job(*key)
        self.recoveries.forget(key)

    async def _execute(
        self, key: JobKey, state: JobState, target: Target, plan: Plan, snap: Snapshot
    ) -> None:
        """_execute: hand ``plan`` to the executor, count what its status write recorded, and
        map how the pass ended: stale (plan again soon), a pod refused for good or the namespace
        terminating (the next pass, right away, fails the job or lets its pods go), failed
        (retry, backing off), done (requeue when the plan asks)."""
        started = time.perf_counter()
        sent = Sent()
        try:
            if sends(plan):  # most passes of a quiet job send nothing: no thread for those
                sent = await self._run(self._traced, state.tracing, target, plan)
        finally:
            metrics.RECONCILE_SECONDS.observe(time.perf_counter() - started)
            self.written(key, sent.written)
        created = min(c.at for c in sent.created).timestamp() if sent.created else passtrace.now()
        state.tracing.logged(key[0], key[1], created, len(sent.created), sent.status_written)
        if returned_news(snap.by_name(), sent.written):  # others changed a pod since the snapshot
            state.dirty = True
        self._recorded(key, target, plan, sent)
        if sent.status_written:
            state.status_written_at = asyncio.get_running_loop().time()
        stopped = sent.stopped
        if isinstance(stopped, StaleJob | GangRefused):
            # The newer version's watch event is on its way (or already marked this job dirty).
            # A gang PodGroup refused for want of its Workload: the snapshot still held a
            # Workload the garbage collector has deleted (the job is being deleted).
            metrics.RECONCILE_ERRORS.labels(ErrorStage.STALE.value).inc()
            self._requeue(key, state, STALE_RETRY_SECONDS)
        elif isinstance(stopped, PodRefused) and self._fails_job(snap, stopped.refusal):
            log.warning("pod refused: the job fails", namespace=key[0], job=key[1], error=str(stopped))
            state.refused, state.dirty = stopped.refusal, True
        elif isinstance(stopped, NamespaceTerminating):
            # Namespace deletion removes the pods first; none can be replaced. Let them all go.
            log.info("namespace terminating: releasing the job's pods", namespace=key[0], job=key[1])
            state.terminating, state.dirty = True, True
        elif stopped is not None:  # a refusal (the status's, quota, throttling), or no answer
            await self._failed(key, state, stopped)
        else:
            state.failures, state.retry_at = 0, 0.0
            if plan.requeue_after is not None:
                self._requeue(key, state, max(MIN_REQUEUE_SECONDS, plan.requeue_after))
            await self._report(key, failed_pass.on_success(pass_failure(snap.body)), snap.body)

    def _traced(self, trace: Trace, target: Target, plan: Plan) -> Sent:
        """_traced (on a pass thread): ``executor.execute``, the thread's start stamped."""
        trace.began, trace.steps = passtrace.now(), passtrace.begin()
        return self.executor.execute(target, plan)

    def _fails_job(self, snap: Snapshot, refusal: PodRefusal) -> bool:
        """_fails_job: the refused create fails the job (``lifecycle.plan_refused`` has a Plan
        for it: the next pass plans that from its own snapshot), rather than being one a retry
        may get past."""
        return lifecycle.plan_refused(snap.body or {}, refusal, self.clock()) is not None

    def _recorded(self, key: JobKey, target: Target, plan: Plan, sent: Sent) -> None:
        """_recorded: what the pass's calls did that metrics and logs follow: the pods created
        end fault detection; a status write that went through finishes the scale operations
        whose ``scaleHistory`` entries it adds, and records the Plan's restarts (counted,
        logged and followed until their replacements run and are listed for discovery:
        ``self.recoveries``, with the clock read now, after the calls)."""
        if sent.status_written and plan.status is not None:
            bound = log.bind(namespace=key[0], job=key[1])
            before = target.status if isinstance(target, api.Job) else None
            for s in finished_scalings(before, plan.status):
                metrics.per_job(metrics.SCALING_OPERATIONS, *key, s.direction.value, s.result.value).inc()
                bound.info(
                    "scaling finished", replica=s.replica, direction=s.direction.value, result=s.result.value
                )
        else:  # nothing is logged without a status write: no logger bound to the job for it
            bound = log
        self.recoveries.passed(bound, key, target, plan, sent, self.clock())

    async def _failed(self, key: JobKey, state: JobState, error: Exception) -> None:
        """_failed: count and log a pass that failed, plan the job again after a backoff
        (``retry_delay``: doubled per failure in a row, never before the server's Retry-After),
        and say why (``failed_pass``: an Event and ``status.passFailure``, once per way of
        failing) unless the API server gave no answer: then there is no one to tell."""
        metrics.RECONCILE_ERRORS.labels(ErrorStage.EXECUTE.value).inc()
        state.failures += 1
        delay = retry_delay(state.failures, retry_after(error))
        state.retry_at = asyncio.get_running_loop().time() + delay
        reason = failure_reason(error)
        bound = log.bind(namespace=key[0], job=key[1], retry_s=delay)
        if reason is FailureReason.PASS_ERROR:  # the operator's own failing: keep the traceback
            bound.error("pass failed, retrying", error=f"{type(error).__name__}: {error}", exc_info=error)
        else:
            bound.warning("pass failed, retrying", error=str(error))
        self._requeue(key, state, delay)
        if reason is not None:
            body = self.snapshot(key).body
            message = str(error) if isinstance(error, Stop) else f"{type(error).__name__}: {error}"
            await self._report(
                key, failed_pass.on_failure(pass_failure(body), reason, message, self.clock()), body
            )

    async def _report(
        self, key: JobKey, report: failed_pass.Report | None, body: Mapping[str, Any] | None
    ) -> None:
        """_report: send ``report`` about the job whose body is ``body`` (nothing when either
        is None), and write through what its status write returned."""
        if report is None or body is None:
            return
        self.written(key, await self._run(self.executor.report, lifecycle.job_ref(body), report))

    def _requeue(self, key: JobKey, state: JobState, delay: float) -> None:
        """_requeue: pass the job again after ``delay`` seconds (the earlier deadline wins)."""
        if self.closing:
            return
        loop = asyncio.get_running_loop()
        if state.timer is not None:
            # Keep the earlier of the two deadlines.
            if state.timer.when() <= loop.time() + delay:
                return
            state.timer.cancel()
        state.timer = loop.call_later(delay, self._fire, key)

    def _fire(self, key: JobKey) -> None:
        """_fire: a requeue timer is due."""
        state = self._jobs.get(key)
        if state is not None:
            state.timer = None
        self.spawn(key)

    def spawn(self, key: JobKey, seen: Sequence[Seen] | None = None) -> None:
        """spawn kicks the job from synchronous code (the cache, timers), keeping the task alive;
        none when its kick is on its way (it plans this too) or its pass runs: most of a
        recovery's events come then. A kick for the events ``seen`` (of the job and its pods)
        is kept for the running pass to judge (``_settle``: news, or its own echoes); any
        other marks the job to be planned once more, as ``kick`` does."""
        state = self._jobs.get(key) or self._jobs.setdefault(key, JobState())
        if self.closing or state.queued:
            return
        state.trace.kick(state.lock.locked())
        if state.lock.locked():
            self.queue.add(key)
            if seen is None:
                state.dirty = True
            else:
                state.seen.extend(seen)
            return
        state.queued = True
        task = asyncio.ensure_future(self.kick(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


__all__ = ["ErrorStage", "JobKey", "Reconciler", "Snapshot", "Sources", "new_keys"]
