"""What the restart ledger keeps per rule and per node (issue 15): rule budgets, backoff, exclusions.

Pure. Part of the restart ledger (aitj.core.planner.ledger), with its properties: every pod the
operator creates carries it, the job status carries it, and merging is idempotent and
order-free, so budgets and backoffs are exact across operator crashes like RestartCount.

- ``RuleHistory``: what one faultTolerantPolicy rule did to one index: the last failed
  generation it restarted, how many restarts (for the job's life), how many failures in a row
  (the backoff's streak), when the last restart was decided, and the times of the recent ones
  (for budgets over windows).
- ``Exclusion``: a node a replacement of one index keeps off, until when, and why.

A rule is known by its text (``policy.rule_text``: ``exitCodes 101``), which survives edits of
the other rules; two rules of one replica with the same text share their history.

What is kept per rule is bounded (issue 24, section 4): a life budget is a count; a budget over
a window keeps the time of each restart in the window, because that is what tells exactly when
one frees, and admission bounds such a restartLimit to ``MAX_WINDOW_RESTARTS``
(aitj.core.api). So no history needs more than ``MAX_WINDOW_RESTARTS`` times, and none keeps
more: merging and reading keep the newest ones (``_newest``), whatever a stamp or a status says.
The budget stays exact, and a rule's history stays under about 35 KB.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aitj.core.api import MAX_WINDOW_RESTARTS
from aitj.core.wire import as_int, format_time, mapping, parse_time

RuleKey = tuple[int, str]  # (index, rule text)
NodeKey = tuple[int, str]  # (index, node name)


@dataclass(frozen=True)
class RuleHistory:
    """RuleHistory: what one rule did to one index. ``failed``: the generation of the last
    failure it restarted (-1: none); ``count``: its restarts of the index for the job's life;
    ``streak``: failures in a row by it, each after less than the backoff's resetAfterSeconds of
    running (what the next wait doubles from); ``last``: when the restart of ``failed`` was
    decided (None: unknown, e.g. written without a time: no wait is derived from it);
    ``times``: (failed generation, time) of its recent restarts, for windows (pruned by
    aitj.core.planner.rule_budgets). (failed, count, streak, last) move together, like a
    restart's count in IndexHistory."""

    failed: int = -1
    count: int = 0
    streak: int = 0
    last: datetime | None = None
    times: tuple[tuple[int, datetime], ...] = ()

    def merge(self, other: RuleHistory) -> RuleHistory:
        """merge: the newer head, and the union of the times (by generation)."""
        head = max(self, other, key=lambda h: (h.failed, h.count, h.streak))
        times = dict(self.times)
        for generation, time in other.times:
            times[generation] = min(times.get(generation, time), time)
        return RuleHistory(head.failed, head.count, head.streak, head.last, _newest(times.items()))


def _newest(times: Iterable[tuple[int, datetime]]) -> tuple[tuple[int, datetime], ...]:
    """_newest: the restart times, by generation, at most the newest MAX_WINDOW_RESTARTS of them
    (the most any window budget can need: a larger restartLimit with a window is refused)."""
    return tuple(sorted(times))[-MAX_WINDOW_RESTARTS:]


@dataclass(frozen=True)
class Exclusion:
    """Exclusion: replacements of one index keep off ``node`` until ``until``, because a pod of
    the index failed there (``reason``, the failure's cause) and ``rule`` says so."""

    node: str
    until: datetime
    rule: str
    reason: str

    def merge(self, other: Exclusion) -> Exclusion:
        """merge: the later expiry wins."""
        return max(self, other, key=lambda e: (e.until, e.rule, e.reason))


def merge_rules(
    groups: Iterable[Iterable[tuple[RuleKey, RuleHistory]]],
) -> tuple[tuple[RuleKey, RuleHistory], ...]:
    """merge_rules: the per-key merge of rule histories, sorted by key."""
    out: dict[RuleKey, RuleHistory] = {}
    for group in groups:
        for key, h in group:
            out[key] = out[key].merge(h) if key in out else h
    return tuple(sorted(out.items()))


def merge_excluded(
    groups: Iterable[Iterable[tuple[NodeKey, Exclusion]]],
) -> tuple[tuple[NodeKey, Exclusion], ...]:
    """merge_excluded: the per-key merge of exclusions, sorted by key."""
    out: dict[NodeKey, Exclusion] = {}
    for group in groups:
        for key, e in group:
            out[key] = out[key].merge(e) if key in out else e
    return tuple(sorted(out.items()))


def precise_time(value: datetime) -> str:
    """precise_time: RFC 3339 in UTC with milliseconds. A backoff of 2 s cannot be timed from
    whole seconds (format_time), which would end it up to a second early."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def rules_to_json(rules: Iterable[tuple[RuleKey, RuleHistory]]) -> dict[str, Any]:
    """rules_to_json: ``{"0": {"exitCodes 101": {"failed": 2, "count": 3, "streak": 2,
    "last": "...", "times": {"2": "..."}}}}`` (times: failed generation -> time)."""
    out: dict[str, Any] = {}
    for (index, rule), h in rules:
        entry: dict[str, Any] = {"failed": h.failed, "count": h.count, "streak": h.streak}
        if h.last is not None:
            entry["last"] = precise_time(h.last)
        if h.times:
            entry["times"] = {str(g): precise_time(t) for g, t in h.times}
        out.setdefault(str(index), {})[rule] = entry
    return out


def rules_from_json(value: object) -> tuple[tuple[RuleKey, RuleHistory], ...]:
    """rules_from_json reads ``rules_to_json``'s form; anything unreadable is skipped (a time
    that does not parse is dropped: such a restart counts for the life budget only)."""
    out: list[tuple[RuleKey, RuleHistory]] = []
    for key, by_rule in mapping(value).items():
        index = as_int(key)
        if index is None or index < 0:
            continue
        for rule, raw in mapping(by_rule).items():
            e = mapping(raw)
            failed, count, streak = (
                as_int(e.get("failed")),
                as_int(e.get("count")),
                as_int(e.get("streak"), 0),
            )
            if failed is None or count is None or count < 0:
                continue
            times = []
            for generation, time in mapping(e.get("times")).items():
                g, t = as_int(generation), parse_time(time)
                if g is not None and t is not None:
                    times.append((g, t))
            history = RuleHistory(
                failed, count, max(streak or 0, 0), parse_time(e.get("last")), _newest(times)
            )
            out.append(((index, str(rule)), history))
    return tuple(sorted(out))


def excluded_to_json(excluded: Iterable[tuple[NodeKey, Exclusion]]) -> dict[str, Any]:
    """excluded_to_json: ``{"0": {"node-a": {"until": "...", "rule": "...", "reason": "..."}}}``."""
    out: dict[str, Any] = {}
    for (index, node), e in excluded:
        out.setdefault(str(index), {})[node] = {
            "until": format_time(e.until),
            "rule": e.rule,
            "reason": e.reason,
        }
    return out


def excluded_from_json(value: object) -> tuple[tuple[NodeKey, Exclusion], ...]:
    """excluded_from_json reads ``excluded_to_json``'s form; anything unreadable is skipped."""
    out: list[tuple[NodeKey, Exclusion]] = []
    for key, by_node in mapping(value).items():
        index = as_int(key)
        if index is None or index < 0:
            continue
        for node, raw in mapping(by_node).items():
            e: Mapping[str, Any] = mapping(raw)
            until = parse_time(e.get("until"))
            if until is not None:
                out.append(
                    (
                        (index, str(node)),
                        Exclusion(str(node), until, str(e.get("rule", "")), str(e.get("reason", ""))),
                    )
                )
    return tuple(sorted(out, key=lambda item: item[0]))
