"""The exitCodes grammar: aitj/core/exitcodes.py, and its agreement with the CRD's regex."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitj.core.exitcodes import (
    LIST_PATTERN,
    MAX_LENGTH,
    ExitCodesError,
    format_exit_codes,
    parse_exit_codes,
)

VALID = [
    pytest.param(137, {137}, id="a bare integer is one code"),
    pytest.param(0, {0}, id="zero is a code"),
    pytest.param(255, {255}, id="255 is the highest code"),
    pytest.param("137", {137}, id="a string with one code"),
    pytest.param("129,101", {101, 129}, id="the seed's comma list"),
    pytest.param("130-140", set(range(130, 141)), id="a range includes both ends"),
    pytest.param("7-7", {7}, id="a range of one code"),
    pytest.param(" 129 , 101 ", {101, 129}, id="spaces around codes are allowed"),
    pytest.param("1 - 3,\t9", {1, 2, 3, 9}, id="spaces and tabs around a dash are allowed"),
    pytest.param("1-3,2-4", {1, 2, 3, 4}, id="overlapping ranges merge"),
    pytest.param("0-255", set(range(256)), id="the whole range"),
]


@pytest.mark.parametrize(("value", "expected"), VALID)
def test_valid_exit_codes_parse_to_their_set(value: int | str, expected: set[int]) -> None:
    assert parse_exit_codes(value) == frozenset(expected)


INVALID = [
    pytest.param(256, "out of range", id="an integer above 255 is refused"),
    pytest.param(-1, "out of range", id="a negative integer is refused"),
    pytest.param(True, "not bool", id="a YAML boolean is no exit code"),
    pytest.param(1.5, "not float", id="a fraction is no exit code"),
    pytest.param(None, "not NoneType", id="null is no exit code"),
    pytest.param([1, 2], "not list", id="a YAML list is not the grammar"),
    pytest.param("", "is empty", id="an empty string is refused"),
    pytest.param("  ", "is empty", id="a blank string is refused"),
    pytest.param("256", "'256' is not an exit code", id="a string code above 255 is refused"),
    pytest.param("1000", "'1000' is not an exit code", id="a four-digit code is refused"),
    pytest.param("007", "'007' is not an exit code", id="leading zeros are refused"),
    pytest.param("-1", "'-1' is not an exit code", id="a negative string code is refused"),
    pytest.param("129,,101", "'' is not an exit code", id="an empty item between commas is refused"),
    pytest.param("129,", "'' is not an exit code", id="a trailing comma is refused"),
    pytest.param("140-130", "reversed", id="a reversed range is refused"),
    pytest.param("1-2-3", "'1-2-3' is not", id="a range with two dashes is refused"),
    pytest.param("1 2", "'1 2' is not", id="two codes without a comma are refused"),
    pytest.param("abc", "'abc' is not", id="words are refused"),
    pytest.param("129;101", "'129;101' is not", id="semicolons are refused"),
    pytest.param("1\n", "is not an exit code", id="a trailing newline is refused"),
    pytest.param(
        "1," * 40 + "1",
        f"may not be more than {MAX_LENGTH}",
        id="a string longer than the CRD allows is refused",
    ),
]


@pytest.mark.parametrize(("value", "fragment"), INVALID)
def test_invalid_exit_codes_are_refused_with_a_reason(value: object, fragment: str) -> None:
    with pytest.raises(ExitCodesError, match=re.escape(fragment)):
        parse_exit_codes(value)


def test_the_error_is_a_value_error() -> None:
    assert issubclass(ExitCodesError, ValueError)


@pytest.mark.parametrize(
    ("codes", "text"),
    [
        pytest.param({137}, "137", id="one code"),
        pytest.param({101, 129}, "101,129", id="codes in order"),
        pytest.param({1, 2, 3, 7}, "1-3,7", id="runs collapse to ranges"),
        pytest.param(set(), "", id="nothing"),
    ],
)
def test_format_writes_the_grammar(codes: set[int], text: str) -> None:
    assert format_exit_codes(frozenset(codes)) == text


# --- properties --------------------------------------------------------------------------------
# Oracle: a string built from (code | low-high) items joined by commas, with arbitrary spaces and
# tabs around every token, names exactly the union of its items; codes are 0-255 and low <= high.

codes = st.integers(min_value=0, max_value=255)
spaces = st.text(alphabet=" \t", max_size=2)


@st.composite
def item(draw: st.DrawFn) -> tuple[str, set[int]]:
    low = draw(codes)
    if draw(st.booleans()):
        return f"{draw(spaces)}{low}{draw(spaces)}", {low}
    high = draw(st.integers(min_value=low, max_value=255))
    return f"{draw(spaces)}{low}{draw(spaces)}-{draw(spaces)}{high}{draw(spaces)}", set(range(low, high + 1))


@given(st.lists(item(), min_size=1, max_size=5))
def test_any_string_of_the_grammar_parses_to_the_union_of_its_items(
    items: list[tuple[str, set[int]]],
) -> None:
    text = ",".join(t for t, _ in items)
    expected = set().union(*(s for _, s in items))
    if len(text) > MAX_LENGTH:
        with pytest.raises(ExitCodesError):
            parse_exit_codes(text)
        return
    assert parse_exit_codes(text) == expected
    assert re.match(LIST_PATTERN, text), "the CRD's regex admits what the parser admits"


@given(st.frozensets(codes, min_size=1))
def test_format_then_parse_is_the_identity(codes_: frozenset[int]) -> None:
    text = format_exit_codes(codes_)
    if len(text) <= MAX_LENGTH:
        assert parse_exit_codes(text) == codes_


@given(st.text(alphabet="0123456789-, \ta\n", max_size=20))
def test_any_text_parses_or_is_refused_and_the_crd_regex_agrees(text: str) -> None:
    """The parser and the CRD's CEL rules (LIST_PATTERN, then the low<=high check) agree on every string."""
    try:
        parsed = parse_exit_codes(text)
    except ExitCodesError:
        accepted = False
    else:
        accepted = True
        assert parsed <= frozenset(range(256))
    by_regex = re.match(LIST_PATTERN, text) is not None and "\n" not in text
    in_order = (
        all(int(a) <= int(b) for a, _, b in (part.partition("-") for part in text.split(",")) if b)
        if by_regex
        else False
    )
    assert accepted == (by_regex and in_order)
