"""The exitCodes grammar of a faultTolerantPolicy rule.

Pure; part of the API layer (see aitj/core/api/). A rule's ``exitCodes`` is either an integer
(``exitCodes: 137``) or a string of comma-separated codes and ranges with optional spaces
(``"129,101"``, ``"130-140"``, ``" 1, 3 - 7 "``; YAML reads an unquoted ``129,101`` as that
string). Codes are 0-255 written without leading zeros; a range ``a-b`` needs ``a <= b``.

The CRD checks the same grammar at admission with a CEL rule built from ``ITEM_PATTERN`` and
``LIST_PATTERN`` below (hack/gen_crd.py copies them), so the operator and the apiserver cannot
disagree about what a valid string is. Both patterns use only syntax that means the same in
Python's ``re`` and Go's RE2.
"""

from __future__ import annotations

import re

MIN_CODE = 0
MAX_CODE = 255
MAX_LENGTH = 64  # characters; the CRD's maxLength, which keeps its CEL range rule within the cost budget

# One code, 0-255, no leading zeros: the regex itself enforces the bound.
CODE_PATTERN = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_SPACE = r"[ \t]*"
ITEM_PATTERN = rf"{_SPACE}{CODE_PATTERN}({_SPACE}-{_SPACE}{CODE_PATTERN})?{_SPACE}"
# The whole string, anchored; Go's RE2 ``$`` (no multiline flag) matches only at the very end.
LIST_PATTERN = rf"^{ITEM_PATTERN}(,{ITEM_PATTERN})*$"

_ITEM = re.compile(ITEM_PATTERN)

GRAMMAR_HINT = (
    "exit codes 0-255 as a number or a string of comma-separated codes and ranges, "
    'e.g. 137, "129,101" or "130-140"'
)


class ExitCodesError(ValueError):
    """ExitCodesError says why an exitCodes value is not in the grammar."""


def parse_exit_codes(value: object) -> frozenset[int]:
    """parse_exit_codes turns an exitCodes value (int or str) into the set of codes it names."""
    # bool is an int in Python, but YAML's `true` is no exit code.
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ExitCodesError(f"must be {GRAMMAR_HINT}, not {type(value).__name__} {value!r}")
    if isinstance(value, int):
        if not MIN_CODE <= value <= MAX_CODE:
            raise ExitCodesError(f"exit code {value} is out of range: {GRAMMAR_HINT}")
        return frozenset({value})
    if len(value) > MAX_LENGTH:
        raise ExitCodesError(f"is {len(value)} characters: Too long: may not be more than {MAX_LENGTH} bytes")
    if not value.strip(" \t"):
        raise ExitCodesError(f"is empty: {GRAMMAR_HINT}")
    codes: set[int] = set()
    for item in value.split(","):
        codes |= _parse_item(item)
    return frozenset(codes)


def _parse_item(item: str) -> set[int]:
    """_parse_item parses one comma-separated part: a code or a range ``a-b``."""
    if not _ITEM.fullmatch(item):
        raise ExitCodesError(f"{item.strip()!r} is not an exit code or a range: {GRAMMAR_HINT}")
    low, _, high = item.partition("-")
    first = int(low)
    last = int(high) if high else first
    if first > last:
        raise ExitCodesError(f"range {first}-{last} is reversed: write it low-high, e.g. {last}-{first}")
    return set(range(first, last + 1))


def format_exit_codes(codes: frozenset[int]) -> str:
    """format_exit_codes writes a set of codes back in the grammar, ranges collapsed ("1-3,7")."""
    parts: list[str] = []
    ordered = sorted(codes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
