"""Reading and writing the JSON the API server speaks: timestamps, and defensive field access.

Pure, at the bottom of the core: imports nothing of aitj. Watch bodies and statuses are plain
JSON that anybody (a user, an older operator) may have written, so every reader here returns a
neutral value (an empty mapping, None) for a field that is absent or of the wrong type, instead
of raising in the middle of a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, TypeGuard


def parse_time(value: object) -> datetime | None:
    """parse_time reads an RFC 3339 timestamp as the API writes it; None if absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    """format_time writes a timestamp the way the API does: UTC, whole seconds, a trailing Z."""
    if value.tzinfo is None:  # local time: its meaning is the machine's zone's, not the value's
        return _utc_text(value)
    return _formatted(value)


def _utc_text(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# A pass formats the same few instants (its ``now``, the start times) a dozen times, and
# strftime was 4 % of the operator's loop. Equal aware datetimes are the same instant, whose
# UTC text is one: the cache is keyed on the value (its hash and ==).
_formatted = lru_cache(maxsize=256)(_utc_text)


def mapping(value: object) -> Mapping[str, Any]:
    """mapping: ``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """as_list: ``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def is_int(value: object) -> TypeGuard[int]:
    """is_int: a JSON integer (``true`` is not one, though Python's bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def as_int(value: object, default: int | None = None) -> int | None:
    """as_int: an integer, or a string of digits (annotations and labels are strings)."""
    if is_int(value):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return default


def strings(value: object) -> tuple[str, ...]:
    """strings: the items of a JSON array, as strings."""
    return tuple(str(v) for v in as_list(value))
