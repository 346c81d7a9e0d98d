"""What a pass reuses beyond the Memo (issue 26: the planner's CPU per pass for small jobs):
each cache or shortcut gives what the plain function gives. The whole planner with them is
checked by tests/unit/test_incremental_planning.py (memo or not, the same Plans)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from aitj.core import naming, render, wire
from aitj.core.api import JobStatus, Phase
from aitj.core.planner import disruption_budgets, objects, scaling
from aitj.core.planner.part import NOTHING, Part, combine, steps
from aitj.core.planner.quick import once, quick_init
from aitj.core.planner.types import Event, HostEntry, Plan
from tests.unit.builders import at, seed_job, trainer

PREV = JobStatus(phase=Phase.RUNNING)

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


@dataclass(frozen=True)
class _Plain:
    a: int
    b: tuple[int, ...] = ()
    c: str | None = None


@quick_init
@dataclass(frozen=True)
class _Quick:
    a: int
    b: tuple[int, ...] = ()
    c: str | None = None


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1,), {}), ((1, (2, 3)), {}), ((1,), {"c": "x"}), ((), {"a": 4, "b": (5,), "c": None})],
)
def test_a_quick_init_makes_what_the_dataclass_makes(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    quick, plain = _Quick(*args, **kwargs), _Plain(*args, **kwargs)  # type: ignore[arg-type]
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert quick == _Quick(*args, **kwargs) and hash(quick) == hash(_Quick(*args, **kwargs))  # type: ignore[arg-type]
    assert repr(quick).removeprefix("_Quick") == repr(plain).removeprefix("_Plain")
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.a = 2  # type: ignore[misc]


def test_quick_init_refuses_what_it_cannot_make_and_wrong_arguments_as_init_does() -> None:
    with pytest.raises(TypeError, match="not a plain field"):

        @quick_init
        @dataclass(frozen=True)
        class _Factory:
            a: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError):
        _Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Quick(1, d=2)  # type: ignore[call-arg]


def test_a_part_still_refuses_a_plan_that_sets_what_the_combiner_makes() -> None:
    with pytest.raises(ValueError, match="the combiner makes it"):
        Part(Plan(requeue_after=1.0))  # its __post_init__ runs under quick_init


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"events": (), "release": (), "discovery": None},
        {"events": (Event("Normal", "A", "a"),)},
        {"hosts": ()},  # a single-valued step: an empty host list is a value
        {"deletes": (), "outcome": None, "hosts": (HostEntry("p", "trainer", 0),)},
    ],
)
def test_steps_is_the_plan_or_nothing_when_it_fills_none(given: dict[str, Any]) -> None:
    made = steps(**given)
    assert made == Plan(**given)
    assert (made is NOTHING) == (combine(PREV, [Part(Plan(**given))]) == Plan())


@pytest.mark.parametrize(("replica", "value"), [("trainer", 3), ("launcher", 0), ("trainer", -1)])
def test_a_budgets_fingerprint_is_the_digest_of_its_rendered_spec(replica: str, value: int) -> None:
    job = seed_job(trainer(replicas=4), discovery=True)
    rendered = render.render_pdb(job, replica, value)["spec"]
    assert disruption_budgets.spec_fingerprint(job.name, replica, value) == objects.digest(rendered)


def test_a_scalings_shape_is_made_once_and_is_what_its_replicas_say() -> None:
    job = seed_job(trainer(replicas=4))
    scale = scaling.prepare(job, job.status, [], at(1), False)
    shape = scale.shape
    assert shape is scale.shape
    assert shape.indices == {rs.replica.name: rs.slots for rs in scale.replicas}


@pytest.mark.parametrize(
    ("uid", "replica", "index", "generation"), [("u1", "trainer", 0, 0), ("u1", "trainer", 3, 2)]
)
def test_a_pod_names_middle_is_the_hash_first_and_again(
    uid: str, replica: str, index: int, generation: int
) -> None:
    plain = naming.name_part.__wrapped__(uid, replica, index, generation)
    assert naming.name_part(uid, replica, index, generation) == plain
    assert naming.name_part(uid, replica, index, generation) == plain  # from the cache
    assert len(plain) == 5 and plain != naming.name_part.__wrapped__(uid, replica, index, generation + 1)


class _Counted:
    calls = 0

    @once
    def value(self) -> int:
        """value: counted."""
        _Counted.calls += 1
        return 41 + _Counted.calls


def test_once_computes_at_the_first_read_and_keeps_it_as_cached_property_does() -> None:
    _Counted.calls = 0
    a, b = _Counted(), _Counted()
    assert "value" not in a.__dict__
    assert (a.value, a.value, b.value) == (42, 42, 43)
    assert a.__dict__["value"] == 42 and _Counted.calls == 2
    assert isinstance(_Counted.__dict__["value"], once) and _Counted.value.__doc__ == "value: counted."
