"""Goodput: the share of a job's time spent training, and where the rest went (issue 28).

Pure and clock-free (``now`` is given). Read from what the status records, so any operator
process, after any crash, gives the same account of the same job: the condition history (each
phase and when it began) and the restart entries (when the fault happened, when the operator
decided the restart). docs/semantics.md section 25 is the user-facing description; the metrics
are aitj_job_goodput_ratio and aitj_job_badput_seconds_total (aitj.core.telemetry reads
``account`` at scrape time).

The account begins when the job first runs: time Pending or Creating before that is a queue's
wait, not training lost. From then on, each second is one of:

- training: the job is Running, and no fault of it is waiting for the operator;
- ``fault``: a pod failed (the fault's own time, ``failureTime``) and the operator has not yet
  decided its restart (``time``), while the job looked Running;
- ``hang``: the same for a hang: from the last progress seen to the restart's decision;
- ``recovery``: the job is Restarting: from the decision until every wanted pod runs again;
- ``scaling``: a scale-out (or its rollback) is under way (Scaling). A scale-in is not: its
  leaving pods are out of the host list at once, and the others train on through its grace
  period, so it counts as training;
- ``starting``: Pending or Creating after the job has run (the pods of a resume);
- not counted: Suspended (the user's choice), and nothing after the job finished.

What it cannot see: the work a restart redoes since the training's last checkpoint, the time
the training takes after its pods run to rejoin and resume (without spec.progress), and an
elastic training that trains on at a smaller width while a replacement comes (counted as
recovery). Timestamps are
whole seconds, as the API server keeps them.

With spec.progress (``Resumption``, the progress monitor's facts, in memory): a recovery, a
hang's restart, a scale-out or a start lasts until the first progress line after the job is
Running again, not only until Running: the head of a Running spell, from its start to that
line (to now while none is seen yet), counts to the cause of the spell before it. The line's
time is an upper bound, within one read interval (``hang.poll_seconds``). A spell that began
before this operator process watched the job (an operator restart) is accounted from the status
alone.

The history keeps 64 conditions. Before one is dropped, ``fold`` adds what it accounted for
to ``status.goodput`` (the carry), so the account stays whole and its counters never go back.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from aitj.core.api import FINISHED_PHASES, GoodputCarry, JobCondition, JobStatus, Phase, RestartEntry
from aitj.core.planner.types import Plan
from aitj.core.wire import format_time, parse_time

# The cause a hang's restart is recorded with (issue 28's ``hang`` event): its failureTime is
# when progress was last seen.
HANG_CAUSE = "hang"


class BadputCause(enum.StrEnum):
    """BadputCause: where time that was not training went (the ``cause`` of aitj_job_badput_seconds_total)."""

    FAULT = "fault"
    HANG = "hang"
    RECOVERY = "recovery"
    SCALING = "scaling"
    STARTING = "starting"


_PHASE_CAUSE: Mapping[Phase, BadputCause] = {
    Phase.RESTARTING: BadputCause.RECOVERY,
    Phase.SCALING: BadputCause.SCALING,
    Phase.PENDING: BadputCause.STARTING,
    Phase.CREATING: BadputCause.STARTING,
}


@dataclass(frozen=True)
class Account:
    """Account: seconds training and seconds lost per cause (every cause present)."""

    training: float
    badput: Mapping[BadputCause, float]

    @property
    def total(self) -> float:
        return self.training + sum(self.badput.values())

    @property
    def ratio(self) -> float | None:
        """ratio: training over all the time accounted (None: none yet, the job has not run)."""
        return self.training / self.total if self.total > 0 else None


Span = tuple[datetime, datetime]


@dataclass(frozen=True)
class Resumption:
    """Resumption: what the progress signal saw of a job's Running spells (the operator's memory,
    aitj.controller.progress). ``watched_since``: since when this process watches the job's
    progress; ``lines``: for a Running spell that began since then (by its start), the time of
    the first progress line read after it began. A spell begun since ``watched_since`` with no
    entry has shown no line yet; one begun before it is accounted from the status alone."""

    watched_since: datetime
    lines: Mapping[datetime, datetime]

    def head_end(self, began: datetime, end: datetime) -> datetime | None:
        """head_end: when the head of the Running spell that began at ``began`` (and lasts to
        ``end``) ends: its first line, or ``end`` if none yet; None: not watched from its start."""
        if began < self.watched_since:
            return None
        line = self.lines.get(began)
        return end if line is None else min(max(line, began), end)


def _spans(conditions: Sequence[JobCondition], now: datetime) -> list[tuple[Phase, datetime, datetime]]:
    """_spans: each phase of the history, from when it began to when the next began (the current
    one to ``now``; a finished phase is the end)."""
    out = []
    for i, c in enumerate(conditions):
        start = parse_time(c.last_transition_time)
        if c.type is None or start is None:
            continue
        if i + 1 < len(conditions):
            end = parse_time(conditions[i + 1].last_transition_time) or start
        else:
            end = start if c.type in FINISHED_PHASES else now
        out.append((Phase.RUNNING if _scale_in(c) else c.type, start, end))
    return out


def _scale_in(c: JobCondition) -> bool:
    """_scale_in: a Scaling condition of a scale-in (the seed's message: ``... scalein Operation
    scalein ...``). The leaving pods are out of the host list at once and the others train on
    through the grace period: it counts as Running."""
    return c.type is Phase.SCALING and " scalein Operation scalein " in (c.message or "")


def _windows(restarts: Iterable[RestartEntry]) -> list[tuple[BadputCause, datetime, datetime]]:
    """_windows: each restart's fault to its decision, as ``fault`` or ``hang``, without overlap
    (a second fault while the first waits adds only what comes after)."""
    found = []
    for e in restarts:
        fault, decided = parse_time(e.failure_time), parse_time(e.time)
        if fault is not None and decided is not None and fault < decided:
            cause = BadputCause.HANG if e.cause == HANG_CAUSE else BadputCause.FAULT
            found.append((fault, decided, cause))
    out: list[tuple[BadputCause, datetime, datetime]] = []
    covered: datetime | None = None
    for start, end, cause in sorted(found):
        start = max(start, covered) if covered is not None else start
        if start < end:
            out.append((cause, start, end))
        covered = max(covered, end) if covered is not None else end
    return out


def _seconds(a: datetime, b: datetime) -> float:
    return max((b - a).total_seconds(), 0.0)


def _overlap(span: Span, other: Span) -> float:
    return _seconds(max(span[0], other[0]), min(span[1], other[1]))


def account(status: JobStatus, now: datetime, resumed: Resumption | None = None) -> Account:
    """account: the job's time from its first Running to ``now`` (or its end), by what it went
    to: ``status.goodput`` (what dropped conditions accounted for), then the history after it.
    ``resumed`` (spec.progress's facts; None: the status alone): the head of a Running spell
    until its first progress line counts to the cause of the spell before it."""
    carry = status.goodput or GoodputCarry()
    since = parse_time(carry.through)
    training = (carry.training_millis or 0) / 1000
    bad = {c: (carry.badput_millis or {}).get(c.value, 0) / 1000 for c in BadputCause}
    ran = training > 0 or any(bad.values())
    running: list[Span] = []
    before: BadputCause | None = None  # the cause of the spell before
    for phase, began, ended in _spans(status.conditions or (), now):
        start, end = (max(began, since), min(ended, now)) if since is not None else (began, min(ended, now))
        ran = ran or phase is Phase.RUNNING
        cause, prior, before = _PHASE_CAUSE.get(phase), before, _PHASE_CAUSE.get(phase)
        if end <= start or not ran:
            continue
        if phase is Phase.RUNNING:
            head = _head(resumed, prior, began, start, end)
            if prior is not None and head > start:
                bad[prior] += _seconds(start, head)
                start = head
            running.append((start, end))
            training += _seconds(start, end)
        elif cause is not None:
            bad[cause] += _seconds(start, end)
    for cause, start, end in _windows(status.restarts or ()):
        lost = sum(_overlap((start, end), span) for span in running)
        training -= lost
        bad[cause] += lost
    return Account(max(training, 0.0), bad)


def _head(
    resumed: Resumption | None, prior: BadputCause | None, began: datetime, start: datetime, end: datetime
) -> datetime:
    """_head: where the training of a Running spell (begun at ``began``, counted from ``start``
    to ``end``) begins: at its first progress line after a spell of cause ``prior``, when the
    signal watched it from its start; at ``start`` otherwise."""
    if resumed is None or prior is None:
        return start
    head = resumed.head_end(began, end)
    return start if head is None else max(head, start)


def fold(prev: JobStatus, conditions: Sequence[JobCondition]) -> GoodputCarry | None:
    """fold: ``status.goodput`` for a status whose history becomes ``conditions``: the one of
    ``prev``, plus, if the history drops its oldest entries, what they accounted for, up to when
    the first one kept began."""
    old = prev.conditions or ()
    if not old or not conditions or _key(old[0]) == _key(conditions[0]):
        return prev.goodput
    through = parse_time(conditions[0].last_transition_time)
    if through is None:
        return prev.goodput
    upto = account(prev, through)
    return GoodputCarry(
        through=format_time(through),
        training_millis=round(upto.training * 1000),
        badput_millis={c.value: round(s * 1000) for c, s in upto.badput.items()},
    )


def _key(c: JobCondition) -> tuple[Phase | None, str | None]:
    return c.type, c.last_transition_time


def carried(prev: JobStatus, plan: Plan) -> Plan:
    """carried: ``plan`` with its status's ``goodput`` folded (``fold``), for a pass whose
    status drops conditions from the history."""
    status = plan.status
    if status is None:
        return plan
    carry = fold(prev, status.conditions or ())
    if carry == status.goodput:
        return plan
    return replace(plan, status=status.updated(goodput=carry))


def running_spell(status: JobStatus) -> datetime | None:
    """running_spell: when the job's current spell counted as Running began (a scale-in's
    included, as in ``account``); None if it is in no such spell. The progress monitor keys its
    first line after it by this time (``Resumption.lines``)."""
    conditions = status.conditions or ()
    if not conditions or status.phase in FINISHED_PHASES:
        return None
    last = conditions[-1]
    phase = Phase.RUNNING if _scale_in(last) else last.type
    return parse_time(last.last_transition_time) if phase is Phase.RUNNING else None
