"""``aitj chaos --progress``: the training's own progress, read from each job's launcher log,
and the two invariants a user cares about. The reader is I/O; the rest is pure.

The launcher prints the training's steps and re-formings (the format ``aitj.tools.trainbench``
reads: the Horovod seed's script, and train.py of the MPI and torchrun examples). The reader
asks the API for the last few seconds of the log of each job's launcher pod every
``PERIOD`` seconds, with the container runtime's timestamps, and keeps the lines it had not
seen. Polling rather than following: a followed stream ends with its pod, and a launcher that
is replaced needs a new one anyway; a poll costs one small GET per job.

- ``progresses``: after every fault, the training of each job it hit completes a step beyond
  the highest one completed before the fault within the bound. A ring that waits on a dead
  peer, or a job that never re-forms, breaks it.
- ``from_scratch``: the training never starts again from step 0 once it has progressed,
  unless the job recorded a restart of scope All (the policy asked for the whole job).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core.api import FINISHED_PHASES, ReplicaType, RestartScope
from aitj.tools.bench.stats import percentile
from aitj.tools.chaos.history import History, JobKey, ProgressSample
from aitj.tools.chaos.invariants import Check, Violation, job_name
from aitj.tools.chaos.replay import World
from aitj.tools.trainbench.timeline import Reset, Step, parse_line, runtime_time

PERIOD = 2.0  # seconds between two reads of a launcher's log
OVERLAP = 10  # each read asks for this many seconds more than since the last, so none is missed

Launcher = tuple[str, str]  # (namespace, pod)


def launchers(world: World, jobs: Sequence[JobKey]) -> dict[JobKey, Launcher]:
    """launchers: the current launcher pod (index 0 of the job's master replica) of each job
    that has one Running or finished, by job."""
    out: dict[JobKey, Launcher] = {}
    for key in jobs:
        job = world.spec(key)
        if job is None:
            continue
        masters = {r.name for r in job.spec.replicas if r.replica_type is ReplicaType.MASTER}
        for p in world.pods_of(key):
            if p.replica in masters and p.index == 0 and world.current(p) and p.phase != "Pending":
                out[key] = (p.namespace, p.name)
    return out


class Reader:
    """Reader: a daemon thread reading the launchers ``aim`` names into ``history.progress``.
    ``epoch``: the wall-clock time of the history's zero (log lines carry wall-clock stamps)."""

    def __init__(self, api_client: client.ApiClient, history: History, epoch: float) -> None:
        self.core: Any = client.CoreV1Api(api_client)
        self.history, self.epoch = history, epoch
        self._lock = threading.Lock()
        self._aims: dict[JobKey, Launcher] = {}
        self._read: dict[Launcher, tuple[float, set[str]]] = {}  # last stamp read, lines at it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.read_all()  # the last lines, so the checks see the end of the run

    def aim(self, aims: Mapping[JobKey, Launcher]) -> None:
        """aim: the launcher pods to read from now on (called from the loop after each refresh)."""
        with self._lock:
            self._aims.update(aims)

    def _run(self) -> None:
        while not self._stop.wait(PERIOD):
            self.read_all()

    def read_all(self) -> None:
        with self._lock:
            aims = dict(self._aims)
        for key, launcher in aims.items():
            with contextlib.suppress(ApiException, OSError):  # gone, or not started: next time
                self._read_one(key, launcher)

    def _read_one(self, key: JobKey, launcher: Launcher) -> None:
        ns, pod = launcher
        last, at_last = self._read.get(launcher, (0.0, set()))
        kw: dict[str, Any] = {"timestamps": True}
        if last:
            kw["since_seconds"] = int(time.time() - last) + OVERLAP
        text = self.core.read_namespaced_pod_log(pod, ns, **kw)
        lines, last, at_last = new_lines(str(text).splitlines(), last, at_last)
        self._read[launcher] = (last, at_last)
        samples = [
            ProgressSample(key, pod, replace(e, t=e.t - self.epoch))
            for e in (parse_line(line) for line in lines)
            if e is not None
        ]
        self.history.progress.extend(samples)


def new_lines(lines: Sequence[str], last: float, at_last: set[str]) -> tuple[list[str], float, set[str]]:
    """new_lines: of a read's timestamped ``lines``, those after the stamp ``last`` (and those
    at it not among ``at_last``, the lines already read at that stamp), with the new last
    stamp and the lines at it. Reads overlap on purpose; this keeps each line once."""
    out: list[str] = []
    for line in lines:
        stamp, _, _ = line.partition(" ")
        try:
            t = runtime_time(stamp)
        except ValueError:
            continue  # not a timestamped line (a read cut mid-line)
        if t < last or (t == last and line in at_last):
            continue
        if t > last:
            last, at_last = t, set()
        at_last = at_last | {line}
        out.append(line)
    return out, last, at_last


@dataclass(frozen=True)
class Settings:
    """Settings: a fault's training must complete a new step within ``bound`` seconds; a step
    is ``batch`` samples per rank (for samples per second)."""

    bound: float = 120.0
    batch: int = 32


def _events(history: History) -> dict[JobKey, list[ProgressSample]]:
    out: dict[JobKey, list[ProgressSample]] = {}
    for s in sorted(history.progress, key=lambda s: s.t):
        out.setdefault(s.key, []).append(s)
    return out


def highest_before(samples: Sequence[ProgressSample], t: float) -> int | None:
    """highest_before: the highest step completed before ``t``, or None if none was."""
    steps = [s.event.step for s in samples if isinstance(s.event, Step) and s.t < t]
    return max(steps) if steps else None


def progressed(samples: Sequence[ProgressSample], t: float, until: float) -> float | None:
    """progressed: when, after ``t`` and before ``until``, a step beyond the highest one before
    ``t`` was completed (seconds after ``t``); None if none was."""
    before = highest_before(samples, t)
    for s in samples:
        e = s.event
        if t <= s.t <= until and isinstance(e, Step) and (before is None or e.step > before):
            return s.t - t
    return None


def progresses(history: History, settings: Settings) -> Check:
    """progresses: every fault that went through is followed, in each job it hit (every job
    read, for a fault not aimed at a job), by a step beyond the highest before it, within the
    bound, unless the job ended within it (by its rules: the recovery check judges that it
    says why). A fault in the last ``bound`` seconds of the run is judged on what it saw."""
    check = Check("training progresses")
    events = _events(history)
    ended = finished(history)
    for f in history.faults:
        if f.error is not None:
            continue
        for key in f.jobs or tuple(events):
            samples = events.get(key, [])
            check.checks += 1
            if key in ended and ended[key] <= f.t + settings.bound:
                continue  # the job ended by its rules: the recovery check judges that it says why
            if progressed(samples, f.t, f.t + settings.bound) is None:
                check.violations.append(
                    Violation(
                        check.name,
                        f.t,
                        job_name(key),
                        f"no step beyond {highest_before(samples, f.t)} within {settings.bound:.0f}s "
                        f"after fault {f.n} ({f.kind} {f.target})",
                    )
                )
    return check


def finished(history: History) -> dict[JobKey, float]:
    """finished: when each job was first seen in a final phase (Succeeded, Failed, Timeout)."""
    out: dict[JobKey, float] = {}
    for s in history.jobs:
        if s.key not in out and s.phase in FINISHED_PHASES:
            out[s.key] = s.t
    return out


def whole_job_restarts(history: History) -> dict[JobKey, float]:
    """whole_job_restarts: when each job was first seen to have recorded a restart of scope All."""
    out: dict[JobKey, float] = {}
    for s in history.jobs:
        recorded = s.status.get("restarts") or []
        if s.key not in out and any(r.get("scope") == RestartScope.ALL.value for r in recorded):
            out[s.key] = s.t
    return out


def from_scratch(history: History) -> Check:
    """from_scratch: no re-forming resumes at step 0 after the training had completed a step
    (in any launcher's log of the job), unless the job had recorded a restart of scope All."""
    check = Check("never from step 0 again")
    allowed = whole_job_restarts(history)
    for key, samples in _events(history).items():
        started: float | None = None
        for s in samples:
            e = s.event
            if isinstance(e, Step) and e.step > 0 and started is None:
                started = s.t
            if not isinstance(e, Reset) or e.rank != 0 or started is None:
                continue
            check.checks += 1
            excused = key in allowed and allowed[key] <= s.t
            if e.resume == 0 and not excused:
                check.violations.append(
                    Violation(check.name, s.t, job_name(key), f"{s.pod} re-formed at step 0 ({e.size} ranks)")
                )
    return check


def checks(history: History, settings: Settings) -> list[Check]:
    """checks: the training invariants, in the report's order."""
    return [progresses(history, settings), from_scratch(history)]


def caught_up(history: History, t: float, jobs: Sequence[JobKey]) -> bool:
    """caught_up: every job in ``jobs`` with progress read has completed a step beyond the
    highest one before ``t`` (the run's last fault)."""
    events = _events(history)
    return all(progressed(events[k], t, float("inf")) is not None for k in jobs if k in events)


def pace(samples: Sequence[ProgressSample], batch: int) -> list[tuple[float, float]]:
    """pace: samples per second over time, as (time, rate) between consecutive step lines of
    rank 0 in one world: (steps between them) x ``batch`` x ranks / seconds between them. A
    re-forming starts a new world, so no rate spans one."""
    out: list[tuple[float, float]] = []
    prev: tuple[float, Step] | None = None
    for s in samples:
        e = s.event
        if isinstance(e, Reset):
            prev = None
        elif isinstance(e, Step) and e.rank == 0:
            if prev is not None and s.t > prev[0] and e.step > prev[1].step and e.size == prev[1].size:
                out.append((s.t, (e.step - prev[1].step) * batch * e.size / (s.t - prev[0])))
            prev = (s.t, e)
    return out


def summary(history: History, settings: Settings) -> dict[str, dict[str, Any]]:
    """summary: per job read, what its training did over the run: the last step, how often
    its world re-formed, samples per second (median of the pace), and for the faults that hit
    it the seconds until it stepped past where it was (p50, p99 and the worst)."""
    events = _events(history)
    out: dict[str, dict[str, Any]] = {}
    for key, samples in sorted(events.items()):
        steps = [s.event.step for s in samples if isinstance(s.event, Step)]
        rates = sorted(r for _, r in pace(samples, settings.batch))
        hit = [f for f in history.faults if f.error is None and (key in f.jobs or not f.jobs)]
        took = [progressed(samples, f.t, f.t + settings.bound) for f in hit]
        secs = sorted(x for x in took if x is not None)
        out[job_name(key)] = {
            "last_step": max(steps, default=None),
            "reformed": sum(1 for s in samples if isinstance(s.event, Reset) and s.event.rank == 0),
            "samples_per_s_median": round(rates[len(rates) // 2], 1) if rates else None,
            "faults": len(hit),
            "stepped_past": len(secs),
            "past_p50_s": round(percentile(secs, 50), 2) if secs else None,
            "past_p99_s": round(percentile(secs, 99), 2) if secs else None,
            "past_max_s": round(secs[-1], 2) if secs else None,
        }
    return out
