"""Hang detection (issue 28; docs/semantics.md, "24. Hangs"): the pure decision.

``aitj.core.planner.hang`` as table tests (the read cadence, the log reading, the clock and the
verdict), then whole passes of the planner: a silent watched pod is a ``hang`` Failure that an
``exceptionalEvent: hang`` rule restarts with its scope, that no rule leaves to failPolicy, and
that the planner's memo does not hide.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import pytest

from aitj.cli.explain_text import render
from aitj.core.api import JobStatus, Phase, Progress, RestartScope
from aitj.core.explain import explain
from aitj.core.observed import PodView, ProgressSeen
from aitj.core.planner import hang, plan
from aitj.core.planner.memo import Memo
from aitj.core.policy import FailureKind
from aitj.core.stepmatch import compile_step_pattern
from aitj.core.wire import format_time
from tests.unit.builders import (
    Pod,
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


def job_with(progress: Progress | None = None, *, hang_rule: RestartScope | None = RestartScope.ALL) -> Any:
    """job_with: the seed with spec.progress watching the launcher, its launcher restarting a
    hang with ``hang_rule``'s scope (None: no hang rule), Running since the pods ran."""
    rules = launcher().rules + ((event_rule("hang", hang_rule),) if hang_rule is not None else ())
    job = seed_job(trainer(), launcher(rules=rules), progress=progress or Progress("launcher", STALL))
    return with_status(job, running_status(job, running_seed()))


def watched(seen: ProgressSeen | None, pods: list[PodView] | None = None) -> list[PodView]:
    """watched: the seed's running pods, the launcher's view carrying ``seen``."""
    pods = pods or views(running_seed())
    return [dataclasses.replace(p, progress=seen) if p.replica == "launcher" else p for p in pods]


def launcher_view(seen: ProgressSeen | None) -> PodView:
    return next(p for p in watched(seen) if p.replica == "launcher")


# --- the read cadence and the log --------------------------------------------------------------


@pytest.mark.parametrize(
    ("stall", "period"),
    [(10, 1.0), (20, 1.0), (60, 3.0), (600, 30.0), (1200, 60.0), (86_400, 60.0)],
)
def test_the_log_is_read_twenty_times_per_stall_within_1_to_60_seconds(stall: int, period: float) -> None:
    assert hang.poll_seconds(stall) == period


T = "2022-01-14T09:02:%02d.123456789Z"
LOG = "\n".join([T % 1 + " epoch 1 step 10 loss 0.5", T % 2 + " checkpoint saved", T % 3 + " warning: slow"])


@pytest.mark.parametrize(
    ("text", "pattern", "second"),
    [
        (LOG, None, 3),  # any line: the newest
        (LOG, r"step \d+", 1),  # only step lines
        (LOG, r"^checkpoint", 2),  # searched in the line, after the timestamp
        (LOG, r"nothing like this", None),
        ("", None, None),  # an empty log
        ("not a timestamp line\n", None, None),  # unreadable stamps are skipped
        (LOG + "\n", None, 3),  # a trailing newline
    ],
)
def test_the_newest_progress_line_is_read_from_the_kubelets_timestamps(
    text: str, pattern: str | None, second: int | None
) -> None:
    found = hang.newest_line(text, compile_step_pattern(pattern) if pattern else None)
    if second is None:
        assert found is None
    else:
        assert found is not None and found.second == second and found.microsecond == 123456


# --- the clock ---------------------------------------------------------------------------------


def test_the_clock_starts_at_the_latest_of_the_pods_start_the_running_transition_and_the_job_pods() -> None:
    job = job_with()
    pod = launcher_view(None)
    running_since = job.status.current_condition()
    assert running_since is not None
    start = hang.clock_start(job, pod, None)
    assert start is not None and start >= pod.running_since  # type: ignore[operator]
    # A replacement that started later (a degraded spell ended, a restart's new pod) moves it.
    assert hang.clock_start(job, pod, at(500)) == at(500)


def status_with(job: Any, **changes: Any) -> Any:
    return with_status(job, dataclasses.replace(job.status, **changes))


@pytest.mark.parametrize(
    ("why", "edit"),
    [
        ("Pending", lambda j: status_with(j, phase=Phase.PENDING)),
        ("Creating", lambda j: status_with(j, phase=Phase.CREATING)),
        ("Restarting", lambda j: status_with(j, phase=Phase.RESTARTING)),
        ("Scaling", lambda j: status_with(j, phase=Phase.SCALING)),
        ("Suspended", lambda j: status_with(j, phase=Phase.SUSPENDED)),
        ("suspend set", lambda j: dataclasses.replace(j, spec=dataclasses.replace(j.spec, suspend=True))),
        (
            "degraded",
            lambda j: with_status(j, {**j.status.to_json(), "degraded": {"since": format_time(at(20))}}),
        ),
    ],
)
def test_the_clock_does_not_run_while_the_job_is_not_running_with_all_its_pods(why: str, edit: Any) -> None:
    job = edit(job_with())
    seen = ProgressSeen(at(2), at(10_000))  # silent for hours
    assert hang.clock_start(job, launcher_view(seen), None) is None, why
    assert hang.hung(job, launcher(), 0, launcher_view(seen), None) is None, why


def test_the_clock_does_not_run_before_the_watched_pod_runs() -> None:
    job = job_with()
    pending = dataclasses.replace(Pod("launcher", 0).view(), progress=ProgressSeen(None, at(10_000)))
    assert hang.clock_start(job, pending, None) is None
    assert hang.hung(job, launcher(), 0, pending, None) is None


# --- the verdict -------------------------------------------------------------------------------


def clock(job: Any) -> datetime:
    start = hang.clock_start(job, launcher_view(None), None)
    assert start is not None
    return start


@pytest.mark.parametrize(
    ("line", "checked", "silent"),
    [
        (None, STALL - 1, None),  # no line since the clock started, not yet stallSeconds
        (None, STALL, STALL),  # none for exactly stallSeconds: a hang
        (100, 100 + STALL - 0.5, None),  # the last line was recent enough
        (100, 100 + STALL + 3, STALL + 3),
        (-1000, STALL + 1, STALL + 1),  # a line from before the clock started counts from the start
    ],
)
def test_a_hang_is_stallseconds_without_a_progress_line_by_the_last_read(
    line: float | None, checked: float, silent: float | None
) -> None:
    job = job_with()
    start = clock(job)
    line_at = None if line is None else start + (at(line) - at(0))
    seen = ProgressSeen(line_at, start + (at(checked) - at(0)))
    failure = hang.hung(job, launcher(), 0, launcher_view(seen), None)
    if silent is None:
        assert failure is None
        return
    assert failure is not None and failure.kind is FailureKind.HANG
    assert failure.description == f"hang: no progress line for {int(silent)} s (stallSeconds {STALL})"
    assert failure.at == (line_at if line_at is not None and line_at > start else start)


def test_a_pod_never_read_or_not_watched_is_never_a_hang() -> None:
    job = job_with()
    late = ProgressSeen(None, at(10_000))
    assert hang.hung(job, launcher(), 0, launcher_view(None), None) is None  # never read
    trainer0 = dataclasses.replace(views(running_seed())[0], progress=late)
    assert hang.hung(job, trainer(), 0, trainer0, None) is None  # another replica
    assert hang.hung(job, launcher(), 1, launcher_view(late), None) is None  # another index
    plain = with_status(seed_job(), job.status.to_json())
    assert hang.hung(plain, launcher(), 0, launcher_view(late), None) is None  # no spec.progress


def test_a_step_pattern_says_so_in_the_verdict() -> None:
    job = job_with(Progress("launcher", STALL, step_pattern=r"step \d+"))
    failure = hang.hung(job, launcher(), 0, launcher_view(ProgressSeen(None, at(10_000))), None)
    assert failure is not None and failure.description.startswith("hang: no line matching stepPattern for ")


# --- whole passes ------------------------------------------------------------------------------


def silent_pass(job: Any, memo: Memo | None = None) -> Any:
    start = clock(job)
    seen = ProgressSeen(start, start + (at(STALL + 5) - at(0)))
    return plan(job, watched(seen), nodes(), seen.checked_at, memo=memo)


@pytest.mark.parametrize("scope", [RestartScope.POD, RestartScope.REPLICA, RestartScope.ALL])
def test_a_hang_rule_restarts_with_its_scope_and_says_why(scope: RestartScope) -> None:
    job = job_with(hang_rule=scope)
    result = silent_pass(job)
    assert len(result.restarts) == 1
    r = result.restarts[0]
    assert (r.replica, r.index, r.scope) == ("launcher", 0, scope)
    assert r.failure.kind is FailureKind.HANG and r.failure.at == clock(job)
    assert r.rule == "exceptionalEvent hang"
    events = [e for e in result.restart_events if "hang" in e.message]
    assert events and f"hang: no progress line for {STALL + 5} s (stallSeconds {STALL})" in events[0].message
    deleted = {d.name for d in result.deletes}
    expected = {"launcher": 1, "trainer": 0}[r.replica] if scope is RestartScope.POD else None
    if expected is not None:
        assert any("launcher" in name for name in deleted) and not any("trainer" in n for n in deleted)
    if scope is RestartScope.ALL:
        assert any("trainer" in name for name in deleted)


def test_a_hang_that_no_rule_restarts_fails_the_replica_by_its_failpolicy() -> None:
    job = job_with(hang_rule=None)
    result = silent_pass(job)
    assert not result.restarts
    assert result.outcome is not None and result.outcome.phase is Phase.FAILED
    assert "hang" in result.outcome.message


def test_a_fresh_line_restarts_nothing() -> None:
    job = job_with()
    start = clock(job)
    seen = ProgressSeen(start + (at(100) - at(0)), start + (at(100 + STALL - 1) - at(0)))
    result = plan(job, watched(seen), nodes(), seen.checked_at)
    assert not result.restarts and result.outcome is None


def test_the_memo_does_not_hide_a_hang_read_after_a_quiet_pass() -> None:
    """The monitor hands a new view at each read: the memo redoes the watched slot."""
    job = job_with()
    memo = Memo()
    start = clock(job)
    fresh = ProgressSeen(start, start + (at(1) - at(0)))
    first = plan(job, watched(fresh), nodes(), fresh.checked_at, memo=memo)
    assert not first.restarts
    job = with_status(job, first.status.to_json()) if first.status is not None else job
    assert silent_pass(job, memo).restarts


def test_the_seed_without_progress_is_unchanged() -> None:
    """A job that does not opt in: the same plan, whatever the launcher's view would carry."""
    job = with_status(seed_job(), running_status(seed_job(), running_seed()))
    seen = ProgressSeen(None, at(10_000))
    assert plan(job, watched(seen), nodes(), at(10_000)) == plan(job, watched(None), nodes(), at(10_000))


def test_the_job_status_type_is_untouched() -> None:
    assert "progress" not in {f.name for f in dataclasses.fields(JobStatus)}


def test_aitj_explain_says_hang_and_the_rule_that_restarts_it() -> None:
    """``aitj explain`` given the pods as the operator sees them (the watched view carrying
    what was read) shows the verdict in the words of the status and the Event."""
    job = job_with()
    start = clock(job)
    seen = ProgressSeen(start, start + (at(STALL + 5) - at(0)))
    text = "\n".join(render(explain(job, watched(seen), nodes(), seen.checked_at)))
    assert f"hang: no progress line for {STALL + 5} s (stallSeconds {STALL})" in text
    assert "exceptionalEvent hang" in text
