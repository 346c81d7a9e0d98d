"""The restart ledger's ``seen`` written run-length encoded (issue 26, F12): ``seenRuns`` is the
dense list's runs, canonical, and every reader takes the previous release's dense ``seen`` too.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core.api import MAX_REPLICAS
from aitj.core.planner import ledger_delta
from aitj.core.planner.ledger import IndexHistory, Ledger
from aitj.core.planner.ledger_wire import _patch_runs, expand, runs, runs_diff, seen_of

DENSE = st.lists(st.integers(-1, 3), max_size=60)


@pytest.mark.parametrize(
    ("dense", "encoded"),
    [
        ([], []),
        ([-1], [[-1, 1]]),
        ([0] * 4096, [[0, 4096]]),
        ([0, 0, 2, 2, 2, -1, 0], [[0, 2], [2, 3], [-1, 1], [0, 1]]),
        ([-1, -1, 5], [[-1, 2], [5, 1]]),
        ([1, 2, 1], [[1, 1], [2, 1], [1, 1]]),
    ],
)
def test_runs_table(dense: list[int], encoded: list[list[int]]) -> None:
    assert runs(dense) == encoded
    assert expand(encoded) == dense


@settings(max_examples=500, deadline=None)
@given(DENSE)
def test_runs_round_trip_and_are_canonical(dense: list[int]) -> None:
    encoded = runs(dense)
    assert expand(encoded) == dense
    assert all(count > 0 for _, count in encoded)
    assert all(a[0] != b[0] for a, b in itertools.pairwise(encoded))  # merged neighbours
    assert sum(count for _, count in encoded) == len(dense)


@pytest.mark.parametrize(
    ("value", "dense"),
    [
        ("x", []),
        ([[1, 2], "x", [3, 1]], [1, 1]),  # a run without a count: the indices after it are unknown
        ([[1, 2], [0, -1], [3, 1]], [1, 1]),
        ([["a", 2], [3, 1]], [-1, -1, 3]),  # an unreadable generation: none seen
        ([[1, 2, 3], [3, 1]], []),
        ([[7, 10**12]], [7] * MAX_REPLICAS),  # a count does not size the list past any replica
    ],
)
def test_unreadable_runs(value: Any, dense: list[int]) -> None:
    assert expand(value) == dense


def test_seen_runs_is_read_before_the_dense_seen() -> None:
    assert seen_of({"seenRuns": [[2, 2]], "seen": [1]}) == [2, 2]
    assert seen_of({"seen": [1, -1, 0]}) == [1, -1, 0]
    assert seen_of({}) == []


LEDGER_EDITS = st.lists(
    st.tuples(st.sampled_from(("trainer", "launcher")), st.integers(0, 40), st.integers(-1, 3)), max_size=30
)


def _ledger(edits: list[tuple[str, int, int]]) -> Ledger:
    out = Ledger()
    for name, i, g in edits:
        out = out.with_index(name, i, IndexHistory(seen=g, ended=g if i % 3 == 0 else -1))
    return out


def _dense(form: dict[str, Any]) -> dict[str, Any]:
    """_dense: the status form as the previous release wrote it (``seen`` dense)."""
    out = {}
    for name, e in form.items():
        e = dict(e)
        if "seenRuns" in e:
            e["seen"] = expand(e.pop("seenRuns"))
        out[name] = e
    return out


@settings(max_examples=300, deadline=None)
@given(LEDGER_EDITS, LEDGER_EDITS)
def test_a_status_in_the_old_dense_form_reads_as_the_same_ledger(a: Any, b: Any) -> None:
    ledger = _ledger(a)
    form = json.loads(json.dumps(ledger.to_json()))
    assert all("seen" not in e for e in form.values())
    assert Ledger.from_json(_dense(form)) == Ledger.from_json(form)
    for name, h in ledger.replicas:  # what was written is what is read (records all -1: none)
        assert all(Ledger.from_json(form).replica(name).index(i).seen == r.seen for i, r in h.indices)
    # The memo's re-read: from an old-form status to a new one (the operator upgraded), and on.
    later = json.loads(json.dumps(_ledger(a + b).to_json()))
    old = ledger_delta.parse(_dense(form))
    parsed, _ = ledger_delta.reparse(old, later)
    assert parsed.ledger == Ledger.from_json(later)
    again, _ = ledger_delta.reparse(ledger_delta.parse(form), _dense(later))
    assert again.ledger == parsed.ledger


@given(
    st.dictionaries(
        st.tuples(st.sampled_from(("trainer", "launcher")), st.integers(0, 40)), st.integers(-1, 3)
    )
)
def test_equal_ledgers_write_equal_forms(records: dict[tuple[str, int], int]) -> None:
    edits = [(name, i, g) for (name, i), g in records.items()]
    forward, backward = _ledger(edits), _ledger(edits[::-1])  # patched from different parents
    assert forward == backward
    assert json.dumps(forward.to_json()) == json.dumps(backward.to_json())
    assert json.dumps(Ledger.from_json(forward.to_json()).to_json()) == json.dumps(forward.to_json())


@settings(max_examples=500, deadline=None)
@given(DENSE, DENSE)
def test_runs_diff_is_where_the_dense_lists_differ(a: list[int], b: list[int]) -> None:
    a, b = _trimmed(a), _trimmed(b)
    size = max(len(a), len(b))
    pad_a, pad_b = a + [-1] * (size - len(a)), b + [-1] * (size - len(b))
    found = {i: g for start, end, g in runs_diff(runs(a), runs(b)) for i in range(start, end)}
    assert found == {i: pad_b[i] for i in range(size) if pad_a[i] != pad_b[i]}


@settings(max_examples=500, deadline=None)
@given(DENSE, st.dictionaries(st.integers(0, 70), st.integers(-1, 3), min_size=1))
def test_patched_runs_are_the_runs_of_the_patched_list(dense: list[int], updates: dict[int, int]) -> None:
    dense = _trimmed(dense)
    patched = dense + [-1] * (max(updates) + 1 - len(dense))
    for i, g in updates.items():
        patched[i] = g
    assert _patch_runs(runs(dense), updates) == runs(_trimmed(patched))


def _trimmed(dense: list[int]) -> list[int]:
    """_trimmed: without trailing -1, as the status form holds it."""
    out = list(dense)
    while out and out[-1] < 0:
        out.pop()
    return out
