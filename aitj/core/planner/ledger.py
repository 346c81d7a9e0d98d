"""The restart ledger: the record that makes restart counts exact across operator crashes.

Pure. docs/semantics.md, "Exact restart counts", is the user-facing description. Every pod
the operator creates carries the ledger as it stood when the pod was planned (annotation
``aitj.core.observed.ANNOTATION_LEDGER``, read raw into ``PodView.ledger_annotation`` and
parsed here by ``pod_ledger``); the job status carries the full one (``status.restartLedger``).
The planner merges them all (``aitj.core.planner.survey.observe``), and merging is idempotent
and order-free (per-field max), so a pass replayed after a crash counts nothing twice.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from aitj.core.observed import PodView
from aitj.core.wire import as_int, as_list, mapping


@dataclass(frozen=True)
class IndexRecord:
    """IndexRecord is what the ledger knows about one index of one replica.

    ``seen``: the highest restart generation observed for the index (-1: none). ``ended``: the
    highest generation the operator itself decided to end (restart, scope, scale-in; -1: none).
    ``failed`` / ``restarts``: the generation whose failure was counted last, and how many
    restarts failures of this index have caused. A failure of generation g is counted only if
    ``failed < g``: counting is idempotent. ``succeeded`` / ``stood``: the highest generation
    whose pod, on its way out (deleted or finished), had succeeded / had a failure that stands
    (-1: none). They are what lets the operator release such a pod's finalizer: once recorded,
    the pod is not needed as the record, and its disappearance is not a failure.
    """

    seen: int = -1
    ended: int = -1
    failed: int = -1
    restarts: int = 0
    succeeded: int = -1
    stood: int = -1

    def merge(self, other: IndexRecord) -> IndexRecord:
        """merge is the per-field max; (failed, restarts) move together."""
        failed, restarts = max((self.failed, self.restarts), (other.failed, other.restarts))
        return IndexRecord(
            max(self.seen, other.seen),
            max(self.ended, other.ended),
            failed,
            restarts,
            max(self.succeeded, other.succeeded),
            max(self.stood, other.stood),
        )

    def settled(self, generation: int) -> bool:
        """settled: the outcome of ``generation`` (success, or a failure that stands) is recorded."""
        return max(self.succeeded, self.stood) >= generation


@dataclass(frozen=True)
class ReplicaRecord:
    """ReplicaRecord: a replica's restart epoch and its index records (sorted by index).

    The epoch counts Replica- and All-scope restarts that covered the replica: a pod stamped
    with an older epoch than the ledger's is superseded and gets replaced.
    """

    epoch: int = 0
    indices: tuple[tuple[int, IndexRecord], ...] = ()

    def index(self, i: int) -> IndexRecord:
        for j, record in self.indices:
            if j == i:
                return record
        return IndexRecord()

    def merge(self, other: ReplicaRecord) -> ReplicaRecord:
        merged = dict(self.indices)
        for i, record in other.indices:
            merged[i] = merged[i].merge(record) if i in merged else record
        return ReplicaRecord(max(self.epoch, other.epoch), tuple(sorted(merged.items())))

    @property
    def restart_count(self) -> int:
        return sum(record.restarts for _, record in self.indices)


@dataclass(frozen=True)
class Ledger:
    """Ledger: per replica name, a ReplicaRecord (sorted by name). Immutable; merge is a max."""

    replicas: tuple[tuple[str, ReplicaRecord], ...] = ()

    def replica(self, name: str) -> ReplicaRecord:
        for n, record in self.replicas:
            if n == name:
                return record
        return ReplicaRecord()

    def merge(self, *others: Ledger) -> Ledger:
        merged = dict(self.replicas)
        for other in others:
            for name, record in other.replicas:
                merged[name] = merged[name].merge(record) if name in merged else record
        return Ledger(tuple(sorted(merged.items())))

    def with_index(self, replica: str, index: int, record: IndexRecord) -> Ledger:
        """with_index merges ``record`` into the replica's index record."""
        return self.merge(Ledger(((replica, ReplicaRecord(0, ((index, record),))),)))

    def with_epoch(self, replica: str, epoch: int) -> Ledger:
        return self.merge(Ledger(((replica, ReplicaRecord(epoch)),)))

    def to_json(self, *, for_pod: bool = False) -> dict[str, Any]:
        """to_json is the wire form; ``for_pod`` keeps only what a pod needs to carry.

        ``{"trainer": {"epoch": 1, "seen": [0, 2, 0], "ended": {"1": 1},
        "restarts": {"1": [1, 2]}, "stood": {"0": 0}}}``: ``seen`` is dense by index (-1: never
        seen), ``ended``, ``succeeded``, ``stood`` and ``restarts`` ([failed generation, count])
        are sparse. A pod carries only
        ``epoch`` and ``restarts``: enough to recount exactly if the status write was lost.
        """
        out: dict[str, Any] = {}
        for name, record in self.replicas:
            entry: dict[str, Any] = {"epoch": record.epoch}
            restarts = {str(i): [r.failed, r.restarts] for i, r in record.indices if r.restarts}
            if restarts:
                entry["restarts"] = restarts
            if not for_pod:
                size = max((i + 1 for i, r in record.indices if r.seen >= 0), default=0)
                if size:
                    entry["seen"] = [record.index(i).seen for i in range(size)]
                for key in ("ended", "succeeded", "stood"):
                    sparse = {str(i): getattr(r, key) for i, r in record.indices if getattr(r, key) >= 0}
                    if sparse:
                        entry[key] = sparse
            out[name] = entry
        return out

    @classmethod
    def from_json(cls, value: object) -> Ledger:
        """from_json reads the wire form; anything unreadable is skipped (an empty ledger)."""
        return cls(
            tuple(sorted((str(name), _replica_record(mapping(e))) for name, e in mapping(value).items()))
        )

    @classmethod
    def from_annotation(cls, value: object) -> Ledger:
        if not isinstance(value, str):
            return cls()
        try:
            return cls.from_json(json.loads(value))
        except ValueError:
            return cls()

    def annotation(self) -> str:
        """annotation is the compact JSON a new pod carries in ANNOTATION_LEDGER."""
        return json.dumps(self.to_json(for_pod=True), sort_keys=True, separators=(",", ":"))


def _replica_record(e: Mapping[str, Any]) -> ReplicaRecord:
    indices: dict[int, IndexRecord] = {}

    def put(i: int | None, **fields: int) -> None:
        if i is not None and i >= 0:
            indices[i] = replace(indices.get(i, IndexRecord()), **fields)

    for i, seen in enumerate(as_list(e.get("seen"))):
        gen = as_int(seen)
        if gen is not None and gen >= 0:
            put(i, seen=gen)
    for field in ("ended", "succeeded", "stood"):
        for key, value in mapping(e.get(field)).items():
            gen = as_int(value)
            if gen is not None:
                put(as_int(key), **{field: gen})
    for key, pair in mapping(e.get("restarts")).items():
        items = as_list(pair)
        if len(items) == 2:
            failed, count = as_int(items[0]), as_int(items[1])
            if failed is not None and count is not None and count >= 0:
                put(as_int(key), failed=failed, restarts=count)
    epoch = as_int(e.get("epoch"), 0) or 0
    return ReplicaRecord(max(epoch, 0), tuple(sorted(indices.items())))


def pod_ledger(pod: PodView) -> Ledger:
    """pod_ledger: the ledger a pod was stamped with (empty if none, or unreadable)."""
    if pod.ledger_annotation is None:
        return Ledger()
    return _parse_annotation(pod.ledger_annotation)


def pod_epoch(pod: PodView) -> int:
    """pod_epoch: the restart epoch of the pod's own replica when the pod was planned."""
    return pod_ledger(pod).replica(pod.replica).epoch if pod.replica else 0


# Pods keep their stamp for life and every pass reads it again: parse each distinct one once.
@functools.lru_cache(maxsize=4096)
def _parse_annotation(value: str) -> Ledger:
    return Ledger.from_annotation(value)
