"""What a pass reuses beyond the Memo (issue 26: the planner's CPU per pass for small jobs):
each cache or shortcut gives what the plain function gives. The whole planner with them is
checked by tests/unit/test_incremental_planning.py (memo or not, the same Plans)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from aitj.core import wire
from aitj.core.api import JobStatus, Phase

EAST = timezone(timedelta(hours=1))


def _plain_format(value: datetime) -> str:
    """_plain_format: format_time as it was, without its cache."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(datetime(2026, 11, 26, 17, 0, 5, tzinfo=UTC), id="UTC"),
        pytest.param(datetime(2026, 11, 26, 17, 0, 5, 999_999, tzinfo=UTC), id="fractions dropped"),
        pytest.param(datetime(2026, 11, 26, 18, 0, 5, tzinfo=EAST), id="another zone"),
        pytest.param(datetime(2026, 11, 26, 17, 0, 5), id="naive: the machine's zone"),
    ],
)
def test_a_formatted_time_is_the_plain_formatting_first_and_again(value: datetime) -> None:
    assert wire.format_time(value) == _plain_format(value)
    assert wire.format_time(value) == _plain_format(value)  # the second from the cache


def test_equal_instants_in_two_zones_are_one_text() -> None:
    utc = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
    other = utc.astimezone(timezone(timedelta(hours=-5)))
    assert utc == other and wire.format_time(other) == wire.format_time(utc) == "2026-01-01T00:00:00Z"


def test_updated_drops_what_extra_kept_under_the_fields_it_sets() -> None:
    status = JobStatus.from_json({"phase": "Pending", "replicaStatuses": {"x": 1}, "other": 1})
    moved = status.updated(phase=Phase.RUNNING, replica_statuses=None)
    assert moved.to_json() == {"phase": "Running", "other": 1}
    assert moved == JobStatus.from_json({"phase": "Running", "other": 1})
    with pytest.raises(TypeError, match="has no field phaze"):
        status.updated(phaze=Phase.RUNNING)
