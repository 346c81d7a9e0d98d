"""The recovery watchdog's eyes (issue 46; aitj.core.planner.watchdog decides): after each restart
of a job, its master's log is read until training steps again, and the pods whose rank still
waits in the ring the fault broke are marked for the planner.

On by default, for every job with a master replica (the launcher of the seed's Horovod, of MPI,
of torchrun driven over ssh), and idle while nothing recovers: a job is read only from its
latest restart (``status.restarts``) until its log shows a step after it at the width its worker
replicas want, or, when the log never shows a line the trainings print (aitj.core.trainlog:
``<host> rank <r>/<size>: step ...``), until the watchdog's bound has passed (no signal: nothing
to judge), and for MAX_WATCH_SECONDS at most. Each read is
``GET .../pods/<master>/log?tailLines=200&timestamps=true&limitBytes=65536``, every
READ_SECONDS, on a thread, with at most READS_PER_NAMESPACE of a namespace's reads in flight;
the lines are parsed there (a fixed pattern, linear in the line: aitj.core.trainlog) and folded
into what is kept of the job (``TrainingSeen``, bounded). What the watchdog finds is handed to
the planner on the pods' views (``views``: ``PodView.waiting``), the same view objects while it
stands, and the job's pass is kicked when it changes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes import client

from aitj.controller.logs import log
from aitj.controller.progress import LIMIT_BYTES, READS_PER_NAMESPACE, TICK_SECONDS, fair_order, tail_log
from aitj.core.api import JobStatus
from aitj.core.observed import PodView
from aitj.core.planner import watchdog
from aitj.core.trainlog import TrainingSeen, Waiting, fold, parse_tagged
from aitj.core.wire import mapping

JobKey = tuple[str, str]
READ_SECONDS = 2.0  # how often a recovering job's master log is read
MAX_WATCH_SECONDS = 600.0  # a recovery is watched this long at most
READS_AT_ONCE = 4
TAIL_LINES = 200


@dataclass
class Watched:
    """Watched: what is kept of one job: its training as read, the recovery it was read for, the
    one it is done with (recovered, or no signal), and the pods found waiting, with their views."""

    seen: TrainingSeen | None = None
    since: float | None = None
    done: float | None = None
    marks: Mapping[str, Waiting] = field(default_factory=dict)
    views: dict[int, tuple[PodView, PodView]] = field(default_factory=dict)  # id(base) -> (base, marked)


class TrainingWatch:
    """TrainingWatch: reads recovering jobs' master logs (``run``) and hands the planner the
    views with the pods found waiting (``views``)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        body_of: Callable[[JobKey], Mapping[str, Any] | None],
        pods_of: Callable[[JobKey], Sequence[PodView]],
        kick: Callable[[JobKey], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_client, self.body_of, self.pods_of, self.kick = api_client, body_of, pods_of, kick
        self.clock = clock  # epoch seconds: the kubelet's timestamps are
        self.jobs: dict[JobKey, Watched] = {}
        self.reported: set[tuple[str, str]] = set()
        self.reads = 0

    def views(self, key: JobKey, pods: Sequence[PodView]) -> Sequence[PodView]:
        """views: ``pods`` with the ones found waiting marked (the same objects while it stands)."""
        w = self.jobs.get(key)
        if w is None or not w.marks:
            return pods
        out = []
        for p in pods:
            mark = w.marks.get(p.name)
            if mark is None:
                out.append(p)
                continue
            kept = w.views.get(id(p))
            if kept is None or kept[0] is not p or kept[1].waiting != mark:
                kept = (p, replace(p, waiting=mark))
                w.views[id(p)] = kept
            out.append(kept[1])
        return out

    def due(self, key: JobKey) -> tuple[PodView, float] | None:
        """due: the master pod to read and the recovery it is read for, when the job recovers
        (None: nothing to read)."""
        body = self.body_of(key)
        if body is None:
            return None
        since = watchdog.recovered_at(restarts_of(body))
        w = self.jobs.setdefault(key, Watched())
        if since is None or since == w.done:
            if w.marks:
                w.marks, w.views = {}, {}
                self.kick(key)
            return None
        master = master_pod(body, self.pods_of(key))
        return (master, since) if master is not None else None

    async def run(self, job_keys: Callable[[], Sequence[JobKey]]) -> None:
        """run: forever, read the master logs of the jobs that recover, READ_SECONDS apart."""
        loop = asyncio.get_running_loop()
        gate = asyncio.Semaphore(READS_AT_ONCE)
        gates: dict[str, asyncio.Semaphore] = {}
        busy: set[JobKey] = set()
        tasks: set[asyncio.Task[None]] = set()
        next_round = 0.0
        while True:
            keys = set(job_keys())
            for gone in [k for k in self.jobs if k not in keys]:
                del self.jobs[gone]
            if loop.time() >= next_round:
                next_round = loop.time() + READ_SECONDS
                for key in fair_order(k for k in keys if k not in busy):
                    target = self.due(key)
                    if target is None:
                        continue
                    busy.add(key)
                    mine = gates.setdefault(key[0], asyncio.Semaphore(READS_PER_NAMESPACE))
                    task = loop.create_task(self._read(key, target, mine, gate, busy))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            await asyncio.sleep(TICK_SECONDS)

    async def _read(
        self,
        key: JobKey,
        target: tuple[PodView, float],
        mine: asyncio.Semaphore,
        gate: asyncio.Semaphore,
        busy: set[JobKey],
    ) -> None:
        """_read: one read of the job's master log (``busy`` holds the job until it is done)."""
        try:
            async with mine, gate:
                events = await asyncio.to_thread(self._events, target[0])
                self.record(key, target[1], events)
        except Exception as e:  # a bug or an input it cannot take: logged, tried again later
            log.warning("training log read failed", namespace=key[0], job=key[1], error=str(e))
        finally:
            busy.discard(key)

    def read(self, key: JobKey) -> None:
        """read: one read now, on this thread (the watch's tests)."""
        target = self.due(key)
        if target is not None:
            self.record(key, target[1], self._events(target[0]))

    def record(self, key: JobKey, since: float, events: Sequence[Any] | None) -> None:
        """record: a read's events (None: unreadable) folded into the job's training; the pods
        found waiting marked, and the job's pass kicked when they change."""
        if events is None:
            return
        w = self.jobs.setdefault(key, Watched())
        w.seen = fold(w.seen, events, self.clock())
        w.since = since
        seen = w.seen
        body = self.body_of(key) or {}
        wanted = workers_wanted(body)
        if seen.last_step is not None and seen.last_step >= since and (seen.width or 0) >= wanted:
            w.done = since  # training steps again at full width: nothing to watch until the next restart
        elif seen.last_step is None and seen.read_at - since >= watchdog.bound(seen):
            w.done = since  # no line of a training's: no signal, nothing to judge
        elif seen.read_at - since >= MAX_WATCH_SECONDS:
            w.done = since  # short of full width for long: the width's business, not a stall's
        status = restarts_of(body)
        marks = {} if w.done == since else watchdog.waiting(status, seen, self.pods_of(key), wanted)
        if marks != w.marks:
            w.marks, w.views = marks, {}
            if marks:
                log.warning(
                    "ranks waiting after a recovery", namespace=key[0], job=key[1], pods=sorted(marks)
                )
            self.kick(key)

    def _events(self, pod: PodView) -> Sequence[Any] | None:
        """_events: the master's log tail, parsed (on a thread); None when it cannot be read."""
        query = [("tailLines", str(TAIL_LINES)), ("timestamps", "true"), ("limitBytes", str(LIMIT_BYTES))]
        self.reads += 1
        text, failed = tail_log(self.api_client, pod, query)
        if failed is not None:  # nothing judged from what was not read
            self._report(pod, failed)
        return None if text is None else parse_tagged(text.splitlines())

    def _report(self, pod: PodView, reason: str) -> None:
        if (pod.uid, reason) not in self.reported:
            self.reported.add((pod.uid, reason))
            log.warning(
                "cannot read the master's log: the recovery watchdog waits", pod=pod.name, reason=reason
            )


def restarts_of(body: Mapping[str, Any]) -> JobStatus:
    """restarts_of: the job's status with its restarts alone: what the watchdog reads of it, on
    every round of every job (the rest, the ledger above all, is not parsed for it)."""
    return JobStatus.from_json({"restarts": mapping(body.get("status")).get("restarts")})


def workers_wanted(body: Mapping[str, Any]) -> int:
    """workers_wanted: the pods the job's worker replicas want (each replica's ``replicas``)."""
    specs = mapping(mapping(body.get("spec")).get("replicaSpecs"))
    counts = [
        mapping(s).get("replicas", 1) for s in specs.values() if mapping(s).get("replicaType") != "master"
    ]
    return sum(c for c in counts if isinstance(c, int))


def master_pod(body: Mapping[str, Any], pods: Sequence[PodView]) -> PodView | None:
    """master_pod: the running, current pod of index 0 of the job's first master replica."""
    specs = mapping(mapping(body.get("spec")).get("replicaSpecs"))
    masters = [name for name, spec in specs.items() if mapping(spec).get("replicaType") == "master"]
    if not masters:
        return None
    mine = [p for p in pods if p.replica == masters[0] and p.index == 0 and not p.deleting]
    top = max(mine, key=lambda p: p.generation, default=None)
    return top if top is not None and top.phase == "Running" else None
