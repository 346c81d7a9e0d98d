"""``status.restartLedger``: the restart ledger as the status keeps it, and the form it has.

Pure. The ledger's meaning and its reading and writing are the planner's
(``aitj.core.planner.ledger.Ledger``, which also stamps it on every pod it creates), and the
api layer may not import the planner. So the status keeps the ledger as its JSON
(``RestartLedger``, handed to ``Ledger.from_json`` as it is), and this module declares the
form that JSON has: the CRD's schema of it is generated from these classes, and the unit tests
check that what ``Ledger.to_json`` writes reads into them with nothing left over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from aitj.core.api.jsonform import JsonObject, Opaque, Schema, prop, time_prop, type_schema

INT64: Schema = {"format": "int64"}
_PER_INDEX = "Per index, the newest generation"


@dataclass(frozen=True, kw_only=True)
class RuleUseForm(JsonObject):
    """What one rule did to one index (aitj.core.planner.rulelog.RuleHistory)."""

    failed: int | None = prop(description="The generation of the last failure it restarted.", fmt="int64")
    count: int | None = prop(description="Its restarts of the index for the job's life.", fmt="int64")
    streak: int | None = prop(description="Failures of the index in a row by it (backoff).", fmt="int64")
    last: str | None = time_prop(description="When its last restart of the index was decided.")
    times: Mapping[str, str] | None = prop(
        description="Failed generation to restart time, within restartWindowSeconds.",
        values={"format": "date-time"},
    )


@dataclass(frozen=True, kw_only=True)
class NodeExclusionForm(JsonObject):
    """A node one index keeps off (aitj.core.planner.rulelog.Exclusion)."""

    until: str | None = time_prop(description="When the exclusion expires.")
    rule: str | None = prop(description="The rule that excludes the node.")
    reason: str | None = prop(description="The cause of the failure on it.")


@dataclass(frozen=True, kw_only=True)
class LedgerReplicaForm(JsonObject):
    """One replica type's part of the ledger (aitj.core.planner.ledger.ReplicaHistory)."""

    epoch: int | None = prop(
        description="Replica- and All-scope restarts that covered this replica type.", fmt="int64"
    )
    seen_runs: tuple[tuple[int, ...], ...] | None = prop(
        "seenRuns",
        description="Per index, the newest pod generation seen, run-length encoded: [generation, "
        "count] pairs in index order (-1: none).",
        items={"items": INT64},
    )
    seen: tuple[int, ...] | None = prop(
        description="The previous release's form of seenRuns, one generation per index (-1: none); "
        "still read, no longer written.",
        items=INT64,
    )
    ended: Mapping[str, int] | None = prop(description=f"{_PER_INDEX} seen finished.", values=INT64)
    succeeded: Mapping[str, int] | None = prop(
        description=f"{_PER_INDEX} that succeeded and was let go.", values=INT64
    )
    stood: Mapping[str, int] | None = prop(
        description=f"{_PER_INDEX} whose failure stands and was let go.", values=INT64
    )
    recorded: Mapping[str, int] | None = prop(
        description="Per index, the newest failed generation whose restart status.restarts has recorded.",
        values=INT64,
    )
    restarts: Mapping[str, tuple[int, ...]] | None = prop(
        description="Per index, [the generation that failed, restarts so far].", values={"items": INT64}
    )
    rules: Mapping[str, Mapping[str, RuleUseForm]] | None = prop(
        description="Per index, per rule (its text): the generation of the last failure it restarted, "
        "its restarts, failures in a row (backoff), when the last restart was decided, and the times "
        "of the recent ones (restartWindowSeconds)."
    )
    excluded: Mapping[str, Mapping[str, NodeExclusionForm]] | None = prop(
        description="Per index, per node: until when replacements keep off it, the rule and the cause."
    )


@dataclass(frozen=True)
class RestartLedger(Opaque):
    """RestartLedger: ``status.restartLedger``, the JSON ``Ledger.to_json`` wrote (per replica
    type, a ``LedgerReplicaForm``), kept as it is: the planner reads it with ``Ledger.from_json``."""

    value: Mapping[str, object]

    @classmethod
    def read(cls, value: object) -> Self | None:
        return cls(value) if isinstance(value, Mapping) else None

    def write(self) -> object:
        return dict(self.value)

    @classmethod
    def json_schema(cls) -> Schema:
        return type_schema(Mapping[str, LedgerReplicaForm])
