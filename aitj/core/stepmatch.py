"""spec.progress.stepPattern, compiled for a tenant's log (docs/semantics.md, "Hangs").

Pure. The pattern is the tenant's and so are the lines it is matched against, read from their
pod's log. Python's ``re`` backtracks: ``^(a+)+$`` against forty ``a`` and a ``!`` takes hours,
and the operator would spend them on its event loop, reconciling no job in any namespace.
So the pattern is compiled with RE2 (google-re2), whose matching takes time linear in the
line's length whatever the pattern, and whose compiled program is held under ``MAX_MEMORY``:
a pattern RE2 cannot compile within it (a counted repetition too large, ``(a{999}){999}``) or
whose syntax it does not have (backreferences, lookarounds) is refused at the spec's parse with
RE2's reason, naming the field, so what the operator matches with is what was admitted.

The cost of one read is then bounded by what is read, not by what is written in the pattern:
at most ``aitj.controller.progress.LIMIT_BYTES`` of log, split into lines, each searched once
(``tests/unit/test_stepmatch.py`` fuzzes it and prints the slowest read it found).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import re2

# What one compiled pattern may hold (its program and RE2's DFA cache, which falls back to the
# slower, still linear, NFA when full): RE2's own default, and a bound on what a tenant's
# pattern costs the operator's memory. 32 of the heaviest 256-character patterns RE2 takes
# (``[\p{L}]{99}``), each matched against 64 KiB, grew a process by 55 MiB.
MAX_MEMORY = 8 << 20
CACHED = 32  # compiled patterns kept: a watched job's pattern is compiled once, not per read


class PatternError(ValueError):
    """PatternError: RE2 refuses the pattern; the message is RE2's reason."""


@dataclass(frozen=True, eq=False)
class StepPattern:
    """StepPattern: a compiled stepPattern. ``search`` says whether a line holds a match."""

    source: str
    _compiled: re2._Regexp

    def search(self, line: str) -> bool:
        return self._compiled.search(line) is not None


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False  # the reason goes into the refusal, not to the operator's stderr
    options.never_capture = True  # only whether a line matches is asked
    return options


@functools.lru_cache(maxsize=CACHED)
def compile_step_pattern(pattern: str) -> StepPattern:
    """compile_step_pattern: ``pattern`` compiled with RE2; PatternError with RE2's reason when
    RE2 refuses it."""
    try:
        return StepPattern(pattern, re2.compile(pattern, _options()))
    except re2.error as e:
        reason = e.args[0] if e.args else "refused"
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(text) from None
