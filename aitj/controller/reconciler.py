"""One reconcile pass per job at a time: snapshot, plan, carry out, requeue.

Level-triggered: any change to a job, its pods, their nodes or the objects the job owns calls
``kick(job)``; the pass reads the current snapshot (``aitj.controller.cache``), asks the pure
planner what to do and hands the Plan to the executor. Kicks that arrive during a pass
coalesce into one more pass right after it, so a burst of events costs two passes, not one
each. Nothing sits between a pod's watch event and its replacement's create: the event kicks,
the pass plans the create, the executor sends it.

The reconciler decides nothing: ``lifecycle.triage`` says whether the job is planned or ends
the pass with a Plan of its own (being deleted, invalid spec); a terminating namespace and the
pods of a job that is gone get ``lifecycle``'s Plans too. What it adds is what the pure core
must not do: read the clock, make ssh key pairs (randomness; only when
``resources.needs_ssh_keys`` says so), and confirm with the API server that a job missing from
the cache is really gone.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException

from aitj.controller import metrics, sshkeys
from aitj.controller.cache import JobKey, Snapshot
from aitj.controller.executor import (
    Executor,
    NamespaceTerminating,
    StaleJob,
    StepFailed,
    Target,
    Written,
    sends,
)
from aitj.controller.logs import log
from aitj.controller.metrics import ErrorStage
from aitj.controller.recovery import RECOVERIES, Recoveries
from aitj.core.planner import lifecycle, resources
from aitj.core.planner import plan as make_plan
from aitj.core.planner.types import Plan, Settings, SshKeys

RETRY_SECONDS = 2.0
STALE_RETRY_SECONDS = 0.5
# How long a pass may lag behind a requeue request it could not serve (timer coalescing).
MIN_REQUEUE_SECONDS = 0.2
# Threads that carry passes' calls out at once (docs/operator.md, "Start-up at scale", says how
# this was measured): past it, more threads only queue on the GIL and the apiserver.
PASS_WORKERS = 16
R = TypeVar("R")


def new_keys(job_name: str) -> SshKeys:
    """new_keys makes a key pair for a job's ssh Secret."""
    return SshKeys(*sshkeys.generate_keypair(f"aitj@{job_name}"))


@dataclass
class _JobState:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dirty: bool = False
    timer: asyncio.TimerHandle | None = None


class Reconciler:
    """Reconciler serialises passes per job and coalesces kicks."""

    def __init__(
        self,
        executor: Executor,
        snapshot: Callable[[JobKey], Snapshot],
        *,
        job_exists: Callable[[str, str], bool],
        settings: Settings | None = None,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        planner: Callable[..., Plan] = make_plan,
        keygen: Callable[[str], SshKeys] = new_keys,
        written: Callable[[JobKey, Written], None] = lambda _key, _w: None,
        workers: int = PASS_WORKERS,
        recoveries: Recoveries = RECOVERIES,
    ) -> None:
        self.executor = executor
        self.snapshot = snapshot
        self.job_exists = job_exists
        self.settings = settings or Settings()
        self.clock = clock
        self.planner = planner
        self.keygen = keygen
        self.written = written
        self.recoveries = recoveries
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="pass")
        self.closing = False
        self._jobs: dict[JobKey, _JobState] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # kicks spawned, kept until done

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
        state = self._jobs.setdefault(key, _JobState())
        if state.lock.locked():
            state.dirty = True
            return
        async with state.lock:
            state.dirty = True
            while state.dirty and not self.closing:
                state.dirty = False
                await self._pass(key, state)

    async def _pass(self, key: JobKey, state: _JobState) -> None:
        """_pass: snapshot, triage, plan (with a key pair only when one is wanted), execute."""
        snap = self.snapshot(key)
        if snap.body is None:
            await self._gone(key, state, snap)
            return
        now = self.clock()
        # Replacements of restarts under way that run now end their recovery (metrics).
        self.recoveries.seen(key, snap.body, snap.pods, now)
        job = lifecycle.triage(snap.body, snap.pods, now)
        if isinstance(job, Plan):
            await self._execute(key, state, lifecycle.job_ref(snap.body), job, snap)
            return
        keys = None
        if resources.needs_ssh_keys(job, snap.owned):
            keys = await self._run(self.keygen, job.name)  # tens of ms: off the loop
        plan = self.planner(
            job, snap.pods, snap.nodes, now, owned=snap.owned, keys=keys, settings=self.settings
        )
        await self._execute(key, state, job, plan, snap)

    async def _gone(self, key: JobKey, state: _JobState, snap: Snapshot) -> None:
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
        log.info("releasing pods of a deleted job", namespace=key[0], job=key[1], pods=list(orphans.release))
        await self._execute(key, state, lifecycle.JobRef(key[0], key[1], ""), orphans, snap)

    def _forget(self, key: JobKey) -> None:
        """_forget: the job is deleted: its per-job series leave /metrics, its recoveries are
        dropped. Its delete event kicked this pass, so that happens as the informer sees it."""
        metrics.forget_job(*key)
        self.recoveries.forget(key)

    async def _execute(
        self, key: JobKey, state: _JobState, target: Target, plan: Plan, snap: Snapshot
    ) -> None:
        """_execute: hand ``plan`` to the executor and map how it ended: stale (plan again
        soon), namespace terminating (execute the release plan instead), failed (retry), done
        (requeue when the plan asks)."""
        started = time.perf_counter()
        written = Written()
        try:
            if sends(plan):  # most passes of a quiet job send nothing: no thread for those
                await self._run(self.executor.execute, target, plan, written)
        except StaleJob:
            # The newer version's watch event is on its way (or already marked this job dirty).
            metrics.RECONCILE_ERRORS.labels(ErrorStage.STALE.value).inc()
            self._requeue(key, state, STALE_RETRY_SECONDS)
            return
        except NamespaceTerminating:
            # Namespace deletion removes the pods first; none can be replaced. Let them all go.
            log.info("namespace terminating: releasing the job's pods", namespace=key[0], job=key[1])
            await self._execute(key, state, target, lifecycle.release_tracked(snap.pods), snap)
            return
        except (StepFailed, ApiException) as e:
            metrics.RECONCILE_ERRORS.labels(ErrorStage.EXECUTE.value).inc()
            log.warning(
                "pass failed, retrying", namespace=key[0], job=key[1], error=str(e), retry_s=RETRY_SECONDS
            )
            self._requeue(key, state, RETRY_SECONDS)
            return
        finally:
            metrics.RECONCILE_SECONDS.observe(time.perf_counter() - started)
            self.written(key, written)
        if plan.requeue_after is not None:
            self._requeue(key, state, max(MIN_REQUEUE_SECONDS, plan.requeue_after))

    def _requeue(self, key: JobKey, state: _JobState, delay: float) -> None:
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

    def spawn(self, key: JobKey) -> None:
        """spawn kicks the job from synchronous code (the cache, timers), keeping the task alive."""
        if self.closing:
            return
        task = asyncio.ensure_future(self.kick(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


__all__ = ["ErrorStage", "JobKey", "Reconciler", "Snapshot", "new_keys"]
