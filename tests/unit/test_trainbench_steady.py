"""Training under a steady fault rate (aitj.tools.trainbench.steady): the schedule, each fault's
window, the goodput and the tail, as tests/e2e/real/test_steady.py reads them."""

from __future__ import annotations

from collections import Counter

import pytest

from aitj.tools.trainbench.recovery import Fault, Pace, Recovery, pace
from aitj.tools.trainbench.steady import Planned, faults, goodput, lost, not_recovered, plan, worst
from aitj.tools.trainbench.timeline import Step

KINDS = ("force delete", "graceful delete", "SIGKILL", "worker killed in its pod")


def test_a_fault_every_interval_with_each_kind_in_turn() -> None:
    got = plan(KINDS, duration=1800, interval=180, seed=46)
    assert [p.at for p in got] == [180.0 * n for n in range(10)]
    counts = Counter(p.kind for p in got)
    assert set(counts) == set(KINDS) and sorted(counts.values()) == [2, 2, 3, 3]
    for turn in (got[0:4], got[4:8]):  # each turn makes every kind once
        assert sorted(p.kind for p in turn) == sorted(KINDS)


def test_the_schedule_is_the_seeds() -> None:
    assert plan(KINDS, 1800, 180, seed=1) == plan(KINDS, 1800, 180, seed=1)
    orders = {tuple(p.kind for p in plan(KINDS, 1800, 180, seed=s)) for s in range(8)}
    assert len(orders) > 1


@pytest.mark.parametrize(
    ("kinds", "duration", "interval", "want"),
    [
        (KINDS, 179, 180, ()),
        (KINDS, 360, 180, 2),
        ((), 1800, 180, ()),
        (KINDS, 1800, 0, ()),
        (("kill",), 90, 30, (Planned(0, "kill"), Planned(30, "kill"), Planned(60, "kill"))),
    ],
)
def test_how_many_faults_fit(
    kinds: tuple[str, ...], duration: float, interval: float, want: tuple[Planned, ...] | int
) -> None:
    got = plan(kinds, duration, interval, seed=0)
    assert (len(got) if isinstance(want, int) else got) == want


def test_each_fault_is_read_until_the_next_one_and_the_last_until_the_end() -> None:
    made = [("a", 100.0), ("b", 281.5), ("c", 460.0)]
    assert faults(made, 3, 640.0) == [
        Fault("a", 100.0, 3, 281.5),
        Fault("b", 281.5, 3, 460.0),
        Fault("c", 460.0, 3, 640.0),
    ]
    assert faults([], 3, 640.0) == []


def test_goodput_is_samples_per_second_through_the_faults_over_without() -> None:
    assert goodput(Pace(10, 1000), Pace(9.6, 960)) == pytest.approx(0.96)
    assert goodput(None, Pace(9.6, 960)) is None
    assert goodput(Pace(10, 1000), None) is None
    assert goodput(Pace(0, 0), Pace(1, 1)) is None


def recovered(full: float | None) -> Recovery:
    return Recovery(Fault("a", 0, 3, 180), 1.0 if full else None, full, 2.0, 0, 1)


def test_the_tail_and_the_faults_never_healed() -> None:
    runs = [recovered(5.2), recovered(None), recovered(38.0), recovered(12.0)]
    assert worst(runs) == 38.0
    assert not_recovered(runs) == [runs[1]]
    assert worst([recovered(None)]) is None and not_recovered([recovered(4.0)]) == []


def steps(*points: tuple[float, int, int]) -> list[Step]:
    """steps: rank 0's step lines, (time, step, world size)."""
    return [Step(t, "h0", 0, size, step) for t, step, size in points]


def test_a_fault_costs_the_seconds_its_window_is_short_of_at_the_pace_without_faults() -> None:
    without = Pace(10, 30)  # 10 steps a second at width 3, a batch of 1
    kept = steps(*[(t, 10 * t, 3) for t in range(0, 101)])
    assert lost(kept, Fault("a", 0, 3, 100), without, 1) == pytest.approx(0.0)
    # Stopped 10 s, then 20 s at width 2 (10 steps a second): 10 + 20 / 3 seconds lost.
    broken = steps(
        (0, 0, 3),
        *[(t, 10 * t, 3) for t in range(1, 41)],
        *[(t, 10 * (t - 10), 2) for t in range(50, 71)],
        *[(t, 10 * (t - 10), 3) for t in range(71, 101)],
    )
    assert lost(broken, Fault("a", 0, 3, 100), without, 1) == pytest.approx(10 + 20 / 3, abs=0.5)
    assert lost(kept, Fault("a", 0, 3, 100), None, 1) is None
    assert lost([], Fault("a", 0, 3, 100), without, 1) is None


def test_a_stall_up_to_the_next_fault_is_lost_whole() -> None:
    without = Pace(10, 30)
    stalled = steps(*[(t, 10 * t, 3) for t in range(0, 21)])
    assert lost(stalled, Fault("a", 10.5, 3, 100), without, 1) == pytest.approx(100 - 20)


def test_the_trainings_own_slow_steps_are_neither_lost_nor_trained() -> None:
    # A slow step of 20 s after step 500 (every 500 steps): at the pace without faults, read the
    # same way, the window lost nothing; counted in, it would have lost the 20 s.
    slowed = steps(*[(t, 10 * t, 3) for t in range(0, 51)], *[(t, 10 * (t - 20), 3) for t in range(71, 101)])
    without = pace(slowed, 0, 100, 1, slow=(500, 20.0))
    assert without == Pace(10, 30)
    assert pace(slowed, 0, 100, 1) == Pace(8, 24)
    assert lost(slowed, Fault("a", 0, 3, 100), Pace(10, 30), 1, slow=(500, 20.0)) == pytest.approx(0.0)
    assert lost(slowed, Fault("a", 0, 3, 100), Pace(10, 30), 1) == pytest.approx(20.0)
    # A gap after such a step that is shorter than a slow step is not one (the line was late).
    assert pace(steps((0, 490, 3), (1, 500, 3), (2, 510, 3)), 0, 2, 1, slow=(500, 20.0)) == Pace(10, 30)
