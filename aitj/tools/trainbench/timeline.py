"""A training's own output as timed events: the reading is the operator's (aitj.core.trainlog,
which the recovery watchdog reads too); the bench and the chaos command read it from here."""

from aitj.core.trainlog import Event, Reset, Step, parse, parse_line, ring, runtime_time

__all__ = ["Event", "Reset", "Step", "parse", "parse_line", "ring", "runtime_time"]
