"""The restart ledger (aitj/core/planner/ledger.py): its wire forms, merging, a pod's stamp."""

from __future__ import annotations

import json

from aitj.core.observed import ANNOTATION_LEDGER
from aitj.core.planner.ledger import IndexRecord, Ledger, pod_epoch, pod_ledger
from tests.unit.builders import Pod

WIRE = {"trainer": {"epoch": 1, "seen": [0, 2, -1, 0], "ended": {"1": 1}, "restarts": {"1": [1, 2]}}}


def test_the_ledger_round_trips_through_its_wire_form() -> None:
    ledger = Ledger.from_json(WIRE)
    assert ledger.to_json() == WIRE
    assert ledger.replica("trainer").index(1) == IndexRecord(seen=2, ended=1, failed=1, restarts=2)
    assert ledger.replica("trainer").index(2) == IndexRecord()
    assert ledger.replica("trainer").restart_count == 2


def test_a_pod_carries_only_the_epoch_and_the_restarts() -> None:
    stamp = json.loads(Ledger.from_json(WIRE).annotation())
    assert stamp == {"trainer": {"epoch": 1, "restarts": {"1": [1, 2]}}}


def test_a_pods_ledger_annotation_is_parsed_and_a_garbled_one_is_ignored() -> None:
    good = Pod("trainer", 1, 2).stamped({"trainer": {"epoch": 3}}).view()
    assert pod_epoch(good) == 3
    bad = Pod("trainer", 1, 2)
    bad.raw["metadata"]["annotations"] = {ANNOTATION_LEDGER: "{not json"}
    assert pod_ledger(bad.view()) == Ledger() and pod_epoch(bad.view()) == 0
    assert pod_ledger(Pod("trainer", 1, 2).view()) == Ledger()


def test_merging_ledgers_is_idempotent_and_order_free() -> None:
    a = Ledger.from_json({"trainer": {"epoch": 1, "restarts": {"0": [0, 1]}}})
    b = Ledger.from_json({"trainer": {"epoch": 0, "seen": [1, 0], "restarts": {"0": [1, 2], "1": [0, 1]}}})
    assert a.merge(b) == b.merge(a) == a.merge(b, b, a)
    merged = a.merge(b).replica("trainer")
    assert merged.epoch == 1 and merged.restart_count == 3


def test_a_later_failure_wins_the_merge_with_its_own_count() -> None:
    older = IndexRecord(failed=4, restarts=9)
    newer = IndexRecord(failed=5, restarts=6)
    assert older.merge(newer) == newer.merge(older) == IndexRecord(failed=5, restarts=6)


def test_unreadable_ledger_entries_are_skipped() -> None:
    ledger = Ledger.from_json(
        {"trainer": {"epoch": "x", "seen": ["a", 1], "restarts": {"z": [1, 1], "0": [1]}}}
    )
    assert ledger.replica("trainer").index(1).seen == 1
    assert ledger.replica("trainer").restart_count == 0 and ledger.replica("trainer").epoch == 0
