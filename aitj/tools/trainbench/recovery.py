"""The recovery a user feels, from a training's own events (timeline.py): pure arithmetic.

For one fault at ``t`` whose effects are read until ``until`` (the next fault, or the end):

- **running again**: the first step completed after the world re-formed (the first Reset after
  the fault); without a Reset, the first step after the fault (training never stopped).
- **full width**: the first step completed at the wanted width after the last Reset to that
  width; without a Reset, the first step at that width after the fault.
- **longest pause**: the longest time between two step lines of rank 0 from the last one
  before the fault to the last one read: training stopped at most that long (a step line comes
  every ``--log-every`` steps, about a second, when nothing is wrong).
- **steps redone**: for every Reset, the highest step any rank had completed before it, less
  the step it resumed at: work done since the last commit and thrown away.

A figure is None when the log shows no such step before ``until``, or when training stalled:
no step in the last STALL_SECONDS before ``until``. A ring stuck on a dead peer may complete a
step or two after the fault and then nothing; that is not a recovery.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from aitj.tools.trainbench.timeline import Event, Reset, Step

# Training logs a step line every second or so; none for this long means it has stopped.
STALL_SECONDS = 5.0


@dataclass(frozen=True)
class Fault:
    """Fault: what was done at ``t`` (epoch s), the world size training should come back to,
    and until when its effects are read."""

    kind: str
    t: float
    width: int
    until: float


@dataclass(frozen=True)
class Recovery:
    """Recovery: seconds from the fault to training running again and to full width, the
    steps redone, and how many times the world re-formed."""

    fault: Fault
    running_again: float | None
    full_width: float | None
    longest_pause: float | None
    steps_redone: int
    resets: int


def recovery(events: Sequence[Event], fault: Fault) -> Recovery:
    """recovery: what ``events`` (in time order) say of ``fault``."""
    window = [e for e in events if fault.t <= e.t < fault.until]
    steps = [e for e in window if isinstance(e, Step)]
    # Every rank prints each re-forming; rank 0's line stands for it.
    resets = [e for e in window if isinstance(e, Reset) and e.rank == 0]
    again = _first_step(steps, after=resets[0].t if resets else fault.t)
    at_width = [r for r in resets if r.size == fault.width]
    full = _first_step(steps, after=at_width[-1].t if at_width else fault.t, size=fault.width)
    if resets and not at_width:
        full = None  # the world re-formed, never at the width wanted
    if not steps or fault.until - steps[-1].t > STALL_SECONDS:
        full = None
        again = again if resets else None
    return Recovery(
        fault=fault,
        running_again=None if again is None else again.t - fault.t,
        full_width=None if full is None else full.t - fault.t,
        longest_pause=_longest_pause(events, fault),
        steps_redone=_redone(events, resets),
        resets=len(resets),
    )


def healed(events: Sequence[Event], fault: Fault) -> bool:
    """healed: the world re-formed at the fault's width after it, and completed a step there.
    Every fault here (a lost worker, a scale) makes the framework re-form its world; the steps
    the old world completes right after the fault, before it notices, do not count."""
    resets = [
        e.t
        for e in events
        if isinstance(e, Reset) and e.rank == 0 and e.t > fault.t and e.size == fault.width
    ]
    return (
        bool(resets)
        and _first_step([e for e in events if isinstance(e, Step)], after=resets[0], size=fault.width)
        is not None
    )


def _longest_pause(events: Sequence[Event], fault: Fault) -> float | None:
    times = [e.t for e in events if isinstance(e, Step) and e.rank == 0 and e.t < fault.until]
    before = [t for t in times if t <= fault.t]
    kept = before[-1:] + [t for t in times if t > fault.t]
    if len(kept) < 2:
        return None
    return max(b - a for a, b in itertools.pairwise([*kept, fault.until]))


def _first_step(steps: Sequence[Step], *, after: float, size: int | None = None) -> Step | None:
    return next((s for s in steps if s.t > after and (size is None or s.size == size)), None)


def _redone(events: Sequence[Event], resets: Sequence[Reset]) -> int:
    """_redone: for each of ``resets``, the highest step completed since the re-forming before
    it, less the step it resumes at. Since that one only: a whole-job restart starts over at
    step 0, and the old run's steps are its loss, not the next re-forming's (seen: every fault
    after such a restart read as hundreds of steps redone, fewer each time)."""
    formed = [e.t for e in events if isinstance(e, Reset) and e.rank == 0]
    lost = 0
    for reset in resets:
        since = max((t for t in formed if t < reset.t), default=float("-inf"))
        done = [e.step for e in events if isinstance(e, Step) and since < e.t < reset.t]
        lost += max(0, max(done, default=0) - reset.resume)
    return lost


@dataclass(frozen=True)
class Pace:
    """Pace: steps per second and samples per second over a stretch of training."""

    steps_per_second: float
    samples_per_second: float


@dataclass(frozen=True)
class Stretch:
    """Stretch: rank 0's progress from its first step line in a stretch to its last (``last``,
    epoch s): the seconds between them (the training's own slow steps out, where asked), the
    steps made (net: steps redone count once) and the samples (each step at the world size it
    ran with)."""

    last: float
    seconds: float
    steps: int
    samples: float


def stretch(
    events: Sequence[Event], start: float, end: float, batch: int, slow: tuple[int, float] | None = None
) -> Stretch | None:
    """stretch: rank 0's progress between ``start`` and ``end``; None with fewer than two step
    lines. ``slow`` (every how many steps, how many seconds): the training's own slow steps
    (``--slow-every``, a long checkpoint's stand-in) are taken out of the time: each is the
    seconds after rank 0's line of a step that many steps make, where the next line is at least
    that late. Left in, a slow step's whole length falls in one stretch or the next, and whether
    ten minutes hold three of them or four moves their pace by 3 %."""
    steps = [e for e in events if isinstance(e, Step) and e.rank == 0 and start <= e.t <= end]
    if len(steps) < 2 or steps[-1].t <= steps[0].t:
        return None
    seconds = steps[-1].t - steps[0].t
    if slow is not None:
        every, length = slow
        seconds -= length * sum(
            1
            for a, b in itertools.pairwise(steps)
            if a.step > 0 and a.step % every == 0 and b.t - a.t >= length
        )
    samples = sum((b.step - a.step) * batch * b.size for a, b in itertools.pairwise(steps))
    return Stretch(steps[-1].t, seconds, steps[-1].step - steps[0].step, samples)


def pace(
    events: Sequence[Event], start: float, end: float, batch: int, slow: tuple[int, float] | None = None
) -> Pace | None:
    """pace: ``stretch``'s steps and samples over its seconds; None where it has none."""
    got = stretch(events, start, end, batch, slow)
    if got is None or got.seconds <= 0:
        return None
    return Pace(got.steps / got.seconds, got.samples / got.seconds)
