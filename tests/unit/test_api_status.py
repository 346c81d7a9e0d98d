"""The typed status (aitj/core/api/status.py): its JSON form loses nothing, and its schema is the CRD's.

Properties over drawn JSON: any status the CRD's schema admits reads into the types with nothing
left over and writes back byte for byte; any JSON object at all writes back byte for byte (keys
and values the types do not take are kept). Every status the unit tests' scenarios write goes
through the same round trip (tests/unit/status_checks.py, called by the fake cluster).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitj.core.api import JobStatus, Phase
from aitj.core.api.status import ConditionStatus, JobCondition, status_schema
from tests.unit.status_checks import unread

SCHEMA = status_schema()

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
any_json = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
times = st.datetimes().map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")) | st.sampled_from(
    ["2024-05-01T10:00:00.123456Z", "2024-05-01T10:00:00+02:00", ""]
)


def conforming(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """conforming: JSON values the CRD schema ``schema`` admits (its properties, some absent)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return times if schema.get("format") == "date-time" else st.text(max_size=8)
    if kind == "integer":
        bits = 63 if schema.get("format") == "int64" else 31
        return st.integers(schema.get("minimum", -(2**bits)), 2**bits - 1)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(conforming(schema["items"]), max_size=3)
    if "properties" in schema:
        props = {key: conforming(sub) for key, sub in schema["properties"].items()}
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {k: v for k, v in props.items() if k in required},
            optional={k: v for k, v in props.items() if k not in required},
        )
    return st.dictionaries(st.text(max_size=6), conforming(schema["additionalProperties"]), max_size=3)


def same_json(a: object, b: object) -> bool:
    """same_json: equal as the API server would store them (it orders an object's keys itself)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conforming(SCHEMA))
def test_a_status_the_crd_admits_is_read_whole_and_written_back_byte_for_byte(body: dict[str, Any]) -> None:
    status = JobStatus.from_json(body)
    assert list(unread(status)) == []
    assert same_json(status.to_json(), body)
    assert JobStatus.from_json(status.to_json()) == status


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    conforming(SCHEMA),
    st.dictionaries(
        st.sampled_from(sorted(SCHEMA["properties"])) | st.text(max_size=6), any_json, max_size=4
    ),
)
def test_any_json_is_written_back_byte_for_byte(body: dict[str, Any], noise: dict[str, Any]) -> None:
    """Keys the types do not know, and values of known keys of the wrong type, are kept."""
    mixed = {**body, **noise}
    assert same_json(JobStatus.from_json(mixed).to_json(), mixed)


def _mixed(body: dict[str, Any], noise: dict[str, Any]) -> dict[str, Any]:
    return {**body, **noise}


statuses = st.builds(
    _mixed,
    conforming(SCHEMA),
    st.dictionaries(
        st.sampled_from(sorted(SCHEMA["properties"])) | st.text(max_size=6), any_json, max_size=2
    ),
)


def _shifted(status: dict[str, Any], drop: int, more: list[Any]) -> dict[str, Any]:
    """_shifted: ``status`` with its restart records' oldest ``drop`` gone and ``more`` appended,
    as the bounded history moves."""
    out = dict(status)
    if isinstance(out.get("restarts"), list):
        out["restarts"] = out["restarts"][drop:] + more
    return out


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(statuses, statuses, st.integers(0, 2), st.lists(conforming(SCHEMA["properties"]["restarts"]["items"])))
def test_a_status_read_again_from_the_last_is_the_status_read_whole(
    before: dict[str, Any], other: dict[str, Any], drop: int, more: list[Any]
) -> None:
    """from_json_again reuses only what it may: the result is from_json's, for a status that
    changed anywhere (``other``'s keys over it) or whose history moved on."""
    last = JobStatus.from_json(before)
    for after in (
        before,
        {**before, **other},
        _shifted(before, drop, more),
        _shifted({**before, **other}, drop, more),
    ):
        assert JobStatus.from_json_again(after, before, last) == JobStatus.from_json(after)


@settings(max_examples=200)
@given(any_json)
def test_anything_at_all_reads_without_raising(value: object) -> None:
    status = JobStatus.from_json(value)
    expected = value if isinstance(value, dict) else {}
    assert same_json(status.to_json(), expected)


def test_a_value_of_the_wrong_type_is_kept_and_read_as_absent() -> None:
    body = {"phase": 42, "conditions": [{"type": "Running", "status": "True"}, "junk"], "later": {"x": 1}}
    status = JobStatus.from_json(body)
    assert status.phase is None and status.conditions is None
    assert status.extra == body
    assert status.to_json() == body


def test_an_unknown_enum_value_stays_in_its_entry() -> None:
    status = JobStatus.from_json({"conditions": [{"type": "Paused", "status": "True", "reason": "R"}]})
    assert status.conditions is not None
    (only,) = status.conditions
    assert (only.type, only.status, only.reason, only.extra) == (
        None,
        ConditionStatus.TRUE,
        "R",
        {"type": "Paused"},
    )


def test_updated_replaces_what_was_kept_under_the_key() -> None:
    status = JobStatus.from_json({"phase": 42, "degraded": "junk", "other": 1})
    assert status.updated(phase=Phase.RUNNING, degraded=None).to_json() == {"phase": "Running", "other": 1}
    # A plain replace sets the field over the kept value too (it is written last).
    assert status.to_json()["degraded"] == "junk"


def test_updated_leaves_the_original_alone_and_refuses_a_field_it_does_not_have() -> None:
    status = JobStatus.from_json({"phase": "Pending", "other": 1})
    running = status.updated(phase=Phase.RUNNING)
    assert (status.phase, running.phase, running.extra) == (Phase.PENDING, Phase.RUNNING, {"other": 1})
    assert running == JobStatus.from_json({"phase": "Running", "other": 1})
    with pytest.raises(TypeError, match="no field phaze"):
        status.updated(phaze=Phase.RUNNING)


def test_fields_are_typed() -> None:
    status = JobStatus.from_json(
        {
            "phase": "Running",
            "conditions": [
                {"type": "Running", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
            ],
            "RestartCount": {"trainer": 2},
            "vacantIndices": {"trainer": [1, 3]},
        }
    )
    assert status.phase is Phase.RUNNING
    assert status.current_condition() == JobCondition(
        type=Phase.RUNNING, status=ConditionStatus.TRUE, last_transition_time="2024-01-01T00:00:00Z"
    )
    assert status.restart_count == {"trainer": 2}
    assert status.vacant_indices == {"trainer": (1, 3)}
