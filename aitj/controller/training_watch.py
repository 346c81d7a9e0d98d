"""The recovery watchdog's eyes (issue 46; aitj.core.planner.watchdog decides): a job's master
log is read, and the pods whose rank waits in the ring a fault broke, or whose worker has left
the ring while the pod runs on, are marked for the planner.

On by default, for every job with a master replica (the launcher of the seed's Horovod, of MPI,
of torchrun driven over ssh). After each restart (``status.restarts``) the log is read every
READ_SECONDS until it shows a step after the restart at the width the job's worker replicas
want, or, when it never shows a line the trainings print (aitj.core.trainlog: ``<host> rank
<r>/<size>: step ...``), until the watchdog's bound has passed (no signal: nothing to judge), and
for MAX_WATCH_SECONDS at most. In between it is read every IDLE_READ_SECONDS
(NO_SIGNAL_READ_SECONDS while it has shown no step line, for its first NO_SIGNAL_GIVE_UP_SECONDS;
IDLE_READS_PER_SECOND of all jobs at most): horovodrun's driver names
a worker that failed, and a pod whose worker left the ring that way trains no more. Each read
is ``GET .../pods/<master>/log?sinceTime=<cursor>&timestamps=true&limitBytes=65536``, from the
second of the last line the previous read brought (``tailLines=200`` for a master's first read):
a record the driver prints once is read however much the re-forming prints after it (seen: the
last 200 lines missed it), and a read cut at the byte limit is behind, judges no silence, and is
followed at once. Each read runs on a thread,
with at most READS_PER_NAMESPACE of a namespace's reads in flight; the lines are parsed there
(fixed patterns, linear in the line: aitj.core.trainlog) and folded into what is kept of the job
(``TrainingSeen``, bounded). What is found is handed to the planner on the pods' views
(``views``: ``PodView.waiting``, and the master's ``PodView.training``, which the host list's
hold reads: aitj.core.planner.ring_hold), the same view objects while it stands, and the job's
pass is kicked when it changes.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes import client

from aitj.controller.logs import log
from aitj.controller.progress import LIMIT_BYTES, TICK_SECONDS, Gates, fair_order, tail_log
from aitj.core.api import JobStatus
from aitj.core.observed import PodView
from aitj.core.planner import ring_hold, watchdog
from aitj.core.trainlog import TrainingSeen, Waiting, fold, parse_tagged
from aitj.core.wire import as_list, mapping

JobKey = tuple[str, str]
READ_SECONDS = 1.0  # how often a recovering job's master log is read (a late read delays a mark)
# How often a job's is read while it does not recover (its width): a worker killed inside its
# pod changes nothing in the API, and only this read finds it (seen at 5 s: leftRing decided
# 1.3 to 4.3 s after the worker's death, 3.0 s at p50, n = 21, and a survivor stuck behind it
# waited that long too).
IDLE_READ_SECONDS = 2.0
# The same, for a log that never showed a step line: a fresh job's training has not stepped yet,
# and a record of its driver's (a worker failed) counts from its first minute (seen: a worker
# killed 20 s after the launcher's first read, read a minute later with a minute's pace).
NO_SIGNAL_READ_SECONDS = 10.0
IDLE_READS_PER_SECOND = 20.0  # idle reads of all jobs together, at most
NO_SIGNAL_GIVE_UP_SECONDS = 600.0  # a master whose log shows no step line: read this long at most
MAX_WATCH_SECONDS = 600.0  # a recovery is watched this long at most
READS_AT_ONCE = 4
TAIL_LINES = 200


@dataclass
class Watched:
    """Watched: what is kept of one job: its training as read, the recovery it was read for, the
    one it is done with (recovered, or no signal), and the pods found waiting, with their views."""

    seen: TrainingSeen | None = None
    read_at: float = float("-inf")  # the clock of the last read
    done: float | None = None
    marks: Mapping[str, Waiting] = field(default_factory=dict)
    master: str | None = None  # the uid of the master pod read
    cursor: str | None = None  # the second its next read starts from (None: its tail)
    behind: bool = False  # the last read left lines for the next: read again at once
    listed_since: dict[str, float] = field(default_factory=dict)  # host list entries, first seen
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
        """views: ``pods`` with the ones found waiting marked, and the master read carrying what
        was read (the same objects while it stands)."""
        w = self.jobs.get(key)
        if w is None or (not w.marks and w.master is None):
            return pods
        out = []
        for p in pods:
            mark = w.marks.get(p.name)
            seen = w.seen if p.uid == w.master else None
            if mark is None and seen is None:
                out.append(p)
                continue
            kept = w.views.get(id(p))
            if kept is None or kept[0] is not p or kept[1].waiting != mark or kept[1].training is not seen:
                kept = (p, replace(p, waiting=mark, training=seen))
                w.views[id(p)] = kept
            out.append(kept[1])
        return out

    def due(self, key: JobKey, jobs: int = 1) -> tuple[PodView, float | None] | None:
        """due: the master pod to read and the recovery it is read for (None: none, an idle
        read), when the job recovers, or when its idle read is due (``idle_seconds``, ``jobs``
        being read in all); None: nothing to read now."""
        body = self.body_of(key)
        if body is None:
            return None
        since = watchdog.recovered_at(restarts_of(body))
        w = self.jobs.setdefault(key, Watched())
        recovering = since is not None and since != w.done
        now = self.clock()
        if not recovering and not w.behind and now - w.read_at < idle_seconds(w.seen, jobs):
            return None
        master = master_pod(body, self.pods_of(key))
        if master is None:
            return None
        if not recovering and not idle_read(w.seen, master, now):
            return None
        return master, since if recovering else None

    async def run(self, job_keys: Callable[[], Sequence[JobKey]]) -> None:
        """run: forever, read the master logs of the jobs that recover, READ_SECONDS apart."""
        loop = asyncio.get_running_loop()
        gates = Gates(READS_AT_ONCE)
        busy: set[JobKey] = set()
        next_round = 0.0
        while True:
            keys = set(job_keys())
            for gone in [k for k in self.jobs if k not in keys]:
                del self.jobs[gone]
            gates.prune(keys)
            if loop.time() >= next_round:
                next_round = loop.time() + READ_SECONDS
                for key in fair_order(k for k in keys if k not in busy):
                    target = self.due(key, len(keys))
                    if target is None:
                        continue
                    busy.add(key)
                    gates.start(key[0], functools.partial(self._read, key, target, busy))
            await asyncio.sleep(TICK_SECONDS)

    async def _read(
        self,
        key: JobKey,
        target: tuple[PodView, float | None],
        busy: set[JobKey],
        mine: asyncio.Semaphore,
        gate: asyncio.Semaphore,
    ) -> None:
        """_read: one read of the job's master log (``busy`` holds the job until it is done)."""
        try:
            async with mine, gate:
                got = await asyncio.to_thread(self._events, target[0], self.cursor(key, target[0]))
                self.record(key, target[1], got)
        except Exception as e:  # a bug or an input it cannot take: logged, tried again later
            log.warning("training log read failed", namespace=key[0], job=key[1], error=str(e))
        finally:
            busy.discard(key)

    def read(self, key: JobKey) -> None:
        """read: one read now, on this thread (the watch's tests)."""
        target = self.due(key)
        if target is not None:
            self.record(key, target[1], self._events(target[0], self.cursor(key, target[0])))

    def cursor(self, key: JobKey, master: PodView) -> str | None:
        """cursor: the second the job's next read of ``master`` starts from (None: its tail)."""
        w = self.jobs.get(key)
        return w.cursor if w is not None and w.master == master.uid else None

    def record(self, key: JobKey, since: float | None, read: Read | None) -> None:
        """record: a ``read`` (None: unreadable) of the job's master, made for the recovery at
        ``since`` (None: an idle read), folded into the job's training; the pods found waiting
        or out of the ring marked, and the job's pass kicked when they change, when what the
        host list's hold reads of it does (ring_hold), or when the training's width does (the
        degraded state's OutOfRing, planner.width). A read that is behind (lines left for the
        next) judges no silence: its newest line is not the log's."""
        w = self.jobs.setdefault(key, Watched())
        w.read_at = self.clock()
        if read is None:
            return
        if read.uid != w.master:
            w.seen = None  # another master: its log is another
        taken = (
            watchdog.gone(restarts_of(self.body_of(key) or {}).restarts or ())
            if since is not None
            else frozenset()
        )
        held = _hold_state(w.seen, since, taken)
        width = w.seen.width if w.seen is not None else None
        w.seen = fold(w.seen, read.events, w.read_at)
        w.master, w.cursor, w.behind, w.views = read.uid, read.cursor, read.behind, {}
        if since is not None and _hold_state(w.seen, since, taken) != held:
            self.kick(key)
        elif w.seen.width != width and (width is not None or self._short(key, w.seen)):
            self.kick(key)  # the training's width changed, or first seen short (planner.width)
        marks = self._judge(key, w, since)
        if marks != w.marks:
            w.marks = marks
            if marks:
                log.warning(
                    "ranks out of the ring",
                    namespace=key[0],
                    job=key[1],
                    pods=sorted(marks),
                    why=sorted({m.description for m in marks.values()}),
                )
            self.kick(key)

    def _short(self, key: JobKey, seen: TrainingSeen) -> bool:
        """_short: the training steps at a world size below the job's worker pods."""
        return seen.width is not None and seen.width < workers_wanted(self.body_of(key) or {})

    def _judge(self, key: JobKey, w: Watched, since: float | None) -> dict[str, Waiting]:
        """_judge: the recovery at ``since`` marked done when training is back at full width
        (or gives no signal, or has been watched MAX_WATCH_SECONDS), and the pods found waiting
        or out of the ring, and the master when nothing steps long after the ranks' restarts."""
        seen = w.seen
        if seen is None:
            return {}
        body = self.body_of(key) or {}
        wanted = workers_wanted(body)
        status = restarts_of(body) if since is not None else None  # once a read, and not for idle ones
        taken = watchdog.gone(status.restarts or ()) if status is not None else frozenset()
        if since is not None and watchdog.stepped_at_width(seen, since, wanted, taken):
            w.done = since  # training steps again at full width: nothing to watch until the next restart
        elif w.behind:
            pass  # the silence is not known yet: the next read comes at once
        elif since is not None and seen.last_step is None and seen.read_at - since >= watchdog.bound(seen):
            w.done = since  # no line of a training's: no signal, nothing to judge
        elif since is not None and seen.read_at - since >= MAX_WATCH_SECONDS:
            w.done = since  # short of full width for long: the width's business, not a stall's
        pods = self.pods_of(key)
        listed = listed_of(body)
        w.listed_since = {n: w.listed_since.get(n, seen.read_at) for n in listed}
        marks = dict(watchdog.left_ring(seen, pods, listed))
        command = ring_hold.horovodrun_command(master_templates(body))
        if command is not None:  # Horovod elastic: a listed host it lost the notice of
            marks = {**watchdog.left_out(seen, pods, w.listed_since, ring_hold.max_np(command)), **marks}
        if w.behind:
            return {**{n: m for n, m in w.marks.items() if not m.left}, **marks}  # as they were
        if status is not None and w.done != since:
            master = master_pod(body, pods)
            stuck = watchdog.escalation(status, seen, master, wanted)  # the next rung
            if command is not None:  # a driver held by a call to a gone rank 0: the same rung, at once
                stuck = {**stuck, **watchdog.driver_blocked(status, seen, master, pods, w.listed_since)}
            return {**stuck, **watchdog.waiting(status, seen, pods, wanted), **marks}
        return marks

    def _events(self, pod: PodView, since: str | None = None) -> Read | None:
        """_events: the master's log from the second ``since`` (a cursor: None, its last
        TAIL_LINES), parsed (on a thread); None when it cannot be read."""
        start = ("sinceTime", since) if since is not None else ("tailLines", str(TAIL_LINES))
        query = [start, ("timestamps", "true"), ("limitBytes", str(LIMIT_BYTES))]
        self.reads += 1
        text, failed = tail_log(self.api_client, pod, query)
        if failed is not None:  # nothing judged from what was not read
            self._report(pod, failed)
        if text is None:
            return None
        lines = text.splitlines()
        cursor = next((c for c in map(_second, reversed(lines)) if c is not None), since)
        cut = len(text.encode()) >= LIMIT_BYTES  # at LIMIT_BYTES: more lines follow
        if cut and cursor == since:  # more than LIMIT_BYTES within one second: from the tail next
            return Read(parse_tagged(lines), pod.uid, None, False)
        return Read(parse_tagged(lines), pod.uid, cursor, cut)

    def _report(self, pod: PodView, reason: str) -> None:
        if (pod.uid, reason) not in self.reported:
            self.reported.add((pod.uid, reason))
            log.warning(
                "cannot read the master's log: the recovery watchdog waits", pod=pod.name, reason=reason
            )


@dataclass(frozen=True)
class Read:
    """Read: one read's events, of the master pod ``uid``, the second the next read starts from
    (``cursor``, RFC 3339; None: from the tail), and whether lines were left for it (``behind``:
    the read was cut at LIMIT_BYTES, so its newest line is not the log's newest)."""

    events: Sequence[Any]
    uid: str
    cursor: str | None
    behind: bool


def _second(line: str) -> str | None:
    """_second: the whole second a timestamped log line was written in (RFC 3339), else None."""
    stamp = line.partition(" ")[0]
    if len(stamp) < 20 or stamp[4] != "-" or stamp[10] != "T":
        return None
    return stamp[:19] + "Z"


def idle_seconds(seen: TrainingSeen | None, jobs: int) -> float:
    """idle_seconds: how long between a job's reads while it does not recover: IDLE_READ_SECONDS
    while its log has shown a step line (NO_SIGNAL_READ_SECONDS before), and no more than
    IDLE_READS_PER_SECOND reads a second for the ``jobs`` read in all."""
    own = IDLE_READ_SECONDS if seen is not None and seen.last_step is not None else NO_SIGNAL_READ_SECONDS
    return max(own, jobs / IDLE_READS_PER_SECOND)


def idle_read(seen: TrainingSeen | None, master: PodView, now: float) -> bool:
    """idle_read: whether a job that does not recover is read at all: while its log has shown a
    step line, or for NO_SIGNAL_GIVE_UP_SECONDS of its master's life (a launcher that prints
    none of the trainings' lines is not read again until a restart)."""
    if seen is not None and seen.last_step is not None:
        return True
    began = master.running_since or master.created
    return began is None or now - began.timestamp() < NO_SIGNAL_GIVE_UP_SECONDS


def listed_of(body: Mapping[str, Any]) -> frozenset[str]:
    """listed_of: the pods in the job's discovery host list, as its status records it."""
    return frozenset(str(n) for n in as_list(mapping(body.get("status")).get("discoveryHosts")))


def _hold_state(
    seen: TrainingSeen | None, since: float | None, taken: frozenset[str] = frozenset()
) -> tuple[bool, bool, bool]:
    """_hold_state: what aitj.core.planner.ring_hold reads of a training since the fault at
    ``since``: read since, has a signal, has re-formed."""
    if seen is None or since is None:
        return (False, False, False)
    return (seen.read_at >= since, seen.last_step is not None, ring_hold.reformed(seen, since, taken))


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


def master_templates(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """master_templates: the pod templates of the job's master replicas."""
    specs = mapping(mapping(body.get("spec")).get("replicaSpecs"))
    return [
        mapping(mapping(s).get("template"))
        for s in specs.values()
        if mapping(s).get("replicaType") == "master"
    ]


def master_pod(body: Mapping[str, Any], pods: Sequence[PodView]) -> PodView | None:
    """master_pod: the running, current pod of index 0 of the job's first master replica."""
    specs = mapping(mapping(body.get("spec")).get("replicaSpecs"))
    masters = [name for name, spec in specs.items() if mapping(spec).get("replicaType") == "master"]
    if not masters:
        return None
    mine = [p for p in pods if p.replica == masters[0] and p.index == 0 and not p.deleting]
    top = max(mine, key=lambda p: p.generation, default=None)
    return top if top is not None and top.phase == "Running" else None
