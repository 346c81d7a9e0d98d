"""Recovery rules (issue 15): rule budgets over windows, backoff, and keeping replacements off bad nodes.

Pure and clock-free: every function is given ``now``. What a rule did is in the restart ledger
(aitj.core.planner.rulelog, exact across operator crashes); this module reads it:

- ``budget`` / ``spent``: a rule's restartLimit per replica within restartWindowSeconds (the
  job's life when unset). A rule whose budget is used up does not match (``policy.decide``).
- ``restarted``: what a restart by a rule adds to the ledger: its history (count, streak, time)
  and, with excludeNodeSeconds, the failed pod's node as an exclusion.
- ``hold``: a replacement that waits out its rule's backoff (a Shortfall, until the wait ends).
- ``avoid`` / ``exclusion_shortfall``: the nodes an index keeps off, as the pod's
  anti-affinity and a Shortfall when the replacement cannot be placed elsewhere; ``outlived``:
  such a replacement, once its exclusions have expired, is replaced by one without them.
- ``prune``: drops what no budget or exclusion needs any more, so the ledger stays small.

What the rules show in a pass (``status.excludedNodes``, the Event of a budget used up, the
wake-ups when a hold or an exclusion ends) is aitj.core.planner.rule_status's part.

docs/semantics.md ("Rule budgets over windows", "Backoff", "Keeping replacements off bad
nodes") is the user-facing description.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from aitj.core.api import DEFAULT_BACKOFF_RESET_AFTER, FaultTolerantRule, Job, ReplicaSpec
from aitj.core.faultclass import exempt
from aitj.core.observed import PodView
from aitj.core.planner.ledger import Ledger, ReplicaHistory, pod_ledger
from aitj.core.planner.rulelog import Exclusion, RuleHistory
from aitj.core.planner.shortfall import Shortfall, ShortfallCause
from aitj.core.policy import Failure, rule_text
from aitj.core.wire import format_time


@dataclass(frozen=True)
class Budget:
    """Budget: a rule's restartLimit over the replica: ``used`` restarts counted (within
    ``window`` seconds of now, or for the job's life when None); ``frees_at``: when the window
    lets one more through, once used up (None: never, or not used up)."""

    rule: str
    limit: int
    window: int | None
    used: int
    frees_at: datetime | None

    @property
    def left(self) -> int:
        return max(self.limit - self.used, 0)

    @property
    def text(self) -> str:
        """text: ``restartLimit 2 within 600s: 2 used`` or ``... for the job's life: ...``."""
        span = f"within {self.window}s" if self.window is not None else "for the job's life"
        frees = f", one frees at {format_time(self.frees_at)}" if self.frees_at is not None else ""
        return f"restartLimit {self.limit} {span}: {self.used} used, {self.left} left{frees}"


def budget(rule: FaultTolerantRule, history: ReplicaHistory, now: datetime) -> Budget | None:
    """budget: the rule's budget over every index of the replica (None: the rule has no restartLimit)."""
    limit = rule.restart_limit
    if limit is None:
        return None
    text = rule_text(rule)
    mine = [h for (_, r), h in history.rules if r == text]
    window = rule.restart_window
    if window is None:
        return Budget(text, limit, None, sum(h.count for h in mine), None)
    start = now - timedelta(seconds=window)
    times = sorted(t for h in mine for _, t in h.times if t > start)
    used = len(times)
    frees = times[used - limit] + timedelta(seconds=window) if 0 < limit <= used else None
    return Budget(text, limit, window, used, frees)


def spent(replica: ReplicaSpec, history: ReplicaHistory, now: datetime) -> dict[int, Budget]:
    """spent: the replica's rules (by position) whose budget is used up."""
    out: dict[int, Budget] = {}
    for position, rule in enumerate(replica.rules):
        b = budget(rule, history, now)
        if b is not None and b.left == 0:
            out[position] = b
    return out


def ran_seconds(pod: PodView | None, failure: Failure, now: datetime) -> float:
    """ran_seconds: how long the index went without failing: from the failed pod's creation
    to its failure (0 if the pod is gone). Counted from the creation, not from the container's
    start, which a kubelet reports again when the container ends; a pod kept Pending counts."""
    if pod is None or pod.created is None:
        return 0.0
    return max(((failure.at or now) - pod.created).total_seconds(), 0.0)


def restarted(
    rule: FaultTolerantRule,
    history: ReplicaHistory,
    index: int,
    generation: int,
    pod: PodView | None,
    failure: Failure,
    now: datetime,
) -> tuple[RuleHistory | None, Exclusion | None]:
    """restarted: what a restart of ``index`` (failed ``generation``) by ``rule`` adds to the
    ledger: the rule's history of the index (one more restart; the streak goes on unless the
    pod ran resetAfterSeconds; None for a rule with neither restartLimit nor backoff, which
    needs none, so the seed's ledger stays as it was) and, with excludeNodeSeconds, the failed
    pod's node."""
    text = rule_text(rule)
    before = history.rule(index, text)
    reset_after = rule.backoff.reset_after if rule.backoff is not None else DEFAULT_BACKOFF_RESET_AFTER
    in_a_row = before.failed >= 0 and ran_seconds(pod, failure, now) < reset_after
    free = exempt(rule, failure.kind.event)  # infrastructureFaults: Exempt: off the budget (section 25)
    times = ((generation, now),) if rule.restart_window is not None and not free else ()
    after: RuleHistory | None = None
    if rule.restart_limit is not None or rule.backoff is not None:
        count = before.count if free else before.count + 1
        after = RuleHistory(generation, count, before.streak + 1 if in_a_row else 1, now, times)
    exclusion = None
    if rule.exclude_node_seconds is not None and pod is not None and pod.node_name:
        until = now + timedelta(seconds=rule.exclude_node_seconds)
        exclusion = Exclusion(pod.node_name, until, text, failure.cause)
    return after, exclusion


def hold(
    replica: ReplicaSpec, index: int, generation: int, history: ReplicaHistory, now: datetime
) -> Shortfall | None:
    """hold: the backoff the replacement ``generation`` of ``index`` waits out before it is
    created, as a Shortfall until the wait ends (None: it is created now). The wait follows the
    restart of the generation before, by a rule that has a backoff."""
    for text, h in history.rules_of(index).items():
        if h.failed != generation - 1 or h.last is None:
            continue
        rule = next((r for r in replica.rules if r.backoff is not None and rule_text(r) == text), None)
        if rule is None or rule.backoff is None:
            continue
        wait = rule.backoff.delay(h.streak)
        until = h.last + timedelta(seconds=wait)
        if now < until:
            message = (
                f"waiting {wait} s before recreating index {index} of replica {replica.name} "
                f"(rule {text}: failure {h.streak} in a row; backoff until {format_time(until)})"
            )
            return Shortfall(replica.name, index, ShortfallCause.BACKOFF, message, h.last, until)
    return None


def active(history: ReplicaHistory, index: int, now: datetime) -> tuple[Exclusion, ...]:
    """active: the exclusions of ``index`` that have not expired, by node."""
    return tuple(e for e in history.excluded_of(index) if e.until > now)


def avoid(history: ReplicaHistory, index: int, now: datetime) -> tuple[str, ...]:
    """avoid: the nodes a pod of ``index`` created now keeps off (its required anti-affinity)."""
    return tuple(e.node for e in active(history, index, now))


def exclusion_shortfall(
    replica: ReplicaSpec, index: int, pod: PodView, history: ReplicaHistory, now: datetime
) -> Shortfall | None:
    """exclusion_shortfall: the index's replacement waits Pending, the scheduler cannot place
    it, and the index keeps off nodes: the exclusion may be why (until it expires)."""
    excluded = active(history, index, now)
    if not excluded or pod.unschedulable is None or pod.running_since is not None or pod.phase != "Pending":
        return None
    nodes = " ".join(e.node for e in excluded)
    until = max(e.until for e in excluded)
    message = (
        f"pod {pod.name} waits Pending: it keeps off [{nodes}] (excludeNodeSeconds, until "
        f"{format_time(until)}) and the scheduler cannot place it elsewhere: {pod.unschedulable}"
    )
    return Shortfall(replica.name, index, ShortfallCause.NODE_EXCLUDED, message, pod.created or now, until)


def outlived(replica: ReplicaSpec, index: int, pod: PodView, now: datetime) -> bool:
    """outlived: ``pod`` cannot be scheduled, and every node it keeps off (the exclusions in
    force when it was created, from its own ledger stamp) is excluded no longer."""
    if pod.unschedulable is None or pod.created is None or pod.node_name:
        return False
    created = pod.created
    kept_off = [e for e in pod_ledger(pod).replica(replica.name).excluded_of(index) if e.until > created]
    return bool(kept_off) and all(e.until <= now for e in kept_off)


def prune(job: Job, ledger: Ledger, now: datetime) -> Ledger:
    """prune: the ledger without what nothing needs: restart times out of their rule's window
    (at most restartLimit of them per index), and expired exclusions."""
    for r in job.spec.replicas:
        history = ledger.replica(r.name)
        if not history.rules and not history.excluded:
            continue
        by_text = {rule_text(rule): rule for rule in r.rules}
        rules = tuple((key, replace(h, times=_kept(by_text.get(key[1]), h, now))) for key, h in history.rules)
        excluded = tuple((key, e) for key, e in history.excluded if e.until > now)
        if rules == history.rules and excluded == history.excluded:
            continue  # nothing out of its window: the same history (and what was found of it)
        ledger = ledger.replaced(r.name, history.same_indices(rules=rules, excluded=excluded))
    return ledger


def _kept(rule: FaultTolerantRule | None, h: RuleHistory, now: datetime) -> tuple[tuple[int, datetime], ...]:
    """_kept: the restart times a window still needs: within it, the newest restartLimit."""
    if rule is None or rule.restart_window is None or not rule.restart_limit:
        return ()
    start = now - timedelta(seconds=rule.restart_window)
    return tuple(item for item in h.times if item[1] > start)[-rule.restart_limit :]
