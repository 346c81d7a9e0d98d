"""The recovery rules of a live job as ``aitj explain`` shows them (issue 15): per rule, the
restart budget left, and per index the backoff and the nodes it keeps off.

Pure and clock-free. Read back from the planner's own ledger (the Assessment's) and Plan, with
the functions the planner decides by (aitj.core.planner.rule_budgets), so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from aitj.core.api import InfrastructureFaults, Job, ReplicaSpec, RestartEntry, RestartScope, ShortfallCause
from aitj.core.faultclass import FaultClass, cause_class
from aitj.core.planner import Plan, in_place
from aitj.core.planner.ledger import Ledger, ReplicaHistory
from aitj.core.planner.rule_budgets import active, budget
from aitj.core.policy import rule_text
from aitj.core.wire import format_time


def recovery_lines(job: Job, ledger: Ledger, result: Plan, now: datetime) -> tuple[str, ...]:
    """recovery_lines: one line per rule with a budget, backoff or node exclusion, then one per
    index held back (a backoff running, a budget used up, an excluded node) and per exclusion."""
    lines: list[str] = []
    restarts = (result.status or job.status).restarts or ()  # the job's status if the pass writes none
    for r in job.spec.replicas:
        history = ledger.replica(r.name)
        for position, rule in enumerate(r.rules, 1):
            parts = _rule_parts(job, r, position - 1, history, now)
            if rule.infrastructure_faults is InfrastructureFaults.EXEMPT:
                parts.append(_exempt_part(r, rule_text(rule), restarts))
            if parts:
                lines.append(f"replica {r.name} rule {position} {rule_text(rule)}: " + "; ".join(parts))
        indices = sorted({i for (i, _), _ in history.excluded})
        for i in indices:
            for e in active(history, i, now):
                lines.append(
                    f"replica {r.name} index {i} keeps off node {e.node} until {format_time(e.until)} "
                    f"(rule {e.rule}, {e.reason})"
                )
    lines.extend(
        f"replica {e.replica} index {e.index} pod {e.pod} restarted in place: {e.message}"
        for e in restarts
        if e.scope is RestartScope.IN_PLACE
    )
    for s in result.shortfalls:
        held = "runs out of the ring" if s.cause is ShortfallCause.OUT_OF_RING else "held back"
        lines.append(f"replica {s.replica} index {s.index} {held} ({s.cause}): {s.message}")
    return tuple(lines)


def _exempt_part(r: ReplicaSpec, text: str, restarts: Sequence[RestartEntry]) -> str:
    """_exempt_part: what a rule with ``infrastructureFaults: Exempt`` kept off its budget: its
    infrastructure restarts among those ``status.restarts`` still lists (section 25)."""
    kept = [
        e.cause
        for e in restarts
        if e.replica == r.name and e.rule == text and cause_class(e.cause or "") is FaultClass.INFRASTRUCTURE
    ]
    causes = ", ".join(sorted({c for c in kept if c}))
    listed = f"its {len(kept)} in status.restarts ({causes}) charged nothing" if kept else "none yet"
    return (
        f"infrastructureFaults Exempt: infrastructure faults restart without charging its budget ({listed})"
    )


def _rung(job: Job, replica: ReplicaSpec, history: ReplicaHistory, now: datetime) -> str:
    """_rung: what the replica's InPlace rungs do for a pod created now (the codes its
    containers restart in place on), or that they are spent and the next rule acts."""
    codes = in_place.codes(replica, job.spec.fault_tolerant, history, now)
    if codes:
        listed = ",".join(str(c) for c in sorted(codes))
        return f"restarts in place (same pod, same node): a pod created now does so on exit codes {listed}"
    return "in place: nothing now (spent, or an earlier rule acts first): the next rule that matches acts"


def _rule_parts(job: Job, r: ReplicaSpec, position: int, history: ReplicaHistory, now: datetime) -> list[str]:
    """_rule_parts: what ``aitj explain`` says of rule ``position`` of ``r``: its budget, its
    backoff, its node exclusion, its in-place rung."""
    rule = r.rules[position]
    text = rule_text(rule)
    parts = []
    if (b := budget(rule, history, now)) is not None:
        parts.append(b.text)
    if rule.backoff is not None:
        bo = rule.backoff
        streaks = [(i, h.streak) for (i, t), h in history.rules if t == text and h.streak]
        now_at = ", ".join(f"index {i} failed {n} in a row" for i, n in streaks) or "no failures yet"
        doubling = f"backoff {bo.initial}s doubling to {bo.maximum}s"
        parts.append(f"{doubling}, reset after {bo.reset_after}s ({now_at})")
    if rule.restart_scope is RestartScope.IN_PLACE:
        parts.append(_rung(job, r, history, now))
    if rule.exclude_node_seconds is not None:
        parts.append(f"replacements keep off the failed pod's node for {rule.exclude_node_seconds}s")
    return parts
