"""A training's own output as timed events: the reading is the operator's (aitj.core.trainlog,
which the recovery watchdog reads too); the bench and the chaos command read it from here, with
one line more: a training's start."""

from collections.abc import Iterable

from aitj.core import trainlog
from aitj.core.trainlog import Event, Reset, Step, parse_line, ring, runtime_time

__all__ = ["Event", "Reset", "Step", "parse", "parse_line", "ring", "runtime_time"]


def parse(lines: Iterable[str]) -> list[Event]:
    """parse: ``trainlog.parse``, and each start line read as a re-forming at step 0, so the
    world a whole-job restart makes (the recovery watchdog's ringHung: a new launcher, a new
    horovodrun) is seen to heal the fault before it, its lost steps counted as redone (seen: a
    job restarted that way stepped at full width 21 s after the fault, and the bench, waiting
    for a reset line, called it never healed). The operator reads no start line."""
    return trainlog.parse(lines, starts=True)
