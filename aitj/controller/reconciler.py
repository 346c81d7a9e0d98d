"""One reconcile pass per job at a time: snapshot, plan, carry out, requeue.

Level-triggered: any change to a job, its pods or their nodes calls ``kick(job)``; the pass
reads the current snapshot (kopf indexes, kept by ``aitj.controller.handlers``), asks the pure planner
what to do and hands the Plan to the executor. Kicks that arrive during a pass coalesce into one
more pass right after it, so a burst of events costs two passes, not one each. Nothing sits
between a pod's watch event and its replacement's create: the event kicks, the pass plans the
create, the executor sends it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from aitj.controller import metrics
from aitj.controller.executor import Executor, NamespaceTerminating, StaleJob, StepFailed
from aitj.controller.logs import log
from aitj.core.api import InvalidJob, Job, parse_job
from aitj.core.observed import TRACKING_FINALIZER, NodeView, PodView
from aitj.core.planner import plan as make_plan
from aitj.core.planner.types import Plan

JobKey = tuple[str, str]  # (namespace, name)
Snapshot = tuple[Mapping[str, Any] | None, Sequence[PodView], Mapping[str, NodeView]]
RETRY_SECONDS = 2.0
STALE_RETRY_SECONDS = 0.5
# How long a pass may lag behind a requeue request it could not serve (timer coalescing).
MIN_REQUEUE_SECONDS = 0.2


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
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        planner: Callable[[Job, Sequence[PodView], Mapping[str, NodeView], dt.datetime], Plan] = make_plan,
    ) -> None:
        self.executor = executor
        self.snapshot = snapshot
        self.clock = clock
        self.planner = planner
        self._jobs: dict[JobKey, _JobState] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # kicks fired by timers, kept until done

    async def kick(self, key: JobKey) -> None:
        """kick plans the job now, or right after the pass already running for it."""
        state = self._jobs.setdefault(key, _JobState())
        if state.lock.locked():
            state.dirty = True
            return
        async with state.lock:
            state.dirty = True
            while state.dirty:
                state.dirty = False
                await self._pass(key, state)

    async def _pass(self, key: JobKey, state: _JobState) -> None:
        body, pods, nodes = self.snapshot(key)
        if body is None:
            if state.timer:
                state.timer.cancel()
            self._jobs.pop(key, None)
            return
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            # Being deleted (foreground): plan nothing, or the pods garbage collection removes
            # would look lost and be replaced. Let the tracked pods go.
            await self._release_all(key[0], pods)
            return
        started = time.perf_counter()
        try:
            job = parse_job(body)
        except InvalidJob as e:
            await asyncio.to_thread(self.executor.fail_invalid, body, str(e))
            return
        plan = self.planner(job, pods, nodes, self.clock())
        try:
            await asyncio.to_thread(self.executor.execute, job, plan)
        except StaleJob:
            # The newer version's watch event is on its way (or already marked this job dirty).
            metrics.RECONCILE_ERRORS.labels("stale").inc()
            self._requeue(key, state, STALE_RETRY_SECONDS)
            return
        except NamespaceTerminating:
            # Namespace deletion removes the pods first; none can be replaced. Let them all go.
            log.info("namespace terminating: releasing the job's pods", namespace=key[0], job=key[1])
            await self._release_all(key[0], pods)
            return
        except (StepFailed, ApiException) as e:
            metrics.RECONCILE_ERRORS.labels("execute").inc()
            log.warning(
                "pass failed, retrying", namespace=key[0], job=key[1], error=str(e), retry_s=RETRY_SECONDS
            )
            self._requeue(key, state, RETRY_SECONDS)
            return
        finally:
            metrics.RECONCILE_SECONDS.observe(time.perf_counter() - started)
        if plan.requeue_after is not None:
            self._requeue(key, state, max(MIN_REQUEUE_SECONDS, plan.requeue_after))

    async def _release_all(self, namespace: str, pods: Sequence[PodView]) -> None:
        for pod in pods:
            if TRACKING_FINALIZER in pod.finalizers:
                await asyncio.to_thread(self.executor.release, namespace, pod.name)

    def _requeue(self, key: JobKey, state: _JobState, delay: float) -> None:
        loop = asyncio.get_running_loop()
        if state.timer is not None:
            # Keep the earlier of the two deadlines.
            if state.timer.when() <= loop.time() + delay:
                return
            state.timer.cancel()
        state.timer = loop.call_later(delay, self._fire, key)

    def _fire(self, key: JobKey) -> None:
        state = self._jobs.get(key)
        if state is not None:
            state.timer = None
        self.spawn(key)

    def spawn(self, key: JobKey) -> None:
        """spawn kicks the job from synchronous code (timers, fan-out), keeping the task alive."""
        task = asyncio.ensure_future(self.kick(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
