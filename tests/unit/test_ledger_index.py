"""A replica history patched without copying its index records (``ledger_index``, used by
``ledger_delta.with_records`` and ``ReplicaHistory.merged``) is the history made whole: the same
records by index, the same sorted ``indices``, equal to (and hashed as) one built from them, the
same restart count and status form, after any chain of patches. Each chain is run with the
shared dict folded after every change, after two, and at the operator's own threshold, so that
both the shared and the folded forms are compared (the planner's sequences, on small jobs, never
change ``FOLD`` indices of one history).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core.planner import ledger_index
from aitj.core.planner.ledger import IndexHistory, Ledger, ReplicaHistory
from aitj.core.planner.ledger_delta import with_records
from aitj.core.planner.ledger_wire import wire

GENS = st.integers(-1, 3)
RECORDS = st.none() | st.builds(IndexHistory, seen=GENS, ended=GENS, failed=GENS, restarts=st.integers(0, 2))
PATCHES = st.dictionaries(st.integers(0, 20), RECORDS, min_size=1, max_size=5)
START = st.dictionaries(st.integers(0, 20), RECORDS.filter(lambda r: r is not None), max_size=15)


def _whole(model: dict[int, IndexHistory], epoch: int = 0) -> ReplicaHistory:
    return ReplicaHistory(epoch, tuple(sorted(model.items())))


def _check(h: ReplicaHistory, model: dict[int, IndexHistory]) -> None:
    whole = _whole(model, h.epoch)
    assert len(h._by_index) == len(model)
    assert all((i in h._by_index) == (i in model) and h.index(i) == whole.index(i) for i in range(-1, 23))
    assert dict(h._by_index.items()) == model and set(h._by_index) == set(model)
    assert wire(h) == wire(whole) and dict(h.wire) == wire(whole)
    assert h.restart_count == whole.restart_count
    assert h.indices == whole.indices and h == whole and hash(h) == hash(whole)


@pytest.mark.parametrize("fold", [0, 2, ledger_index.FOLD])
@settings(max_examples=200, deadline=None)
@given(start=START, steps=st.lists(PATCHES, min_size=1, max_size=12), counted=st.booleans())
def test_a_history_patched_again_and_again_is_the_one_made_whole(
    fold: int, start: dict[int, Any], steps: list[dict[int, Any]], counted: bool
) -> None:
    kept, ledger_index.FOLD = ledger_index.FOLD, fold
    try:
        h, model = _whole(start), dict(start)
        if counted:  # a restart count found before: patched by delta after
            assert h.restart_count >= 0
        for records in steps:
            before, was = h, dict(model)
            h = with_records(h, records)
            for i, record in records.items():
                if record is None:
                    model.pop(i, None)
                else:
                    model[i] = record
            _check(h, model)
            _check(before, was)  # the history patched from is as it was
    finally:
        ledger_index.FOLD = kept


@pytest.mark.parametrize("fold", [0, 2])
@settings(max_examples=200, deadline=None)
@given(start=START, steps=st.lists(st.tuples(st.integers(0, 20), RECORDS), min_size=1, max_size=12))
def test_merges_into_a_large_history_patch_it_as_the_whole_merge_would(
    fold: int, start: dict[int, Any], steps: list[tuple[int, Any]]
) -> None:
    kept, ledger_index.FOLD = ledger_index.FOLD, fold
    try:
        ledger, model = Ledger((("trainer", _whole(start)),)), dict(start)
        for i, record in steps:
            if record is None:
                continue
            ledger = ledger.with_index("trainer", i, record)
            model[i] = model[i].merge(record) if i in model else record
            _check(ledger.replica("trainer"), model)
    finally:
        ledger_index.FOLD = kept
