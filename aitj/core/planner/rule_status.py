"""What the recovery rules show in a pass of a job that goes on: ``status.excludedNodes`` (the
exclusions in force), the Event of a failure that stands because a rule's budget ran out, and
the wake-ups when a backoff hold or an exclusion ends by itself.

Pure and clock-free. The rules' own logic (budgets, backoff, exclusions, what the ledger keeps)
is aitj.core.planner.rule_budgets'; docs/semantics.md ("Rule budgets over windows", "Backoff",
"Keeping replacements off bad nodes") is the user-facing description.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from aitj.core.api import ExcludedNode, Job
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.shortfall import Shortfall, ShortfallCause
from aitj.core.planner.status import hang_words
from aitj.core.planner.survey import State, Survey
from aitj.core.planner.types import Event
from aitj.core.wire import format_time

EVENT_BUDGET_EXHAUSTED = "RuleBudgetExhausted"
EVENT_HANG_STANDS = "HangNotRestarted"


def part(ctx: Context) -> Part:
    """part: the exclusions in force, the Events of budgets used up, the wake-ups."""
    excluded = excluded_status(ctx.job, ctx.ledger, ctx.now, ctx.shortfalls) or None
    wake = wakes(ctx.shortfalls, next_expiry(ctx.job, ctx.ledger, ctx.now), ctx.now)
    return Part(
        steps(events=budget_events(ctx.job, ctx.found) + hang_events(ctx)),
        edit=lambda status: status.updated(excluded_nodes=excluded),
        wake=tuple(wake),
    )


def budget_events(job: Job, found: Survey) -> tuple[Event, ...]:
    """budget_events: one per failure that stands because a rule's budget ran out."""
    events = (budget_event(job, s.name, s.generation, s.shortfall) for s in found.astir if s.shortfall)
    return tuple(e for e in events if e is not None)


def hang_events(ctx: Context) -> tuple[Event, ...]:
    """hang_events: a Warning Event per hang that stands while its pod runs on (section 24), in
    the pass whose Running condition first says it (``status.hang_words``): a pass that
    re-reads the same hang sends nothing, a pass whose status write failed is redone and sends
    the same named Event (the apiserver keeps the first)."""
    current = ctx.prev.current_condition()
    before = (current.message if current is not None else None) or ""
    out = []
    for s in ctx.found.astir:
        words = hang_words(s) if s.state is State.FAILED else None
        if words is None or words not in ctx.condition.message or words in before or s.shortfall:
            continue  # a hang rule's budget ran out: RuleBudgetExhausted says it (``budget_events``)
        at = s.failure.at if s.failure is not None and s.failure.at is not None else ctx.now
        which = f"{s.replica.name}-{s.index}-{s.generation}-{int(at.timestamp())}"
        name = f"{ctx.job.name}.{ctx.job.uid[:8] or 'job'}.hang-{which}"
        message = f"{words}; {s.fail.message}" if s.fail is not None else words
        out.append(Event("Warning", EVENT_HANG_STANDS, message, name))
    return tuple(out)


def excluded_status(
    job: Job, ledger: Ledger, now: datetime, shortfalls: Sequence[Shortfall] = ()
) -> tuple[ExcludedNode, ...]:
    """excluded_status: ``status.excludedNodes``, the exclusions in force (expired ones
    dropped); ``message`` when the index's replacement waits Pending because of them."""
    waiting = {(s.replica, s.index): s.message for s in shortfalls if s.cause is ShortfallCause.NODE_EXCLUDED}
    out: list[ExcludedNode] = []
    for r in job.spec.replicas:
        for (index, node), e in ledger.replica(r.name).excluded:
            if e.until > now:
                entry = ExcludedNode(
                    node=node,
                    replica=r.name,
                    index=index,
                    rule=e.rule,
                    reason=e.reason,
                    until=format_time(e.until),
                    message=waiting.get((r.name, index)),
                )
                out.append(entry)
    return tuple(out)


def next_expiry(job: Job, ledger: Ledger, now: datetime) -> datetime | None:
    """next_expiry: when the next exclusion in force expires (the status drops it then)."""
    times = [e.until for r in job.spec.replicas for _, e in ledger.replica(r.name).excluded if e.until > now]
    return min(times, default=None)


def budget_event(job: Job, pod: str, generation: int, shortfall: Shortfall) -> Event | None:
    """budget_event: the Warning Event of a failure that stands because a rule's budget ran out,
    while the job goes on (when it ends the job, the job's own Event says it). Named after the
    failed generation, so it is sent once however many passes see it."""
    if shortfall.cause is not ShortfallCause.BUDGET_EXHAUSTED:
        return None
    name = f"{job.name}.{job.uid[:8] or 'job'}.budget-{shortfall.replica}-{shortfall.index}-{generation}"
    return Event("Warning", EVENT_BUDGET_EXHAUSTED, f"pod {pod}: {shortfall.message}", name)


def wakes(shortfalls: Sequence[Shortfall], expiry: datetime | None, now: datetime) -> list[float]:
    """wakes: seconds until each hold or exclusion ends by itself (plan again then)."""
    times = [s.until for s in shortfalls if s.until is not None]
    if expiry is not None:
        times.append(expiry)
    return [max((t - now).total_seconds(), 0.0) for t in times]
