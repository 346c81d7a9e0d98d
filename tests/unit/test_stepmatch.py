"""spec.progress.stepPattern against a tenant's log (issue 47, HIGH 1): what RE2 refuses at the
spec's parse, and a fuzz of the cost of one read: any pattern the spec admits, against any log
tail the monitor can read (LIMIT_BYTES), in bounded time. The slowest read found is printed."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitj.controller import progress as monitor
from aitj.core.api import parse_progress
from aitj.core.api.model import MAX_STEP_PATTERN_LENGTH
from aitj.core.api.reader import FieldError
from aitj.core.stepmatch import PatternError, compile_step_pattern

# One read's bound, far above what a read costs (a few ms to ~100 ms on 2 busy cores) and far
# below what a backtracking matcher took on the worst inputs (hours).
READ_BOUND_SECONDS = 5.0
STAMP = "2026-11-28T08:00:00.000000000Z "


def admitted(pattern: str) -> bool:
    errors: list[FieldError] = []
    parse_progress({"replica": "w", "stallSeconds": 60, "stepPattern": pattern}, ("w",), errors)
    return not errors


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(?=step)\w+", "invalid perl operator: (?="),  # a lookahead
        (r"(\w+) \1", r"invalid escape sequence: \1"),  # a backreference
        (r"(a{999}){999}", "invalid repetition size"),
        (r"step (", "missing )"),
    ],
)
def test_a_pattern_re2_does_not_take_is_refused_naming_the_field_and_re2s_reason(
    pattern: str, reason: str
) -> None:
    errors: list[FieldError] = []
    parse_progress({"replica": "w", "stallSeconds": 60, "stepPattern": pattern}, ("w",), errors)
    assert [e.path for e in errors] == ["spec.progress.stepPattern"]
    assert "[stepPattern]" in errors[0].message and reason in errors[0].message
    with pytest.raises(PatternError):
        compile_step_pattern(pattern)


def test_the_patterns_people_write_are_admitted_and_match() -> None:
    for pattern, line in [
        (r"step[= ](\d+)", "[1]<stdout>: step=12 loss=0.3"),
        (r"Epoch \d+/\d+ .* loss=[0-9.]+", "Epoch 3/10 batch 7 loss=0.25"),
        (r"^\[\d+\]<stdout>:.*step", "[0]<stdout>: global step 5"),
        (r"(?i)STEP", "step 1"),
    ]:
        assert admitted(pattern) and compile_step_pattern(pattern).search(line)


# Pattern pieces that make backtracking matchers blow up, and ordinary ones.
PIECES = st.sampled_from(
    [
        "a",
        "a+",
        "(a+)+",
        "(a|a)*",
        "(a|aa)+",
        "(.*)*",
        ".*",
        r"\w+",
        r"\d*",
        "(",
        ")",
        "|",
        "?",
        "*",
        "+",
        "{2,50}",
        "[a-z]",
        r"\s",
        "^",
        "$",
        "b",
        "!",
        "(?:a*)*",
        r"(\w|\d)+",
        ".{0,100}",
    ]
)
LOG_PIECES = st.sampled_from(["a" * 40, "a" * 40 + "!", "ab", " ", "step 12 loss 0.1", "!", "\u00e9" * 10])


@st.composite
def patterns(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(PIECES, min_size=1, max_size=40))
    return "".join(pieces)[:MAX_STEP_PATTERN_LENGTH]


@st.composite
def log_tails(draw: st.DrawFn) -> str:
    """A log tail as the monitor reads it: timestamped lines, LIMIT_BYTES at most."""
    pieces = draw(st.lists(LOG_PIECES, min_size=1, max_size=60))
    line = STAMP + "".join(pieces) + "\n"
    repeat = max(1, monitor.LIMIT_BYTES // len(line.encode()))
    return (line * repeat).encode()[: monitor.LIMIT_BYTES].decode("utf-8", "ignore")


slowest = [0.0]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(pattern=patterns(), text=log_tails())
def test_any_admitted_pattern_against_any_log_tail_costs_a_bounded_time_per_read(
    pattern: str, text: str
) -> None:
    if not admitted(pattern):
        return  # refused at admission: never matched
    began = dt.datetime(2026, 11, 28, 7, tzinfo=dt.UTC)
    started = time.perf_counter()
    monitor.scan(text, pattern, began)
    took = time.perf_counter() - started
    if took > slowest[0]:
        slowest[0] = took
        print(f"slowest read so far: {took * 1000:.1f} ms ({len(text.encode())} bytes, pattern {pattern!r})")
    assert took < READ_BOUND_SECONDS
