"""Goodput (issue 28; docs/semantics.md section 25, docs/metrics.md "Goodput"): the account of a
job's time from its status, table-tested; the fold that keeps it whole when the history drops
conditions; and the hold that keeps its counters from going back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from aitj.cli import goodput_view
from aitj.controller import collector
from aitj.core.api import MAX_STATUS_CONDITIONS, JobStatus, Phase
from aitj.core.planner.goodput import Account, BadputCause, account, fold
from aitj.core.planner.status import Condition, advance_conditions
from aitj.core.telemetry.goodput import held
from aitj.core.wire import format_time
from tests.unit.builders import at

F, H, R, S, ST = (
    BadputCause.FAULT,
    BadputCause.HANG,
    BadputCause.RECOVERY,
    BadputCause.SCALING,
    BadputCause.STARTING,
)


SCALE_IN = "trainingJob ns/job scalein Operation scalein scale num 2 scale pods [a b], replicas name trainer"


def status(
    phases: Sequence[tuple[Any, ...]], restarts: Sequence[tuple[str, float | None, float]] = ()
) -> JobStatus:
    """status: a history of (phase, began at) and restarts of (cause, failureTime, time)."""
    conditions = [
        {
            "type": p[0],
            "status": "True" if i == len(phases) - 1 else "False",
            "lastTransitionTime": format_time(at(p[1])),
            "message": p[2] if len(p) > 2 else "",
        }
        for i, p in enumerate(phases)
    ]
    entries: list[dict[str, Any]] = []
    for cause, fault, decided in restarts:
        entry = {"cause": cause, "time": format_time(at(decided))}
        if fault is not None:
            entry["failureTime"] = format_time(at(fault))
        entries.append(entry)
    return JobStatus.from_json({"conditions": conditions, "restarts": entries})


def bad(**seconds: float) -> dict[BadputCause, float]:
    out = dict.fromkeys(BadputCause, 0.0)
    out.update({BadputCause(k): v for k, v in seconds.items()})
    return out


CASES = [
    pytest.param([("Pending", 0), ("Creating", 10)], [], 100, 0, bad(), id="never ran: nothing is counted"),
    pytest.param(
        [("Pending", 0), ("Creating", 10), ("Running", 20)],
        [],
        100,
        80,
        bad(),
        id="the wait to first run is not lost",
    ),
    pytest.param(
        [("Running", 0), ("Restarting", 50), ("Running", 60)],
        [("exitCode 137", 45, 50)],
        100,
        85,
        bad(fault=5, recovery=10),
        id="a fault: detection, then recovery",
    ),
    pytest.param(
        [("Running", 0), ("Restarting", 50), ("Running", 60)],
        [("hang", 20, 50)],
        100,
        60,
        bad(hang=30, recovery=10),
        id="a hang counts from the last progress",
    ),
    pytest.param(
        [("Running", 0), ("Restarting", 50), ("Running", 60)],
        [("nodeNotReady", None, 50)],
        100,
        90,
        bad(recovery=10),
        id="a fault without its own time counts from the decision",
    ),
    pytest.param(
        [("Running", 0), ("Restarting", 50), ("Running", 70)],
        [("exitCode 1", 40, 50), ("PodForceDeleted", 45, 50), ("exitCode 1", 55, 60)],
        100,
        70,
        bad(fault=10, recovery=20),
        id="overlapping faults count once, and not inside Restarting",
    ),
    pytest.param(
        [("Running", 0), ("Scaling", 30), ("Running", 40)],
        [],
        100,
        90,
        bad(scaling=10),
        id="a scale-out",
    ),
    pytest.param(
        [("Running", 0), ("Scaling", 30, SCALE_IN), ("Running", 40)],
        [("PodEvicted", 33, 35)],
        100,
        98,
        bad(fault=2),
        id="a scale-in trains on",
    ),
    pytest.param(
        [("Running", 0), ("Suspended", 30), ("Pending", 60), ("Creating", 65), ("Running", 70)],
        [],
        100,
        60,
        bad(starting=10),
        id="suspended is not counted; the resume's start is",
    ),
    pytest.param(
        [("Running", 0), ("Succeeded", 50)], [], 500, 50, bad(), id="nothing after the job finished"
    ),
]


@pytest.mark.parametrize(("phases", "restarts", "now", "training", "badput"), CASES)
def test_the_account_of_a_job_s_time(
    phases: list[tuple[str, float]],
    restarts: list[tuple[str, float | None, float]],
    now: float,
    training: float,
    badput: dict[BadputCause, float],
) -> None:
    got = account(status(phases, restarts), at(now))
    assert (got.training, dict(got.badput)) == (training, badput)
    total = training + sum(badput.values())
    assert got.ratio == (training / total if total else None)


def test_the_ratio_of_a_chaos_like_history() -> None:
    got = account(
        status([("Running", 0), ("Restarting", 90), ("Running", 100)], [("exitCode 1", 88, 90)]), at(200)
    )
    assert got.ratio == pytest.approx(188 / 200)


def history_of(transitions: int) -> list[tuple[Phase, float]]:
    """history_of: Running and Restarting in turn, 10 s apart, with Scaling every 7th."""
    out: list[tuple[Phase, float]] = [(Phase.RUNNING, 0)]
    for i in range(1, transitions):
        phase = Phase.SCALING if i % 7 == 0 else (Phase.RESTARTING if i % 2 else Phase.RUNNING)
        if phase is out[-1][0]:
            phase = Phase.RUNNING if phase is not Phase.RUNNING else Phase.RESTARTING
        out.append((phase, 10.0 * i + (i % 3)))
    return out


def test_folding_dropped_conditions_keeps_the_account_whole_at_every_step() -> None:
    """The history keeps MAX_STATUS_CONDITIONS; with the fold, the account of the trimmed status
    equals the account of the whole history, before and long after the first drop."""
    whole: list[tuple[Phase, float]] = []
    current = JobStatus()
    for phase, t in history_of(3 * MAX_STATUS_CONDITIONS):
        whole.append((phase, t))
        conditions = advance_conditions(
            current.conditions or (), Condition(phase, "R", "m"), format_time(at(t))
        )
        current = current.updated(conditions=conditions, goodput=fold(current, conditions))
        reference = account(status([(p.value, s) for p, s in whole]), at(t + 5))
        got = account(current, at(t + 5))
        assert got.training == pytest.approx(reference.training, abs=1e-3)
        for cause in BadputCause:
            assert got.badput[cause] == pytest.approx(reference.badput[cause], abs=1e-3), (cause, t)
    assert len(current.conditions or ()) == MAX_STATUS_CONDITIONS and current.goodput is not None


def test_no_fold_while_nothing_is_dropped() -> None:
    prev = status([("Running", 0), ("Restarting", 10)])
    assert fold(prev, prev.conditions or ()) is None


@pytest.mark.parametrize(
    ("last", "now", "expected"),
    [
        (None, Account(5, bad(fault=1)), Account(5, bad(fault=1))),
        (Account(10, bad()), Account(8, bad(fault=2)), Account(10, bad(fault=2))),  # a late fault
        (Account(10, bad(fault=2)), Account(13, bad(fault=2)), Account(13, bad(fault=2))),
    ],
)
def test_the_exported_counters_never_go_back(last: Account | None, now: Account, expected: Account) -> None:
    got = held(last, now)
    assert (got.training, dict(got.badput)) == (expected.training, dict(expected.badput))


def test_every_cause_has_a_value_and_the_causes_are_the_documented_ones() -> None:
    assert [c.value for c in BadputCause] == ["fault", "hang", "recovery", "scaling", "starting"]
    assert {F, H, R, S, ST} == set(BadputCause)


def test_aitj_describe_says_the_goodput_and_the_restarts_by_class() -> None:
    body = {
        "status": {
            **status(
                [("Running", 0), ("Restarting", 90), ("Running", 100)], [("nodeNotReady", 88, 90)]
            ).to_json(),
            "totalRestarts": 3,
            "infrastructureRestarts": {"trainer": 1},
        }
    }
    assert goodput_view.goodput_line(body, at(200)) == (
        "goodput 94.0% since it first ran: training 188s; lost fault 2s, recovery 10s "
        "(what the operator sees: not the work redone since a checkpoint)"
    )
    assert goodput_view.restart_split(body) == {"total": 3, "infrastructure": 1, "application": 2}
    assert goodput_view.goodput({"status": {}}, at(200)) is None
    assert goodput_view.goodput_line({}, at(200)) == "goodput: the job has not run yet"


class LateFault:
    """LateFault: a cache source of one job Running since 0; ``late`` adds a restart whose fault
    happened at 50 (the operator learned of it after a scrape counted those seconds)."""

    def __init__(self) -> None:
        self.late = False

    def jobs(self) -> list[tuple[tuple[str, str], dict[str, Any]]]:
        phases = [("Running", 0), ("Restarting", 100)] if self.late else [("Running", 0)]
        body = {
            "metadata": {"uid": "u"},
            "status": status(phases, [("exitCode 1", 50, 100)] if self.late else []).to_json(),
        }
        return [(("ns", "job"), body)]

    def pods(self, key: tuple[str, str]) -> list[Any]:
        return []


def test_the_collector_exports_the_goodput_and_holds_its_counters() -> None:
    source = LateFault()
    scraper = collector.CacheCollector(source)

    def scrape() -> dict[str, float]:
        found = {f.name: f for f in scraper.collect()}
        out = {"ratio": found["aitj_job_goodput_ratio"].samples[0].value}
        out["training"] = found["aitj_job_training_seconds"].samples[0].value
        out.update({s.labels["cause"]: s.value for s in found["aitj_job_badput_seconds"].samples})
        return out

    first = scrape()
    assert first["ratio"] == 1.0 and first["training"] > 100 and first["fault"] == 0
    source.late = True
    second = scrape()
    assert second["fault"] == 50 and second["recovery"] > 0  # the late fault counts at once
    assert second["training"] == first["training"]  # and training holds still: never back
    assert second["ratio"] < 0.5  # the ratio is the account's own
