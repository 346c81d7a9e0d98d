"""The goodput a training's own output shows (aitj.tools.trainbench.goodput), table-tested on
made-up step lines: rank 0 every 10 steps, 1 s apart, unless a case says otherwise."""

from __future__ import annotations

import pytest

from aitj.tools.trainbench.goodput import training_goodput
from aitj.tools.trainbench.timeline import Event, Reset, Step


def lines(*points: tuple[float, int]) -> list[Step]:
    return [Step(t, "h", 0, 3, s) for t, s in points]


STEADY = [(float(t), 10 * t) for t in range(0, 101)]


@pytest.mark.parametrize(
    ("points", "start", "end", "progress", "redone"),
    [
        pytest.param(STEADY, 0, 100, 100, 0, id="steady: all progress"),
        pytest.param(STEADY, 10.5, 20.5, 10, 0, id="a stretch cut mid-gap counts its share"),
        pytest.param(
            [*[(float(t), 10 * t) for t in range(0, 51)], *[(55.0 + t, 500 + 10 * t) for t in range(1, 46)]],
            0,
            100,
            95,
            0,
            id="a 6 s pause loses 5 s",
        ),
        pytest.param(
            [*[(float(t), 10 * t) for t in range(0, 51)], *[(51.0 + t, 480 + 10 * t) for t in range(1, 50)]],
            0,
            100,
            97,
            10,
            id="the gap to the first line after a restart and the steps redone are lost",
        ),
    ],
)
def test_the_goodput_of_a_stretch_of_training(
    points: list[tuple[float, int]], start: float, end: float, progress: float, redone: int
) -> None:
    events: list[Event] = [*lines(*points), Reset(50.5, "h", 0, 2, 480)]
    got = training_goodput(events, start, end)
    assert got.progress == pytest.approx(progress, abs=0.01)
    assert got.redone == redone
    assert got.ratio == pytest.approx(progress / (end - start), abs=1e-4)


def test_other_ranks_do_not_count() -> None:
    events = [Step(float(t), "h", 1, 3, 10 * t) for t in range(10)]
    assert training_goodput(events, 0, 9).progress == 0
