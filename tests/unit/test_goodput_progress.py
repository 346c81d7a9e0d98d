"""Goodput with the progress signal (issue 28; docs/semantics.md section 25): the head of a Running
spell until its first progress line counts to the cause of the spell before it; the monitor's
in-memory facts (aitj.controller.progress); the counters that never go back nor count a second
twice; the collector that hands the facts to the account."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.controller import collector
from aitj.controller import progress as monitor
from aitj.core.api import JobStatus
from aitj.core.planner.goodput import Account, BadputCause, Resumption, account, running_spell
from aitj.core.telemetry.goodput import held
from tests.unit.builders import at, running_seed, views
from tests.unit.test_goodput import SCALE_IN, bad, status
from tests.unit.test_hang_monitor import KEY, Reads, line

NO_API: Any = None  # the log reads are a stand-in (Reads)
RECOVERED = [("Pending", 0), ("Creating", 10), ("Running", 20), ("Restarting", 50), ("Running", 60)]
FAULT = [("exitCode 137", 45, 50)]


def seen(watched: float, **lines: float) -> Resumption:
    """seen: watched since ``watched``; ``lines``: spell start ("s20") to its first line."""
    return Resumption(at(watched), {at(float(k[1:])): at(v) for k, v in lines.items()})


CASES = [
    pytest.param(
        RECOVERED, FAULT, None, 100, 65, bad(fault=5, recovery=10), id="no spec.progress: unchanged"
    ),
    pytest.param(
        RECOVERED,
        FAULT,
        seen(0, s20=20, s60=70),
        100,
        55,
        bad(fault=5, recovery=20),
        id="a line seen 10 s after",
    ),
    pytest.param(
        RECOVERED,
        FAULT,
        seen(0, s20=25, s60=70),
        100,
        50,
        bad(fault=5, recovery=20, starting=5),
        id="a start's too",
    ),
    pytest.param(
        RECOVERED,
        FAULT,
        seen(0, s20=20),
        100,
        25,
        bad(fault=5, recovery=50),
        id="no line yet: recovery to now",
    ),
    pytest.param(
        RECOVERED,
        FAULT,
        seen(30),
        100,
        25,
        bad(fault=5, recovery=50),
        id="watched from after the start: start unknown",
    ),
    pytest.param(
        RECOVERED,
        FAULT,
        seen(80),
        100,
        65,
        bad(fault=5, recovery=10),
        id="an operator restart: the status alone",
    ),
    pytest.param(
        RECOVERED,
        FAULT,
        seen(0, s20=20, s60=55),
        100,
        65,
        bad(fault=5, recovery=10),
        id="a line before: no head",
    ),
    pytest.param(
        [("Running", 0), ("Scaling", 30), ("Running", 40)],
        [],
        seen(0, s0=0, s40=46),
        100,
        84,
        bad(scaling=16),
        id="a scale-out's head",
    ),
    pytest.param(
        [("Running", 0), ("Scaling", 30, SCALE_IN), ("Running", 40)],
        [],
        seen(0, s0=0),
        100,
        100,
        bad(),
        id="a scale-in trains on: no head after it",
    ),
    pytest.param(
        [("Running", 0), ("Restarting", 50), ("Running", 60), ("Restarting", 80), ("Running", 90)],
        [("exitCode 1", 78, 80)],
        seen(0, s0=0, s90=95),
        100,
        55,
        bad(recovery=45),
        id="a spell that ended before any line: all recovery, its fault counted once",
    ),
    pytest.param(
        [("Running", 0), ("Restarting", 50), ("Running", 60)],
        [("hang", 30, 50)],
        seen(0, s0=0, s60=64),
        100,
        66,
        bad(hang=20, recovery=14),
        id="a hang's restart",
    ),
]


@pytest.mark.parametrize(("phases", "restarts", "resumed", "now", "training", "badput"), CASES)
def test_the_head_of_a_running_spell_counts_to_the_cause_before_it(
    phases: list[tuple[Any, ...]],
    restarts: list[tuple[str, float | None, float]],
    resumed: Resumption | None,
    now: float,
    training: float,
    badput: dict[BadputCause, float],
) -> None:
    got = account(status(phases, restarts), at(now), resumed)
    assert (got.training, dict(got.badput)) == (training, badput)
    plain = account(status(phases, restarts), at(now))
    assert got.total == plain.total  # the signal moves seconds, never adds or drops any


def test_the_running_spell_is_the_current_one_a_scale_in_s_included() -> None:
    assert running_spell(status(RECOVERED)) == at(60)
    assert running_spell(status([("Running", 0), ("Scaling", 30, SCALE_IN)])) == at(30)
    assert running_spell(status([("Running", 0), ("Restarting", 30)])) is None
    assert running_spell(status([("Running", 0), ("Succeeded", 30)])) is None


@pytest.mark.parametrize(
    ("last", "now", "expected"),
    [
        # No line yet: exported as recovery; then the line's earlier time is read: the recovery
        # holds, and training waits until the counters' total is the time accounted.
        (Account(10, bad(recovery=8)), Account(12, bad(recovery=6)), Account(10, bad(recovery=8))),
        (Account(10, bad(recovery=8)), Account(20, bad(recovery=6)), Account(18, bad(recovery=8))),
        # Training exported before the monitor knew of the spell; then no line yet: the seconds
        # go to recovery at once, never taken back from training.
        (Account(30, bad()), Account(20, bad(recovery=10)), Account(30, bad(recovery=10))),
    ],
)
def test_the_counters_never_go_back_nor_count_a_second_twice(
    last: Account, now: Account, expected: Account
) -> None:
    got = held(last, now)
    assert (got.training, dict(got.badput)) == (expected.training, dict(expected.badput))


def test_the_monitor_keeps_the_first_line_after_each_transition_to_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pods = views(running_seed())
    job: dict[str, Any] = {
        "spec": {"progress": {"replica": "launcher", "stallSeconds": 60, "stepPattern": "step"}}
    }
    clock = [40.0]
    m = monitor.ProgressMonitor(
        NO_API, lambda _k: job, lambda _k: pods, lambda _k: None, clock=lambda: at(clock[0])
    )
    reads = Reads()
    monkeypatch.setattr(monitor, "raw_get", reads)
    job["status"] = status([("Running", 0), ("Restarting", 45)]).to_json()
    reads.text = line(39, "step 1")
    m.read(KEY)
    assert m.resumption(KEY) == Resumption(at(40), {})  # watched since 40; not Running
    job["status"] = status([("Running", 0), ("Restarting", 45), ("Running", 50)]).to_json()
    clock[0] = 55
    reads.text = line(39, "step 1") + line(52, "reset") + line(53, "step 2") + line(54, "step 3")
    m.read(KEY)
    assert m.resumption(KEY) == Resumption(at(40), {at(50): at(53)})  # the oldest step line since 50
    clock[0] = 60
    m.read(KEY)
    assert m.resumption(KEY) == Resumption(at(40), {at(50): at(53)})  # kept, not moved on
    restarted = monitor.ProgressMonitor(
        NO_API, lambda _k: job, lambda _k: pods, lambda _k: None, clock=lambda: at(61)
    )
    restarted.read(KEY)
    assert restarted.resumption(KEY) == Resumption(at(61), {})  # a new process: spell 50 unknown
    assert account(JobStatus.from_json(job["status"]), at(70), restarted.resumption(KEY)) == account(
        JobStatus.from_json(job["status"]), at(70)
    )
    job["spec"] = {}
    m.read(KEY)
    assert m.resumption(KEY) is None  # no spec.progress: nothing held


def JobStatusOf(body: dict[str, Any]) -> Any:
    from aitj.core.api import JobStatus

    return JobStatus.from_json(body["status"])


class Recovered:
    """Recovered: a cache source of one job Running again since 60 after a restart at 50."""

    def jobs(self) -> list[tuple[tuple[str, str], dict[str, Any]]]:
        return [(("ns", "job"), {"metadata": {"uid": "u"}, "status": status(RECOVERED, FAULT).to_json()})]

    def pods(self, key: tuple[str, str]) -> list[Any]:
        return []


def test_the_collector_hands_the_monitor_s_facts_to_the_account() -> None:
    scraper = collector.CacheCollector(Recovered())
    facts: dict[tuple[str, str], Resumption] = {("ns", "job"): seen(0, s20=20)}
    scraper.resumed = facts.get

    def scrape() -> dict[str, float]:
        found = {f.name: f for f in scraper.collect()}
        out = {"training": found["aitj_job_training_seconds"].samples[0].value}
        out.update({s.labels["cause"]: s.value for s in found["aitj_job_badput_seconds"].samples})
        return out

    first = scrape()
    assert first["training"] == 25 and first["recovery"] > 1000  # no line since 60: all recovery
    facts[("ns", "job")] = seen(0, s20=20, s60=70)
    second = scrape()
    # The line's time (70) is long before the scrape that exported its seconds as recovery: the
    # recovery holds, and training moves on only by the time since (no second counted twice).
    assert second["recovery"] == first["recovery"]
    assert second["training"] == pytest.approx(first["training"], abs=1.0)
