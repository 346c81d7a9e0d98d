"""The goodput a training's own output shows (issue 28): of a stretch of wall time, the share
spent making new progress, from rank 0's step lines (``timeline``). Pure.

What counts as progress, between two consecutive step lines of rank 0:

- steps beyond the highest done before (``new``): progress. Steps done again after a restart
  from a checkpoint or commit are not: their time is lost;
- at the training's usual cadence (at most ``PAUSE`` times the median seconds per step of the
  stretch), the whole gap is progress, shared between new and redone steps by their number;
  a longer gap is a pause: only ``new`` steps at the median pace count, the rest is lost.

So a fault costs what the training felt: the pause while its world re-forms, the steps it does
again, the new worker's start. The operator's goodput (aitj.core.planner.goodput) cannot see
the last two; tests/e2e/real/test_goodput.py prints both for the same interval.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from aitj.tools.trainbench.timeline import Event, Step

# A gap between two step lines longer than this many times the usual is a pause.
PAUSE = 2.0


@dataclass(frozen=True)
class TrainingGoodput:
    """TrainingGoodput: of ``seconds`` of wall time, ``progress`` made new progress; ``new``
    steps were new, ``redone`` done again."""

    seconds: float
    progress: float
    new: int
    redone: int

    @property
    def ratio(self) -> float:
        return self.progress / self.seconds if self.seconds > 0 else 0.0


def training_goodput(events: Sequence[Event], start: float, end: float) -> TrainingGoodput:
    """training_goodput: the goodput of the stretch ``start`` to ``end`` (epoch seconds); a gap
    between two step lines that crosses either end counts in proportion to its overlap."""
    steps = sorted((e for e in events if isinstance(e, Step) and e.rank == 0), key=lambda e: e.t)
    pairs = [(a, b) for a, b in itertools.pairwise(steps) if b.t > a.t]
    paces = [
        (b.t - a.t) / (b.step - a.step) for a, b in pairs if b.step > a.step and start <= a.t and b.t <= end
    ]
    per_step = statistics.median(paces) if paces else 0.0
    progress, new_steps, redone = 0.0, 0, 0
    top = steps[0].step if steps else 0
    for a, b in pairs:
        top = max(top, a.step)
        share = max(min(b.t, end) - max(a.t, start), 0.0) / (b.t - a.t)
        new = max(b.step - top, 0)
        done = max(b.step - a.step, 0)
        gap = b.t - a.t
        if done > 0 and share > 0:
            usual = done * per_step
            credit = gap * new / done if gap <= PAUSE * usual else new * per_step
            progress += credit * share
            new_steps += round(new * share)
            redone += round((done - new) * share)
    return TrainingGoodput(end - start, progress, new_steps, redone)
