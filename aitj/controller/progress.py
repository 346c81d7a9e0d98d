"""The progress signal of spec.progress (issue 28, docs/semantics.md "Hangs"): the watched pod's
log, read through the apiserver, handed to the planner as an observed fact.

For each job that opts in, every ``hang.poll_seconds(stallSeconds)`` seconds (stallSeconds/20,
1 to 60 s), ``ProgressMonitor`` reads the tail of its watched pod's log (the pod of index 0 of
spec.progress.replica, once it runs):
``GET /api/v1/namespaces/<ns>/pods/<pod>/log?tailLines=<1 or 100>&timestamps=true&limitBytes=65536``.
``tailLines`` makes the kubelet seek back from the end of the log file (a read of a block or
two, whatever the log's size; ``sinceSeconds`` alone would make it read the whole file to
filter by time). The newest line's kubelet timestamp (``hang.newest_line``; one matching
stepPattern, among the last 100, when the job has one) and the time of the read go into a
``ProgressSeen`` on the pod's view, which the reconciler hands the planner (``views``) in
place of the cache's: the decision is the planner's (aitj.core.planner.hang). The view stays
the same object while nothing new was read, so the planner's memo keeps its verdicts.

A read that finds no new line for stallSeconds kicks the job's pass (a hang needs a pass to be
decided; a read that finds a fresh line kicks nothing: there is nothing to decide). A read that
fails (the container is not there, the kubelet cannot be reached) changes nothing: no hang is
declared from what could not be read; it is logged once per pod and reason.

For goodput (docs/semantics.md section 25), the monitor also keeps, per job and in memory only,
the time of the first line read after each transition of the job to Running
(``resumption``: an upper bound of the training's resumption, within one read interval) and
since when it watches the job: the collector hands them to the account
(aitj.core.planner.goodput.Resumption). A new operator process knows none of the spells before
it: those are accounted from the status alone.

The pattern and the log are the tenant's: both are matched off the event loop, on the read's
thread, with RE2 (aitj.core.stepmatch: time linear in what is read, at most LIMIT_BYTES a
read), and a namespace has at most READS_PER_NAMESPACE of the READS_AT_ONCE reads in flight,
the due reads started a namespace at a time in turn (``fair_order``): one tenant's many jobs,
or a kubelet slow to answer for their pods, cannot hold back another's hang detection.

The cost, for docs/semantics.md: one GET per opted-in job per period (a few hundred bytes back
without stepPattern), proxied by the apiserver to the pod's kubelet.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import itertools
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from kubernetes import client

from aitj.controller.kubeclient import error_text, raw_get
from aitj.controller.logs import log
from aitj.core import api
from aitj.core.api import JobStatus
from aitj.core.api.reader import FieldError
from aitj.core.observed import PodView, ProgressSeen
from aitj.core.planner import hang
from aitj.core.planner.goodput import Resumption, running_spell
from aitj.core.stepmatch import StepPattern, compile_step_pattern
from aitj.core.wire import mapping, parse_time

JobKey = tuple[str, str]
TICK_SECONDS = 0.5  # how often the monitor looks for reads that are due
# A job without spec.progress is looked at again after this (a spec edit that adds it, too).
IDLE_SECONDS = 30.0
WAIT_SECONDS = 5.0  # a job whose watched pod does not run yet is looked at again after this
READS_AT_ONCE = 8  # log reads in flight at once (threads of the default pool)
READS_PER_NAMESPACE = 2  # of them, at most this many for the jobs of one namespace
LIMIT_BYTES = 65536
PATTERN_LINES = 100  # the lines read when only those matching stepPattern count


Gate = asyncio.Semaphore


class Gates:
    """Gates: a monitor's log reads in flight: at most ``at_once`` in all and READS_PER_NAMESPACE
    of one namespace (a tenant with many jobs, or slow logs, cannot keep the others' reads
    waiting). Made in the loop that runs the reads; shared by spec.progress's monitor and the
    recovery watchdog's (aitj.controller.training_watch)."""

    def __init__(self, at_once: int) -> None:
        self.all = asyncio.Semaphore(at_once)
        self.namespaces: dict[str, asyncio.Semaphore] = {}
        self.tasks: set[asyncio.Task[None]] = set()  # held, so none is collected while it runs

    def start(self, namespace: str, read: Callable[[Gate, Gate], Coroutine[Any, Any, None]]) -> None:
        """start: ``read(namespace's gate, the gate of all)`` as a task of the running loop."""
        mine = self.namespaces.setdefault(namespace, asyncio.Semaphore(READS_PER_NAMESPACE))
        task = asyncio.get_running_loop().create_task(read(mine, self.all))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def prune(self, keys: Iterable[JobKey]) -> None:
        """prune: forget the gates of namespaces with no job left and no read in flight."""
        kept = {k[0] for k in keys}
        for namespace in [n for n, g in self.namespaces.items() if n not in kept and not g.locked()]:
            del self.namespaces[namespace]


@dataclass(frozen=True)
class Watch:
    """Watch: one job's watched pod and what was last read of it: the pod's uid, the fact, and
    the view handed to the planner (made from ``base``, the cache's view it was made of)."""

    uid: str
    seen: ProgressSeen
    base: PodView | None = None
    view: PodView | None = None


class ProgressMonitor:
    """ProgressMonitor: reads the watched pods' logs on the stallSeconds cadence (``run``) and
    hands the planner the views with what was read (``views``)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        body_of: Callable[[JobKey], Mapping[str, Any] | None],
        pods_of: Callable[[JobKey], Sequence[PodView]],
        kick: Callable[[JobKey], None],
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.api_client = api_client
        self.body_of, self.pods_of, self.kick, self.clock = body_of, pods_of, kick, clock
        self.watches: dict[JobKey, Watch] = {}
        self.due: dict[JobKey, float] = {}
        self.reported: set[tuple[str, str]] = set()  # (pod uid, reason) logged once
        self.reads = 0  # log reads made (for the cost figures)
        # For goodput: since when each job is watched, and each Running spell's first line
        # (replaced, never changed in place: the scrape thread reads them).
        self.watched_since: dict[JobKey, dt.datetime] = {}
        self.first_lines: dict[JobKey, Mapping[dt.datetime, dt.datetime]] = {}

    def resumption(self, key: JobKey) -> Resumption | None:
        """resumption: what the monitor saw of the job's Running spells (None: not watched)."""
        since = self.watched_since.get(key)
        return None if since is None else Resumption(since, self.first_lines.get(key, {}))

    def forget(self, key: JobKey) -> None:
        """forget: all the monitor holds of a job."""
        for held in (self.due, self.watches, self.watched_since, self.first_lines):
            held.pop(key, None)

    def views(self, key: JobKey, pods: Sequence[PodView]) -> Sequence[PodView]:
        """views: ``pods`` with the watched pod's view carrying what was read of its log."""
        w = self.watches.get(key)
        if w is None:
            return pods
        for k, p in enumerate(pods):
            if p.uid != w.uid:
                continue
            if w.base is not p or w.view is None:  # the pod changed, or a new read: a new view
                w = replace(w, base=p, view=replace(p, progress=w.seen))
                self.watches[key] = w
            out = list(pods)
            out[k] = w.view if w.view is not None else p
            return out
        return pods

    async def run(self, job_keys: Callable[[], Sequence[JobKey]]) -> None:
        """run: forever, read the logs that are due, at most READS_AT_ONCE at a time and at most
        READS_PER_NAMESPACE of one namespace (a tenant with many jobs, or slow logs, cannot
        keep the others' reads waiting), the due reads started a namespace at a time in turn."""
        loop = asyncio.get_running_loop()
        gates = Gates(READS_AT_ONCE)
        while True:
            now = loop.time()
            keys = set(job_keys())
            for gone in [k for k in self.due if k not in keys]:
                self.forget(gone)
            gates.prune(keys)
            for key in fair_order(k for k in keys if self.due.get(k, 0.0) <= now):
                self.due[key] = now + IDLE_SECONDS  # until the read says its own period
                gates.start(key[0], functools.partial(self._read, key))
            await asyncio.sleep(TICK_SECONDS)

    async def _read(self, key: JobKey, mine: asyncio.Semaphore, gate: asyncio.Semaphore) -> None:
        """_read: one read of the job's watched pod's log. What the cache holds is read on the
        event loop (its stores change there); the GET and every match of the tenant's pattern
        against the tenant's log run on a thread."""
        async with mine, gate:
            try:
                progress, pod, began = self.target(key)
                found = None
                if progress is not None and pod is not None:
                    found = await asyncio.to_thread(self._scan, pod, progress, began)
                period, stalled = self.record(key, progress, pod, found)
            except Exception as e:  # a bug or an input it cannot take: logged, tried again later
                log.warning("progress read failed", namespace=key[0], job=key[1], error=str(e))
                return
        if period is not None:
            self.due[key] = asyncio.get_running_loop().time() + period
        if stalled:
            self.kick(key)

    def read(self, key: JobKey) -> tuple[float | None, bool]:
        """read: ``_read`` at once, on this thread (the monitor's tests)."""
        progress, pod, began = self.target(key)
        found = self._scan(pod, progress, began) if progress is not None and pod is not None else None
        return self.record(key, progress, pod, found)

    def target(self, key: JobKey) -> tuple[api.Progress | None, PodView | None, dt.datetime | None]:
        """target: the job's spec.progress (None: it has none, or a bad one), the pod to read
        (None: none runs) and the start of the Running spell whose first line is still wanted
        (``Scan.began``; None: none is). A job that opts in is watched from its first target."""
        body = self.body_of(key)
        spec = mapping(body.get("spec")) if body is not None else {}
        errors: list[FieldError] = []
        progress = api.parse_progress(spec.get("progress"), (), errors)
        if progress is None or errors:
            return None, None, None
        since = self.watched_since.setdefault(key, self.clock())
        status = JobStatus.from_json(body.get("status") if body is not None else None)
        began = running_spell(status)
        if began is not None and (began in self.first_lines.get(key, {}) or began < since):
            began = None  # its first line is known, or the spell began before the watch
        return progress, watched_pod(self.pods_of(key), progress.replica), began

    def record(
        self, key: JobKey, progress: api.Progress | None, pod: PodView | None, found: Scan | None
    ) -> tuple[float | None, bool]:
        """record: what a read found (``found``: the log's tail scanned, None if not read) goes
        into the job's Watch. Returns the period until the next read (None: IDLE_SECONDS) and
        whether the job's pass should run (no new line for stallSeconds)."""
        if progress is None:
            self.watches.pop(key, None)
            self.watched_since.pop(key, None)
            self.first_lines.pop(key, None)
            return None, False
        period = hang.poll_seconds(progress.stall_seconds)
        if pod is None:  # looked at again soon: its first read comes within WAIT_SECONDS of its start
            return min(period, WAIT_SECONDS), False
        if found is None:
            return period, False
        now = self.clock()
        self._first_line(key, found)
        line_at = found.newest
        old = self.watches.get(key)
        if old is not None and old.uid == pod.uid and old.seen.line_at is not None:
            line_at = old.seen.line_at if line_at is None else max(line_at, old.seen.line_at)
        self.watches[key] = Watch(pod.uid, ProgressSeen(line_at, now))
        silent = now - line_at if line_at is not None else None
        return period, silent is None or silent >= dt.timedelta(seconds=progress.stall_seconds)

    def _first_line(self, key: JobKey, found: Scan) -> None:
        """_first_line: the first line since the job's current Running spell began, kept (only
        the spells still in the job's history are kept)."""
        if found.began is None or found.first is None:
            return
        body = self.body_of(key)
        status = JobStatus.from_json(body.get("status") if body is not None else None)
        starts = {parse_time(c.last_transition_time) for c in status.conditions or ()}
        lines = self.first_lines.get(key, {})
        if found.began in lines or found.began not in starts:
            return
        kept = {b: t for b, t in lines.items() if b in starts}
        self.first_lines[key] = {**kept, found.began: found.first}

    def _scan(self, pod: PodView, progress: api.Progress, began: dt.datetime | None) -> Scan | None:
        """_scan: the watched container's log read (``_log``) and scanned (``scan``); None when
        it could not be read. Runs on a thread."""
        text = self._log(pod, progress)
        return None if text is None else scan(text, progress.step_pattern, began)

    def _log(self, pod: PodView, progress: api.Progress) -> str | None:
        """_log: the tail of the watched container's log, with timestamps; None if unreadable."""
        query = [
            ("tailLines", str(1 if progress.step_pattern is None else PATTERN_LINES)),
            ("timestamps", "true"),
            ("limitBytes", str(LIMIT_BYTES)),
        ]
        if progress.container is not None:
            query.append(("container", progress.container))
        self.reads += 1
        text, failed = tail_log(self.api_client, pod, query)
        if failed is not None:
            self._report(pod, failed)
        return text

    def _report(self, pod: PodView, reason: str) -> None:
        if (pod.uid, reason) not in self.reported:
            self.reported.add((pod.uid, reason))
            log.warning("cannot read the watched pod's log: no hang is judged", pod=pod.name, reason=reason)


def tail_log(
    api_client: client.ApiClient, pod: PodView, query: Sequence[tuple[str, str]]
) -> tuple[str | None, str | None]:
    """tail_log: ``GET .../pods/<pod>/log`` with ``query``: the text (None if unreadable) and,
    when unreadable, why (refused, 400 for no such container, 403, or unreachable). Shared with
    the recovery watchdog's reads (aitj.controller.training_watch)."""
    path = f"/api/v1/namespaces/{quote(pod.namespace)}/pods/{quote(pod.name)}/log"
    try:
        status, data = raw_get(api_client, path, query=query, accept="*/*")
    except Exception as e:
        return None, error_text(e)
    if status != 200:
        return None, f"HTTP {status}"
    return data.decode("utf-8", "replace"), None


@dataclass(frozen=True)
class Scan:
    """Scan: what one read found in the log's tail: the newest progress line's time, and, when
    asked for the Running spell that ``began`` then, the first line at or after it."""

    newest: dt.datetime | None
    began: dt.datetime | None = None
    first: dt.datetime | None = None


def scan(text: str, step_pattern: str | None, began: dt.datetime | None) -> Scan:
    """scan: ``text`` (a log's tail read with timestamps, at most LIMIT_BYTES) scanned for the
    lines matching ``step_pattern`` (any line when None). Linear in the text's length whatever
    the pattern (aitj.core.stepmatch): the tenant's pattern against the tenant's log."""
    pattern = compile_step_pattern(step_pattern) if step_pattern is not None else None
    first = first_line_since(text, pattern, began) if began is not None else None
    return Scan(hang.newest_line(text, pattern), began, first)


def fair_order(keys: Iterable[JobKey]) -> list[JobKey]:
    """fair_order: ``keys`` with the namespaces taking turns (the first job of each namespace,
    then the second of each, ...), each namespace's jobs in name order."""
    by_namespace: dict[str, list[JobKey]] = {}
    for key in sorted(keys):
        by_namespace.setdefault(key[0], []).append(key)
    rounds = itertools.zip_longest(*by_namespace.values())
    return [key for turn in rounds for key in turn if key is not None]


def first_line_since(text: str, pattern: StepPattern | None, since: dt.datetime) -> dt.datetime | None:
    """first_line_since: the timestamp of the oldest line of ``text`` (a log read with
    timestamps) at or after ``since`` that matches ``pattern`` (any line when None)."""
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        at = parse_time(stamp)
        if at is not None and at >= since and (pattern is None or pattern.search(rest)):
            return at
    return None


def watched_pod(pods: Sequence[PodView], replica: str) -> PodView | None:
    """watched_pod: the running, current pod of index 0 of ``replica`` (its highest generation),
    if there is one."""
    mine = [p for p in pods if p.replica == replica and p.index == hang.WATCHED_INDEX and not p.deleting]
    if not mine:
        return None
    top = max(mine, key=lambda p: p.generation)
    return top if top.phase == "Running" else None
