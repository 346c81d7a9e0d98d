"""The restart ledger (aitj/core/planner/ledger.py): its wire forms, merging, a pod's stamp."""

from __future__ import annotations

import dataclasses
import json

from aitj.core.api import RestartScope
from aitj.core.observed import ANNOTATION_LEDGER
from aitj.core.planner.ledger import (
    IndexHistory,
    Ledger,
    pod_epoch,
    pod_ledger,
    record_from_json,
    record_to_json,
)
from aitj.core.planner.types import RestartRecord
from aitj.core.policy import Failure, FailureKind
from tests.unit.builders import Pod, at

WIRE = {
    "trainer": {
        "epoch": 1,
        "restarts": {"1": [1, 2]},
        "seenRuns": [[0, 1], [2, 1], [-1, 1], [0, 1]],
        "ended": {"1": 1},
    }
}


def test_the_ledger_round_trips_through_its_wire_form() -> None:
    ledger = Ledger.from_json(WIRE)
    assert ledger.to_json() == WIRE
    assert ledger.replica("trainer").index(1) == IndexHistory(seen=2, ended=1, failed=1, restarts=2)
    assert ledger.replica("trainer").index(2) == IndexHistory()
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
    older = IndexHistory(failed=4, restarts=9)
    newer = IndexHistory(failed=5, restarts=6)
    assert older.merge(newer) == newer.merge(older) == IndexHistory(failed=5, restarts=6)


def test_unreadable_ledger_entries_are_skipped() -> None:
    ledger = Ledger.from_json(
        {"trainer": {"epoch": "x", "seen": ["a", 1], "restarts": {"z": [1, 1], "0": [1]}}}
    )
    assert ledger.replica("trainer").index(1).seen == 1
    assert ledger.replica("trainer").restart_count == 0 and ledger.replica("trainer").epoch == 0


RECORD = RestartRecord(
    "trainer",
    1,
    2,
    "job-trainer-abcde-1",
    Failure(FailureKind.EXIT_CODE, "container aitj-0 exited with 137", 137, at(99)),
    "exitCodes 137",
    RestartScope.POD,
    at(100),
)


def test_a_restart_record_round_trips_through_its_wire_form_which_is_its_status_entry() -> None:
    wire = record_to_json(RECORD)
    assert wire == {
        "time": "2022-01-14T09:03:32Z",
        "replica": "trainer",
        "index": 1,
        "generation": 2,
        "pod": "job-trainer-abcde-1",
        "cause": "exitCode 137",
        "message": "container aitj-0 exited with 137",
        "rule": "exitCodes 137",
        "scope": "Pod",
        "exitCode": 137,
        "failureTime": "2022-01-14T09:03:31Z",
    }
    assert record_from_json(wire) == RECORD
    assert record_from_json({**wire, "scope": "Everything"}) is None
    assert record_from_json({**wire, "exitCode": None, "cause": "nonsense"}) is None


def test_a_pods_stamp_carries_the_records_of_its_pass_and_the_status_form_never_does() -> None:
    ledger = Ledger.from_json(WIRE)
    stamped = Ledger.from_annotation(ledger.annotation([RECORD]))
    assert stamped.unrecorded() == (RECORD,)
    assert "records" not in json.dumps(ledger.merge(stamped).to_json())


def test_a_record_at_or_below_its_index_mark_is_recorded_already() -> None:
    stamped = Ledger.from_annotation(Ledger().annotation([RECORD]))
    done = stamped.recording([RECORD])
    assert done.unrecorded() == () and done.to_json()["trainer"]["recorded"] == {"1": 2}
    assert Ledger.from_json(done.to_json()).merge(stamped).unrecorded() == ()
    later = dataclasses.replace(RECORD, generation=3)
    assert done.merge(Ledger.from_annotation(Ledger().annotation([later]))).unrecorded() == (later,)


def test_merging_records_is_idempotent_and_order_free() -> None:
    a = Ledger.from_annotation(Ledger().annotation([RECORD]))
    other = dataclasses.replace(RECORD, index=0, pod="job-trainer-abcde-0")
    b = Ledger.from_annotation(Ledger().annotation([other, RECORD]))
    assert a.merge(b) == b.merge(a) == a.merge(b, b, a)
    assert a.merge(b).unrecorded() == (other, RECORD)


def test_merging_many_at_once_equals_merging_them_one_by_one() -> None:
    a = Ledger.from_json({"trainer": {"epoch": 2, "seen": [3, 0], "restarts": {"0": [2, 1]}}})
    b = Ledger.from_annotation(Ledger().annotation([RECORD]))
    c = Ledger.from_json({"launcher": {"epoch": 1, "seen": [1]}, "trainer": {"ended": {"1": 4}}})
    assert a.merge(b, c) == a.merge(b).merge(c) == c.merge(b).merge(a)
    assert a.merge(b, c).replica("trainer").index(1) == IndexHistory(seen=0, ended=4)
