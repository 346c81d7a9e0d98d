"""Hangs (issue 28): is the job's watched pod silent for longer than spec.progress allows?

Pure and clock-free. A job that opts in (spec.progress) names a replica; the pod of its index 0
is watched. The operator reads the tail of that pod's log (aitj.controller.progress, with the
``poll_seconds`` cadence and the ``newest_line`` reading below) and hands the planner what it
saw on the pod's view (``PodView.progress``: the newest progress line's timestamp and when
the log was read). ``hung`` turns that into a ``hang`` Failure, which the survey treats like
any other exceptional event: the rules restart it with their scope, or it fails the replica.

The clock (``clock_start``) runs only while the job is Running, not degraded and not
suspended, and the watched pod runs; it starts again at the latest of: the job's last
transition to Running (after Pending, Creating, Restarting, Scaling), the newest start of any
of the job's pods (a replacement that ends a degraded spell, a restart's new pods) and the
newest progress line. So a hang is silence for ``stallSeconds`` of a job that had all its pods
and was not being changed (docs/semantics.md, "Hangs").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from aitj.core.api import Job, Phase, ReplicaSpec
from aitj.core.observed import PodView
from aitj.core.policy import Failure, FailureKind
from aitj.core.stepmatch import StepPattern
from aitj.core.wire import format_time, parse_time

WATCHED_INDEX = 0  # the launcher / master, or a worker's rank 0: the pod that prints the steps
# The log is read every stallSeconds / POLLS_PER_STALL seconds, within these bounds: a hang is
# then seen at most 5 % late (one period, plus a pass), well within the +10 % of the issue.
POLLS_PER_STALL = 20
MIN_POLL_SECONDS = 1.0
MAX_POLL_SECONDS = 60.0


def poll_seconds(stall_seconds: int) -> float:
    """poll_seconds: how often the watched pod's log is read for a stallSeconds of ``stall_seconds``."""
    return min(MAX_POLL_SECONDS, max(MIN_POLL_SECONDS, stall_seconds / POLLS_PER_STALL))


def newest_line(text: str, pattern: StepPattern | None) -> datetime | None:
    """newest_line: the timestamp of the newest line of ``text`` (a log read with
    ``timestamps=true``: "<RFC 3339 time> <line>" per line) that matches ``pattern`` (any line
    when None); None when no line does. A line whose timestamp cannot be read is skipped."""
    for line in reversed(text.splitlines()):
        stamp, _, rest = line.partition(" ")
        at = parse_time(stamp)
        if at is not None and (pattern is None or pattern.search(rest)):
            return at
    return None


def latest_start(job: Job, pods: Iterable[PodView | None]) -> datetime | None:
    """latest_start: the newest ``running_since`` of ``pods`` (the job's), only for a job that
    opts in (None otherwise: nothing reads it)."""
    if job.spec.progress is None:
        return None
    starts = [p.running_since for p in pods if p is not None and p.running_since is not None]
    return max(starts, default=None)


def watched(job: Job, replica: str, index: int) -> bool:
    """watched: the pod at (``replica``, ``index``) is the one spec.progress watches."""
    return job.spec.progress is not None and job.spec.progress.replica == replica and index == WATCHED_INDEX


def clock_start(job: Job, pod: PodView, started: datetime | None) -> datetime | None:
    """clock_start: when the hang clock of the watched ``pod`` started (not counting progress
    lines), or None while it does not run: the job is not Running (Pending, Creating,
    Restarting, Scaling, Suspended), it is degraded (a pod short: the others wait for it), or
    the pod does not run. ``started``: ``latest_start`` of the job's pods."""
    status = job.status
    if job.spec.suspend or status.phase is not Phase.RUNNING or _short_of_others(job):
        return None
    if pod.phase != "Running" or pod.running_since is None or pod.deleting:
        return None
    current = status.current_condition()
    since = parse_time(current.last_transition_time) if current is not None else None
    return max(t for t in (pod.running_since, since, started) if t is not None)


def _short_of_others(job: Job) -> bool:
    """_short_of_others: the job is degraded for want of a pod other than the watched one. A
    hang that stands (a hang rule whose budget ran out) makes the job degraded for the watched
    index itself: that must not stop the clock, or the next pass would find no hang, end the
    degraded spell, find the hang again, and so on, a status write and Events every pass."""
    degraded, progress = job.status.degraded, job.spec.progress
    if degraded is None or progress is None:
        return degraded is not None
    watched_index = (progress.replica, WATCHED_INDEX)
    return not degraded.indices or any((d.replica, d.index) != watched_index for d in degraded.indices)


def hung(job: Job, r: ReplicaSpec, index: int, pod: PodView, started: datetime | None) -> Failure | None:
    """hung: a ``hang`` Failure when ``pod``, the watched one, printed no progress line for
    stallSeconds of running clock by the last read of its log (None otherwise, or when the
    log was never read). ``at`` is when progress was last seen (or the clock started): the
    time lost to the hang counts from there."""
    progress = job.spec.progress
    seen = pod.progress
    if progress is None or seen is None or not watched(job, r.name, index):
        return None
    start = clock_start(job, pod, started)
    if start is None:
        return None
    since = start if seen.line_at is None else max(start, seen.line_at)
    silent = seen.checked_at - since
    if silent < timedelta(seconds=progress.stall_seconds):
        return None
    what = "no progress line" if progress.step_pattern is None else "no line matching stepPattern"
    return Failure(
        FailureKind.HANG,
        f"hang: {what} for {int(silent.total_seconds())} s (stallSeconds {progress.stall_seconds})",
        at=since,
    )


def standing(pod: str, failure: Failure) -> str:
    """standing: the words for a hang no rule restarts, while its pod is left running: ``hang of
    pod <pod>: no progress line since <time> (stallSeconds 60), not restarted``. The verdict's
    words with its start for its length: made of what does not move from pass to pass, so the
    condition that carries them is written once and their Event sent once
    (aitj.core.planner.rule_status)."""
    since = "" if failure.at is None else f" since {format_time(failure.at)}"
    what = re.sub(r" for \d+ s ", since + " ", failure.description.removeprefix("hang: "), count=1)
    return f"hang of pod {pod}: {what}, not restarted"
