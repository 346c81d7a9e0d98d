"""Degraded: a job that has run goes on with fewer pods than it wants; why, per index, since when.

Pure. A part of each pass of a job that goes on (``part``, aitj.core.planner.core.PARTS);
``status.degraded`` says which indices run short and why (the Shortfalls), and the Events mark
entering and leaving the state. docs/semantics.md
("A visible degraded state") is the user-facing version. In short:

- A **shortfall** is an index the job wants (a slot, not a scale-out pod still joining) with no
  Running pod, for a cause in ``ShortfallCause``: its pod is Pending and the scheduler said it
  cannot place it (Unschedulable, found here from the pod), or one of the ``extra`` Shortfalls
  the restart rules hand in (a backoff, a budget used up, a node excluded).
- The job is **degraded** while it has shortfalls, has run (``startRunningTime``), is Running,
  Restarting or Scaling, and some pod of it runs: training goes on with the pods that run (the
  discovery host list has only them). A job still starting, or one of which nothing runs (a
  whole-job restart), is not running short: it is not running; its phase says what it is.
- ``since`` comes from the status before, so it holds across passes and operator restarts;
  the state's ``since`` is its oldest shortfall's when it begins. The Events are derived from
  the status before too (degraded before or not), so each is sent once per episode: they go
  after the status write (aitj.controller.executor), and each is named after the episode's
  ``since``, so a pass planned twice from the same status posts one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from aitj.core.api import MAX_LISTED, Degraded, DegradedIndex, Job, JobStatus, Phase
from aitj.core.planner import width
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.shortfall import Shortfall, ShortfallCause
from aitj.core.planner.status import MAX_QUOTED
from aitj.core.planner.survey import Slot, State, Survey
from aitj.core.planner.types import Event
from aitj.core.wire import format_time, parse_time

EVENT_DEGRADED = "Degraded"
EVENT_RECOVERED = "Recovered"
# The phases of a job that goes on and has run; Pending and Creating are a job still starting.
GOING_ON = frozenset({Phase.RUNNING, Phase.RESTARTING, Phase.SCALING})
# The kubectl column shows the reason: past this it gives counts per cause instead of indices.
MAX_REASON = 48


def shortfalls(
    found: Survey,
    extra: Sequence[Shortfall],
    now: datetime,
    joining: frozenset[tuple[str, int]] = frozenset(),
) -> tuple[Shortfall, ...]:
    """shortfalls: the indices the job wants that lack a Running pod for a known cause, in slot
    order (replica spec order, then index). An ``extra`` Shortfall counts when its index is a
    slot that neither runs nor succeeded; it wins over an Unschedulable pod of the same index
    (its cause says why the pod cannot be placed). Scale-out slots still ``joining`` are the
    scale operation's business (a rollback at scaleTimeout), not a shortfall. An ``OutOfRing``
    one counts as it is: its pod runs, and the training runs without it (aitj.core.planner.width)."""
    out_of_ring = tuple(sf for sf in extra if sf.cause is ShortfallCause.OUT_OF_RING)
    if out_of_ring:
        extra = [sf for sf in extra if sf.cause is not ShortfallCause.OUT_OF_RING]
    if not extra and not any(State.PENDING in counts for counts in found.states.values()):
        return out_of_ring  # no index is held back, and none waits for a node
    # Only a slot that neither runs nor succeeded falls short (checked first: most run).
    short = [s for s in found.astir if s.state is not State.SUCCEEDED]
    slots = {(s.replica.name, s.index): s for s in short if (s.replica.name, s.index) not in joining}
    given: dict[tuple[str, int], Shortfall] = {}
    for sf in extra:
        if (sf.replica, sf.index) in slots:
            given.setdefault((sf.replica, sf.index), sf)
    out: list[Shortfall] = []
    for key, slot in slots.items():
        found_short = given.get(key) or _unschedulable(slot, now)
        if found_short is not None:
            out.append(found_short)
    return (*out, *out_of_ring)


def _unschedulable(slot: Slot, now: datetime) -> Shortfall | None:
    """_unschedulable: the Shortfall of a slot whose pod waits for a node the scheduler cannot
    find (since the pod was created: the scheduler says so at its first try)."""
    p = slot.pod
    if slot.state is not State.PENDING or p is None or p.deleting or not p.unschedulable:
        return None
    said = p.unschedulable if len(p.unschedulable) <= MAX_QUOTED else p.unschedulable[:MAX_QUOTED] + "..."
    since = min(p.created, now) if p.created is not None else now
    return Shortfall(
        slot.replica.name, slot.index, ShortfallCause.UNSCHEDULABLE, f"pod {p.name}: {said}", since
    )


def part(ctx: Context) -> Part:
    """part: ``status.degraded`` as this pass leaves it, the Event of entering or leaving the
    state, and the slots' shortfalls (the Plan's, for people). The phase and whether the job
    has run are the pass's own (the Context's), not another part's status."""
    # Like the status this pass writes: startRunningTime is set once the job has run, and a
    # value that does not parse (left as it was) still says it has.
    ran = ctx.started is not None or bool(ctx.prev.start_running_time)
    why_not = _not_going_on(ctx.condition.type, ran, ctx.found)
    out, soonest = width.out_of_ring(ctx.found, ctx.joining)
    short = (*ctx.shortfalls, *out)
    value, events = _verdict(ctx.job, ctx.found, short, ctx.prev, ctx.now, ctx.joining, why_not)
    return Part(
        steps(events=events, shortfalls=short),
        edit=lambda status: status.updated(degraded=value),
        wake=() if soonest is None else (max(soonest, 1.0),),
    )


def update(
    status: JobStatus,
    job: Job,
    found: Survey,
    extra: Sequence[Shortfall],
    prev: JobStatus,
    now: datetime,
    joining: frozenset[tuple[str, int]] = frozenset(),
) -> tuple[JobStatus, tuple[Event, ...]]:
    """update: ``status`` (the one a pass writes for a job that goes on) with
    ``status.degraded`` set, or removed when the job is not degraded, and the Event of entering
    or leaving the state when this pass does (``prev``: the status the pass started from)."""
    why_not = _not_going_on(status.phase, bool(status.start_running_time), found)
    value, events = _verdict(job, found, extra, prev, now, joining, why_not)
    return status.updated(degraded=value), events


def _verdict(
    job: Job,
    found: Survey,
    extra: Sequence[Shortfall],
    prev: JobStatus,
    now: datetime,
    joining: frozenset[tuple[str, int]],
    why_not: str,
) -> tuple[Degraded | None, tuple[Event, ...]]:
    """_verdict: ``status.degraded`` (None: not degraded) and the Event of entering or leaving
    the state; ``why_not``: why a job with shortfalls is not degraded (empty: it is)."""
    before = prev.degraded if prev.degraded is not None and prev.degraded.to_json() else None
    short = shortfalls(found, extra, now, joining)
    if short and not why_not:
        now_degraded = state(job, found, short, before, now, joining)
        return now_degraded, (() if before else (_entered(job, now_degraded),))
    if before is None:
        return None, ()
    return None, (_left(job, before, why_not or "every index the job wants runs again"),)


def _not_going_on(phase: Phase | None, ran: bool, found: Survey) -> str:
    """_not_going_on: why a job with shortfalls is not degraded (empty: it is), given its phase
    and whether it has run."""
    if not ran or phase not in GOING_ON:
        return f"the job is {phase}"
    if not any(s.state is State.RUNNING for s in found.slots):
        return "no pod of the job runs (a restart of the whole job, or every node lost)"
    return ""


def state(
    job: Job,
    found: Survey,
    short: Sequence[Shortfall],
    before: Degraded | None,
    now: datetime,
    joining: frozenset[tuple[str, int]] = frozenset(),
) -> Degraded:
    """state: ``status.degraded`` for ``short`` (not empty): since, reason (short, for the
    kubectl column), message, count, and the first MAX_LISTED indices, each with the since the
    status ``before`` gave it if its cause is the same."""
    kept = {
        (e.replica, e.index, e.cause): parse_time(e.since)
        for e in (before.indices or () if before is not None else ())
    }
    listed = tuple(
        DegradedIndex(
            replica=sf.replica,
            index=sf.index,
            cause=sf.cause,
            message=sf.message,
            since=format_time(kept.get((sf.replica, sf.index, sf.cause)) or sf.since),
            until=format_time(sf.until) if sf.until is not None else None,
        )
        for sf in short[:MAX_LISTED]
    )
    began = (parse_time(before.since) if before is not None else None) or min(
        min(sf.since for sf in short), now
    )
    return Degraded(
        since=format_time(began),
        reason=reason(short),
        message=message(job, found, short, joining),
        count=len(short),
        indices=listed,
    )


def reason(short: Sequence[Shortfall]) -> str:
    """reason: the state in a few words, for ``kubectl get``: ``trainer[1 2] Unschedulable``,
    causes joined by ``, ``; past MAX_REASON characters, counts: ``5 short: 3 Unschedulable, 2
    Backoff``."""
    groups: dict[tuple[str, str], list[str]] = {}
    for sf in short:
        groups.setdefault((sf.replica, sf.cause.value), []).append(str(sf.index))
    text = ", ".join(f"{replica}[{' '.join(ix)}] {cause}" for (replica, cause), ix in groups.items())
    if len(text) <= MAX_REASON:
        return text
    causes: dict[str, int] = {}
    for sf in short:
        causes[sf.cause.value] = causes.get(sf.cause.value, 0) + 1
    return f"{len(short)} short: " + ", ".join(f"{n} {cause}" for cause, n in causes.items())


def message(
    job: Job, found: Survey, short: Sequence[Shortfall], joining: frozenset[tuple[str, int]] = frozenset()
) -> str:
    """message: per replica type that runs short, how many of its pods run of those it wants
    (and when that is fewer than minReplicas), and why each index is short."""
    parts: list[str] = []
    for r in job.spec.replicas:
        mine = [sf for sf in short if sf.replica == r.name]
        if not mine:
            continue
        slots = [s for s in found.of(r.name) if (r.name, s.index) not in joining]
        running = sum(1 for s in slots if s.state is State.RUNNING)
        low = f", fewer than minReplicas {r.min_replicas}" if running < r.min_replicas else ""
        why = "; ".join(f"index {sf.index} {sf.cause.value} ({sf.message})" for sf in mine[:MAX_LISTED])
        more = f"; and {len(mine) - MAX_LISTED} more" if len(mine) > MAX_LISTED else ""
        parts.append(f"replica {r.name} runs {running} of {len(slots)} pods{low}: {why}{more}")
    return "; ".join(parts)


def _event_name(job: Job, what: str, since: object) -> str | None:
    """_event_name: the name of an episode's Event, after its since (None if unreadable)."""
    at = parse_time(since)
    return f"{job.name}.{job.uid[:8] or 'job'}.{what}-{at:%Y%m%d%H%M%S}" if at is not None else None


def _entered(job: Job, now_degraded: Degraded) -> Event:
    """_entered: the Warning Event of a job that becomes degraded."""
    return Event(
        "Warning",
        EVENT_DEGRADED,
        f"job runs short of pods: {now_degraded.message}",
        _event_name(job, "degraded", now_degraded.since),
    )


def _left(job: Job, before: Degraded, why: str) -> Event:
    """_left: the Normal Event of a job that is no longer degraded, and why."""
    return Event(
        "Normal",
        EVENT_RECOVERED,
        f"no longer degraded (since {before.since}): {why}",
        _event_name(job, "recovered", before.since),
    )
