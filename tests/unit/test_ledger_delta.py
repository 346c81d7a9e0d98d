"""The ledger kept by delta (issue 26) is the ledger made whole: on random ledgers and random
edits, ``ledger_delta``'s reparse, remerged and retold equal ``Ledger.from_json``,
``Ledger.merge`` and ``stamps.told``, and a history's status form patched from its parent's
(``ReplicaHistory.wire``) equals the one written whole (``ledger_wire.wire``).

These matter beside tests/unit/test_incremental_planning.py: the patched status form is used
with and without the Memo alike, so only a comparison with the form written whole checks it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core.planner import ledger_delta
from aitj.core.planner.ledger import IndexHistory, Ledger
from aitj.core.planner.ledger_wire import wire
from aitj.core.planner.stamps import told
from tests.unit.builders import Pod, seed_job, trainer

NAMES = ("trainer", "launcher")
GENS = st.integers(-1, 4)

RECORDS = st.builds(
    IndexHistory,
    seen=GENS,
    ended=GENS,
    failed=GENS,
    restarts=st.integers(0, 3),
    succeeded=GENS,
    stood=GENS,
    recorded=GENS,
)
EDITS = st.lists(
    st.tuples(st.sampled_from(NAMES), st.integers(0, 12), RECORDS, st.booleans()), min_size=1, max_size=8
)


def _whole(ledger: Ledger) -> dict[str, Any]:
    """_whole: the ledger's status form, every history written whole."""
    return {name: wire(h) for name, h in ledger.replicas}


def _ledger(edits: list[tuple[str, int, IndexHistory, bool]]) -> Ledger:
    out = Ledger()
    for name, i, record, _ in edits:
        out = out.with_index(name, i, record)
    return out


@settings(max_examples=300, deadline=None)
@given(EDITS, st.lists(EDITS, min_size=1, max_size=5))
def test_a_patched_status_form_is_the_whole_one(start: list[Any], steps: list[Any]) -> None:
    ledger = _ledger(start)
    assert ledger.to_json() == _whole(ledger)
    for edits in steps:
        for name, i, record, epoch in edits:
            ledger = ledger.with_index(name, i, record)
            if epoch:
                ledger = ledger.with_epoch(name, ledger.replica(name).epoch + 1)
        form = ledger.to_json()
        assert form == _whole(ledger)
        assert json.dumps(form) == json.dumps(_whole(ledger))  # in the same order too


@settings(max_examples=300, deadline=None)
@given(EDITS, st.lists(EDITS, min_size=1, max_size=5))
def test_a_status_ledger_read_again_where_it_changed_is_the_one_read_whole(
    start: list[Any], steps: list[Any]
) -> None:
    parsed = ledger_delta.parse(_ledger(start).to_json())
    ledger = parsed.ledger
    for edits in steps:
        for name, i, record, _ in edits:
            ledger = ledger.with_index(name, i, record)
        value = json.loads(json.dumps(ledger.to_json()))  # as the API server hands it back
        parsed, _ = ledger_delta.reparse(parsed, value)
        assert parsed.ledger == Ledger.from_json(value)
        assert parsed.ledger.to_json() == _whole(Ledger.from_json(value))


@settings(max_examples=300, deadline=None)
@given(EDITS, EDITS, st.lists(st.tuples(EDITS, EDITS), min_size=1, max_size=4))
def test_a_merge_patched_where_either_changed_is_the_whole_merge(
    a0: list[Any], b0: list[Any], steps: list[Any]
) -> None:
    a, b = _ledger(a0), _ledger(b0)
    merged = a.merge(b)
    for edits_a, edits_b in steps:
        pa, pb = a, b
        for name, i, record, _ in edits_a:
            a = a.with_index(name, i, record)
        for name, i, record, _ in edits_b:
            b = b.with_index(name, i, record)
        ca: ledger_delta.Changes = {
            n: {i for m, i, _, _ in edits_a if m == n} for n in {m for m, *_ in edits_a}
        }
        cb: ledger_delta.Changes = {
            n: {i for m, i, _, _ in edits_b if m == n} for n in {m for m, *_ in edits_b}
        }
        if dict(pa.replicas).keys() != dict(a.replicas).keys():
            ca = None  # a replica came: remerged is told so
        if dict(pb.replicas).keys() != dict(b.replicas).keys():
            cb = None
        merged, _ = ledger_delta.remerged(merged, a, b, ca, cb)
        assert merged == a.merge(b)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), min_size=1, max_size=10),
    st.lists(
        st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 3)), max_size=4), max_size=5
    ),
)
def test_what_the_pods_tell_kept_by_delta_is_what_they_tell(
    first: list[tuple[int, int]], steps: list[list[tuple[bool, int, int]]]
) -> None:
    job = seed_job(trainer(replicas=6, max_replicas=6))
    names = tuple(r.name for r in job.spec.replicas)
    stamp = Ledger().with_index("trainer", 2, IndexHistory(failed=1, restarts=1)).annotation()
    pods = [Pod("trainer", i, g).view() for i, g in first]
    kept = ledger_delta.tell(names, pods)
    for step in steps:
        came, went = [], []
        for add, i, g in step:
            if add:
                pod = Pod("trainer", i, g).stamped(json.loads(stamp)) if g else Pod("trainer", i, g)
                came.append(pod.view())
            elif pods:
                went.append(pods[i % len(pods)])
        went = list({id(p): p for p in went}.values())
        pods = [p for p in pods if all(p is not q for q in went)] + came
        again = ledger_delta.retold(kept, names, came, went)
        kept = again[0] if again is not None else ledger_delta.tell(names, pods)
        assert kept.ledger == told(job, pods)


@settings(max_examples=200, deadline=None)
@given(EDITS, st.lists(EDITS, min_size=1, max_size=5))
def test_a_restart_count_kept_by_delta_is_the_sum(start: list[Any], steps: list[Any]) -> None:
    ledger = _ledger(start)
    for edits in steps:
        for name in NAMES:
            assert ledger.replica(name).restart_count >= 0  # found, and kept by the next merges
        for name, i, record, _ in edits:
            ledger = ledger.with_index(name, i, record)
        for name, h in ledger.replicas:
            assert h.restart_count == sum(r.restarts for _, r in h.indices), name


@settings(max_examples=300, deadline=None)
@given(EDITS, st.lists(EDITS, min_size=1, max_size=5))
def test_a_pods_annotation_carries_every_index_restarted(start: list[Any], steps: list[Any]) -> None:
    # Ledger.annotation takes each replica's restarts from its status form (patched, issue 26):
    # the same as reading every index.
    ledger = _ledger(start)
    for edits in steps:
        for name, i, record, epoch in edits:
            ledger = ledger.with_index(name, i, record)
            if epoch:
                ledger = ledger.with_epoch(name, ledger.replica(name).epoch + 1)
        carried = json.loads(ledger.annotation())
        for name, h in ledger.replicas:
            whole = {str(i): [r.failed, r.restarts] for i, r in h.indices if r.restarts}
            assert carried[name].get("restarts", {}) == whole
            assert carried[name]["epoch"] == h.epoch
