"""A hang that no rule restarts, on a replica whose failPolicy lets the job go on (issue 28,
docs/semantics.md section 24): the pod is left running, and the job says so once: its Running
condition names the hang, and one Warning Event HangNotRestarted; passes that read the same
silence again write nothing and send nothing. Through ``plan``, pass after pass, the status of
each fed back as the apiserver would."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aitj.core.api import FaultTolerantRule, Phase, Progress, RestartScope
from aitj.core.observed import PodView, ProgressSeen
from aitj.core.planner import hang, plan
from aitj.core.planner.memo import Memo
from aitj.core.planner.rule_status import EVENT_BUDGET_EXHAUSTED, EVENT_HANG_STANDS
from tests.unit.builders import (
    at,
    event_rule,
    launcher,
    nodes,
    running_seed,
    running_status,
    seed_job,
    trainer,
    views,
    with_status,
)

STALL = 60


def job(*rules: FaultTolerantRule) -> Any:
    """job: the seed watching trainer 0 (failPolicy None: a failure there does not end the job),
    with no rule that restarts a hang (or ``rules`` added to the trainer's)."""
    j = seed_job(trainer(rules=trainer().rules + rules), launcher(), progress=Progress("trainer", STALL))
    return with_status(j, running_status(j, running_seed()))


def pods(seen: ProgressSeen | None) -> list[PodView]:
    return [
        dataclasses.replace(p, progress=seen) if (p.replica, p.index) == ("trainer", 0) else p
        for p in views(running_seed())
    ]


def start(j: Any) -> Any:
    watched = next(p for p in pods(None) if (p.replica, p.index) == ("trainer", 0))
    begun = hang.clock_start(j, watched, None)
    assert begun is not None
    return begun


def read(j: Any, seconds: float, line: float | None = None) -> ProgressSeen:
    """read: a read of the log ``seconds`` after the clock started, its newest line at ``line``."""
    s = start(j)
    return ProgressSeen(None if line is None else s + (at(line) - at(0)), s + (at(seconds) - at(0)))


@pytest.mark.parametrize("memo", [False, True])
def test_a_hang_that_stands_is_said_once_and_its_pod_left_running(memo: bool) -> None:
    j, m = job(), Memo() if memo else None
    writes, events, messages = 0, [], list[str]()
    for k in range(20):  # ten minutes of silence, read every 30 s from 65 s on
        seen = read(j, STALL + 5 + 30 * k)
        result = plan(j, pods(seen), nodes(), seen.checked_at, memo=m)
        assert not result.restarts and result.outcome is None
        assert not result.deletes and not result.creates and not result.release
        events += [e for e in result.events if e.reason == EVENT_HANG_STANDS]
        if result.status is not None:
            writes += 1
            j = with_status(j, result.status.to_json())
            current = j.status.current_condition()
            messages.append(current.message or "" if current is not None else "")
    print(f"20 passes: {writes} status write(s), {len(events)} HangNotRestarted Event(s)")
    assert writes == 1 and len(events) == 1
    assert j.status.phase is Phase.RUNNING
    watched = next(p.name for p in pods(None) if (p.replica, p.index) == ("trainer", 0))
    said = f"hang of pod {watched}: no progress line since "
    assert said in messages[0] and f"(stallSeconds {STALL}), not restarted" in messages[0]
    assert "vacant" not in messages[0]  # the pod runs on: it is not an empty index
    assert said in events[0].message and events[0].type == "Warning"
    assert j.status.replica_statuses["trainer"].failed == 1


def test_a_failed_status_write_sends_the_same_named_event_again() -> None:
    j = job()
    seen = read(j, STALL + 5)
    first = plan(j, pods(seen), nodes(), seen.checked_at)
    seen = read(j, STALL + 35)
    again = plan(j, pods(seen), nodes(), seen.checked_at)  # the first status never landed
    names = [[e.name for e in r.events if e.reason == EVENT_HANG_STANDS] for r in (first, again)]
    assert names[0] == names[1] and len(names[0]) == 1 and again.status is not None


def test_a_hang_that_ends_by_itself_is_no_longer_said() -> None:
    j = job()
    seen = read(j, STALL + 5)
    result = plan(j, pods(seen), nodes(), seen.checked_at)
    assert result.status is not None
    j = with_status(j, result.status.to_json())
    seen = read(j, STALL + 40, line=STALL + 30)  # a progress line again
    result = plan(j, pods(seen), nodes(), seen.checked_at)
    assert result.status is not None and not any(e.reason == EVENT_HANG_STANDS for e in result.events)
    current = result.status.current_condition()
    assert current is not None and current.message == "all pods are running"


def test_a_hang_rule_whose_budget_ran_out_degrades_the_job_once() -> None:
    """The job is degraded for the watched index itself: that does not stop the hang clock, or
    the next pass would find no hang, end the spell, find it again: a write and Events each pass
    (it did before this was fixed)."""
    spent = dataclasses.replace(event_rule("hang", RestartScope.ALL), restart_limit=0)
    j = job(spent)
    begun = start(j)
    writes, reasons = 0, list[str]()
    for k in range(10):
        seen = ProgressSeen(None, begun + (at(STALL + 5 + 10 * k) - at(0)))
        result = plan(j, pods(seen), nodes(), seen.checked_at)
        assert not result.restarts and not result.deletes
        reasons += [e.reason for e in result.events]
        if result.status is not None:
            writes += 1
            j = with_status(j, result.status.to_json())
    print(f"10 passes: {writes} status write(s), Events {sorted(set(reasons))}")
    assert writes == 1 and reasons.count("Degraded") == 1 and "Recovered" not in reasons
    assert EVENT_HANG_STANDS not in reasons  # RuleBudgetExhausted says why (named: recorded once)
    assert set(reasons) == {EVENT_BUDGET_EXHAUSTED, "Degraded"}
    assert j.status.degraded is not None
    current = j.status.current_condition()
    assert current is not None and "hang of pod" in (current.message or "")
