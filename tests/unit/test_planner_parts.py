"""The planner's parts (aitj.core.planner.part): what a part gives back, and how the combiner
makes one Plan of them. The parts themselves are tested through ``plan`` (test_planner*.py and
the tests of each feature): every Plan there is the combined one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from aitj.core.api import JobStatus, Phase
from aitj.core.planner import Event, HostEntry, Manifest, ObjectKind, ObjectRef, Outcome, Plan
from aitj.core.planner.core import PARTS
from aitj.core.planner.part import Part, combine, unchanged

PREV = JobStatus(phase=Phase.RUNNING, total_restarts=1)
CONFIGMAP = Manifest(ObjectKind.CONFIGMAP, "cm", {})
A = Event("Normal", "A", "a")
B = Event("Normal", "B", "b")


def test_a_part_by_default_does_nothing() -> None:
    part = Part()
    assert (part.plan, part.wake) == (Plan(), ())
    assert part.edit is unchanged and part.edit(PREV) is PREV
    assert combine(PREV, [part, Part()]) == Plan()


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(Plan(status=PREV), id="the status: parts edit it"),
        pytest.param(Plan(requeue_after=5.0), id="the wake-up: parts say when, in Part.wake"),
    ],
)
def test_a_part_does_not_set_what_the_combiner_makes(plan: Plan) -> None:
    with pytest.raises(ValueError, match="the combiner makes it"):
        Part(plan)


def test_tuple_steps_follow_the_order_of_the_parts() -> None:
    first = Part(Plan(events=(A,), removes=(ObjectRef(ObjectKind.PDB, "x"),)))
    second = Part(Plan(events=(B,)))
    assert combine(PREV, [first, second]).events == (A, B)
    assert combine(PREV, [second, first]).events == (B, A)
    assert combine(PREV, [first, second]).removes == (ObjectRef(ObjectKind.PDB, "x"),)


def test_a_pod_is_released_once_however_many_parts_name_it() -> None:
    parts = [Part(Plan(release=("p1", "p2", "p1"))), Part(Plan(release=("p3", "p2")))]
    assert combine(PREV, parts).release == ("p1", "p2", "p3")


@pytest.mark.parametrize(
    ("step", "value"),
    [
        pytest.param("discovery", CONFIGMAP, id="the discovery ConfigMap"),
        pytest.param("podgroup", CONFIGMAP, id="the PodGroup to rewrite"),
        pytest.param("hosts", (HostEntry("p", "trainer", 0),), id="the host list"),
        pytest.param("outcome", Outcome(Phase.FAILED, "R", "m"), id="the outcome"),
    ],
)
def test_a_single_valued_step_comes_from_one_part_at_most(step: str, value: Any) -> None:
    one = Part(replace(Plan(), **{step: value}))
    assert getattr(combine(PREV, [Part(), one, Part()]), step) == value
    with pytest.raises(ValueError, match=f"2 parts set the Plan's {step}"):
        combine(PREV, [one, Part(), one])


def test_the_status_is_every_edit_in_turn_and_none_when_they_leave_it() -> None:
    count = Part(edit=lambda s: s.updated(total_restarts=(s.total_restarts or 0) + 1))
    double = Part(edit=lambda s: s.updated(total_restarts=(s.total_restarts or 0) * 2))
    assert combine(PREV, [count, double]).status == PREV.updated(total_restarts=4)
    assert combine(PREV, [double, count]).status == PREV.updated(total_restarts=3)
    back = Part(edit=lambda s: s.updated(total_restarts=1))
    assert combine(PREV, [count, back]).status is None  # edited, but to what it was


@pytest.mark.parametrize(
    ("wakes", "expected"),
    [
        pytest.param([(), ()], None, id="no part asks: no wake-up"),
        pytest.param([(30.0, 5.0), (), (12.0,)], 5.0, id="the soonest any part asks for"),
        pytest.param([(0.0,), (7.0,)], 0.0, id="now is a time too"),
    ],
)
def test_the_job_is_planned_again_at_the_soonest_wake(
    wakes: list[tuple[float, ...]], expected: float | None
) -> None:
    assert combine(PREV, [Part(wake=w) for w in wakes]).requeue_after == expected


def test_each_feature_has_one_line_in_the_combiner() -> None:
    modules = [f.__module__ for f in PARTS]
    assert len(set(modules)) == len(modules)
    assert all(f.__name__ == "part" for f in PARTS)
    assert modules[0] == "aitj.core.planner.status_base"  # the status the others edit
