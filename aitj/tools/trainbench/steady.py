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

from aitj.tools.trainbench.recovery import Fault, Pace, Recovery, stretch
from aitj.tools.trainbench.timeline import Event, Step


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


def lost(
    events: Sequence[Event],
    fault: Fault,
    without: Pace | None,
    batch: int,
    slow: tuple[int, float] | None = None,
) -> float | None:
    """lost: the seconds of training ``fault``'s window is short of, at the pace ``without``
    faults: from rank 0's last step line before the fault to the window's end (the next fault),
    its length less the time the samples made in it take at that pace. A window that kept the
    pace loses 0 (or a little less: the pace wanders, within a percent or so). ``slow``: as
    ``recovery.stretch``, the training's own slow steps neither lost nor trained (``without``
    should be read the same way). None with no pace to go by."""
    start = max(
        (e.t for e in events if isinstance(e, Step) and e.rank == 0 and e.t < fault.t), default=fault.t
    )
    got = stretch(events, start, fault.until, batch, slow)
    if without is None or got is None or without.samples_per_second <= 0:
        return None
    seconds = got.seconds + (fault.until - got.last)  # a stall up to the window's end is lost too
    return seconds - got.samples / without.samples_per_second


def not_recovered(recoveries: Sequence[Recovery]) -> list[Recovery]:
    """not_recovered: the faults after which training was not back at full width before the
    next fault (or the end)."""
    return [r for r in recoveries if r.full_width is None]


def worst(recoveries: Sequence[Recovery]) -> float | None:
    """worst: the longest time to full width among the faults that recovered."""
    return max((r.full_width for r in recoveries if r.full_width is not None), default=None)
