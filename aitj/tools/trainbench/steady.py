"""Training under a steady fault rate (issue 46): one fault every ``interval`` seconds, whether
or not the last has healed, against the same training without faults for as long. Pure.

The faults' kinds come in turns, each turn in an order drawn from the seed, so every kind is
made about as often and a run is repeatable; what each fault hits is picked when it is made.
Each fault's recovery is read from the training's own log until the next fault (or the end:
aitj.tools.trainbench.recovery), and the goodput is the samples per second through the faults
over the samples per second without them (``recovery.pace``: rank 0's net progress, so steps
redone after a restart count once). Each fault's own cost is ``lost``: the seconds of training
its window is short of, at the pace without faults; they say which kinds the goodput goes to.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from aitj.tools.trainbench.recovery import Fault, Pace, Recovery, pace
from aitj.tools.trainbench.timeline import Event


@dataclass(frozen=True)
class Planned:
    """Planned: a fault of ``kind``, ``at`` seconds after the faults begin."""

    at: float
    kind: str


def plan(kinds: Sequence[str], duration: float, interval: float, seed: int) -> tuple[Planned, ...]:
    """plan: a fault every ``interval`` seconds from 0, as many as fit in ``duration``, the
    ``kinds`` in turns, each turn shuffled by ``seed``."""
    if not kinds or interval <= 0:
        return ()
    count = int(duration // interval)
    rng = random.Random(seed)
    order: list[str] = []
    while len(order) < count:
        turn = list(kinds)
        rng.shuffle(turn)
        order += turn
    return tuple(Planned(n * interval, kind) for n, kind in enumerate(order[:count]))


def faults(made: Sequence[tuple[str, float]], width: int, end: float) -> list[Fault]:
    """faults: each fault ``made`` (its kind, its epoch second), read until the next one was
    made, the last until ``end``; training should come back to ``width``."""
    ends = [t for _, t in made[1:]] + [end] if made else []
    return [Fault(kind, t, width, until) for (kind, t), until in zip(made, ends, strict=True)]


def goodput(without: Pace | None, through: Pace | None) -> float | None:
    """goodput: the samples per second ``through`` the faults over those ``without`` them."""
    if without is None or through is None or without.samples_per_second <= 0:
        return None
    return through.samples_per_second / without.samples_per_second


def lost(events: Sequence[Event], fault: Fault, without: Pace | None, batch: int) -> float | None:
    """lost: the seconds of training ``fault``'s window (until the next fault) is short of: its
    length less the time the samples made in it take at the pace ``without`` faults. A window
    that kept that pace loses 0 (or a little less: the pace wanders, within a percent or so).
    None with no pace to go by."""
    through = pace(events, fault.t, fault.until, batch)
    if without is None or through is None or without.samples_per_second <= 0:
        return None
    return (fault.until - fault.t) * (1 - through.samples_per_second / without.samples_per_second)


def not_recovered(recoveries: Sequence[Recovery]) -> list[Recovery]:
    """not_recovered: the faults after which training was not back at full width before the
    next fault (or the end)."""
    return [r for r in recoveries if r.full_width is None]


def worst(recoveries: Sequence[Recovery]) -> float | None:
    """worst: the longest time to full width among the faults that recovered."""
    return max((r.full_width for r in recoveries if r.full_width is not None), default=None)
