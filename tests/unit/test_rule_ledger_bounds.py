"""What the restart ledger keeps per rule is bounded, and budgets stay exact (issue 24, section 4).

A budget over a window needs the time of each restart in it; admission bounds such a
restartLimit to MAX_WINDOW_RESTARTS, and no rule history keeps more times than that, whatever
a stamp or a status holds. A life budget is a count, whatever its restartLimit. The property
test checks, against a plain list of every restart, that the budget read from the ledger (pruned
and carried through its wire form after each restart, as a pass does) is exact."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core.api import MAX_WINDOW_RESTARTS, FaultTolerantRule, InvalidJob, parse_job
from aitj.core.planner import rule_budgets
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.rulelog import RuleHistory, rules_from_json, rules_to_json
from aitj.core.policy import Failure, FailureKind, rule_text
from tests.seeds import seed_job as seed_body
from tests.unit.builders import T0, at, exit_rule, seed_job, trainer

EXIT_101 = Failure(FailureKind.EXIT_CODE, "container exited with code 101", exit_code=101)


def with_rule(**fields: Any) -> dict[str, Any]:
    """with_rule: the seed manifest, the launcher's first rule given ``fields``."""
    doc = seed_body()
    doc["spec"]["replicaSpecs"]["launcher"]["faultTolerantPolicy"][0].update(fields)
    return doc


@pytest.mark.parametrize(
    ("fields", "accepted"),
    [
        pytest.param(
            {"restartLimit": MAX_WINDOW_RESTARTS, "restartWindowSeconds": 600}, True, id="1,000 in a window"
        ),
        pytest.param(
            {"restartLimit": MAX_WINDOW_RESTARTS + 1, "restartWindowSeconds": 600},
            False,
            id="1,001 in a window",
        ),
        pytest.param({"restartLimit": 100_000}, True, id="a life budget of any size: a count is kept"),
    ],
)
def test_a_window_budget_is_admitted_up_to_what_the_ledger_keeps(
    fields: dict[str, Any], accepted: bool
) -> None:
    if accepted:
        parse_job(with_rule(**fields))
        return
    with pytest.raises(InvalidJob) as refused:
        parse_job(with_rule(**fields))
    assert "spec.replicaSpecs.launcher.faultTolerantPolicy[0].restartLimit" in str(refused.value)
    assert f"restartLimit must be at most {MAX_WINDOW_RESTARTS}" in str(refused.value)


def history_of(n: int) -> RuleHistory:
    """history_of: a rule that restarted one index ``n`` times, one second apart."""
    return RuleHistory(n - 1, n, 1, at(n), tuple((g, at(g + 1)) for g in range(n)))


def test_a_rule_history_read_from_a_stamp_or_a_status_keeps_the_newest_times_only() -> None:
    wire = rules_to_json((((0, "exitCodes 101"), history_of(5_000)),))
    ((_, read),) = rules_from_json(json.loads(json.dumps(wire)))
    assert len(read.times) == MAX_WINDOW_RESTARTS
    assert read.times[0] == (4_000, at(4_001)) and read.times[-1] == (4_999, at(5_000))
    assert read.count == 5_000  # the life count is a number: nothing of it is lost


def test_merging_two_histories_keeps_the_newest_times_only() -> None:
    old, new = (
        history_of(800),
        RuleHistory(1_599, 1_600, 1, at(1_600), tuple((g, at(g + 1)) for g in range(800, 1_600))),
    )
    merged = old.merge(new)
    assert len(merged.times) == MAX_WINDOW_RESTARTS and merged.times[-1] == (1_599, at(1_600))
    assert merged.count == 1_600


def windowed(limit: int, window: int) -> FaultTolerantRule:
    return replace(exit_rule("101"), restart_limit=limit, restart_window=window)


def replay(rule: FaultTolerantRule, gaps: list[tuple[int, float]]) -> None:
    """replay: restarts of the indices and at the gaps drawn, each allowed only while the budget
    has room (as the planner does); after each, the ledger is pruned and read back from its wire
    form. The budget read from the ledger must be the one a list of every restart gives."""
    job = seed_job(trainer(replicas=8, rules=(rule,)))
    window = timedelta(seconds=rule.restart_window or 0)
    ledger, now, generations = Ledger(), T0, [0] * 8
    every: list[datetime] = []  # the time of every restart made
    text = rule_text(rule)
    for index, gap in gaps:
        now += timedelta(seconds=gap)
        history = ledger.replica("trainer")
        b = rule_budgets.budget(rule, history, now)
        in_window = sorted(t for t in every if t > now - window)
        assert b is not None and b.used == len(in_window)
        frees = in_window[b.used - b.limit] + window if b.used >= b.limit else None
        assert b.frees_at == frees
        if b.left == 0:
            continue
        after, _ = rule_budgets.restarted(rule, history, index, generations[index], None, EXIT_101, now)
        assert after is not None
        ledger = ledger.with_rule("trainer", index, text, after)
        generations[index] += 1
        every.append(now)
        ledger = Ledger.from_json(rule_budgets.prune(job, ledger, now).to_json())
        kept = sum(len(h.times) for _, h in ledger.replica("trainer").rules)
        assert kept <= min(rule.restart_limit or 0, MAX_WINDOW_RESTARTS) * 8


@settings(max_examples=150, deadline=None)
@given(
    limit=st.integers(1, 12),
    window=st.integers(1, 120),
    # Whole milliseconds: the ledger keeps restart times to the millisecond (rulelog.precise_time).
    gaps=st.lists(
        st.tuples(st.integers(0, 7), st.integers(1, 60_000).map(lambda ms: ms / 1000)), max_size=80
    ),
)
def test_a_window_budget_read_from_the_ledger_is_exact(
    limit: int, window: int, gaps: list[tuple[int, float]]
) -> None:
    replay(windowed(limit, window), gaps)


def test_the_largest_window_budget_stays_exact_once_its_window_is_full() -> None:
    # One restart a second against 1,000 within 1,000 s: the window is always full or one short.
    replay(windowed(MAX_WINDOW_RESTARTS, 1_000), [(i % 8, 1.0) for i in range(1_100)])
