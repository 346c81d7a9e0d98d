"""The restart ledger: the record that makes restart counts exact across operator crashes.

Pure. docs/semantics.md, "Exact restart counts", is the user-facing description. Every pod
the operator creates carries the ledger as it stood when the pod was planned (annotation
``aitj.core.observed.ANNOTATION_LEDGER``, read raw into ``PodView.ledger_annotation`` and
parsed here by ``pod_ledger``); the job status carries the full one (``status.restartLedger``).
The planner merges them all (``aitj.core.planner.stamps.observe``), and merging is idempotent
and order-free (per-field max), so a pass replayed after a crash counts nothing twice.

The same goes for recording restarts (docs/semantics.md, "Each restart is recorded once"): a
pod's stamp also carries the ``RestartRecord`` s of the pass that created it, and the status
ledger says, per index, the newest failed generation whose restart ``status.restarts`` holds
(``recorded``). A record a pod carries above that mark is one a pass decided and did not get
to record (its status write failed, or the operator died): the next pass records it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aitj.core.api import JobStatus, RestartLedger
from aitj.core.observed import PodView
from aitj.core.planner.ledger_index import LazyIndices, patched
from aitj.core.planner.ledger_records import record_entry as record_entry  # its readers import it from here
from aitj.core.planner.ledger_records import record_from_json as record_from_json
from aitj.core.planner.ledger_records import record_to_json as record_to_json
from aitj.core.planner.ledger_wire import seen_of, wire, wire_patched
from aitj.core.planner.quick import once, quick_init
from aitj.core.planner.rulelog import (
    Exclusion,
    NodeKey,
    RuleHistory,
    RuleKey,
    excluded_from_json,
    excluded_to_json,
    merge_excluded,
    merge_rules,
    rules_from_json,
    rules_to_json,
)
from aitj.core.planner.types import RestartRecord
from aitj.core.wire import as_int, as_list, format_time, mapping


@quick_init
@dataclass(frozen=True)
class IndexHistory:
    """IndexHistory is what the ledger knows about the generations of one index of one replica
    (not a restart: the restarts themselves are ``RestartRecord`` s).

    ``seen``: the highest restart generation observed for the index (-1: none). ``ended``: the
    highest generation the operator itself decided to end (restart, scope, scale-in; -1: none).
    ``failed`` / ``restarts``: the generation whose failure was counted last, and how many
    restarts failures of this index have caused. A failure of generation g is counted only if
    ``failed < g``: counting is idempotent. ``succeeded`` / ``stood``: the highest generation
    whose pod, on its way out (deleted or finished), had succeeded / had a failure that stands
    (-1: none). They are what lets the operator release such a pod's finalizer: once recorded,
    the pod is not needed as the record, and its disappearance is not a failure. ``recorded``:
    the highest failed generation whose restart ``status.restarts`` holds (-1: none).
    """

    seen: int = -1
    ended: int = -1
    failed: int = -1
    restarts: int = 0
    succeeded: int = -1
    stood: int = -1
    recorded: int = -1

    def merge(self, other: IndexHistory) -> IndexHistory:
        """merge is the per-field max; (failed, restarts) move together."""
        if other is self or other == self:  # a pod's stamp mostly tells what the status holds
            return self
        failed, restarts = max((self.failed, self.restarts), (other.failed, other.restarts))
        return IndexHistory(
            max(self.seen, other.seen),
            max(self.ended, other.ended),
            failed,
            restarts,
            max(self.succeeded, other.succeeded),
            max(self.stood, other.stood),
            max(self.recorded, other.recorded),
        )

    def settled(self, generation: int) -> bool:
        """settled: the outcome of ``generation`` (success, or a failure that stands) is recorded."""
        return max(self.succeeded, self.stood) >= generation


@dataclass(frozen=True)
class ReplicaHistory:
    """ReplicaHistory: a replica's restart epoch, its index histories (sorted by index) and the
    restart records of its indices that pods carry (sorted by key; never in the status form).

    The epoch counts Replica- and All-scope restarts that covered the replica: a pod stamped
    with an older epoch than the ledger's is superseded and gets replaced. ``rules`` and
    ``excluded``: what each rule did to each index, and the nodes each index keeps off
    (aitj.core.planner.rulelog), sorted by key.
    """

    epoch: int = 0
    indices: tuple[tuple[int, IndexHistory], ...] = ()
    records: tuple[RestartRecord, ...] = ()
    rules: tuple[tuple[RuleKey, RuleHistory], ...] = ()
    excluded: tuple[tuple[NodeKey, Exclusion], ...] = ()

    @once
    def _by_index(self) -> dict[int, IndexHistory]:
        # A pass asks for every index of a replica: a dict, not a scan per question.
        return dict(self.indices)

    def index(self, i: int) -> IndexHistory:
        return self._by_index.get(i) or IndexHistory()

    def merge(self, other: ReplicaHistory) -> ReplicaHistory:
        return ReplicaHistory.merged((self, other))

    @staticmethod
    def merged(histories: Sequence[ReplicaHistory]) -> ReplicaHistory:
        """merged: the merge of all ``histories`` at once (one sort, not one per pair)."""
        if len(histories) == 1:
            return histories[0]
        base = max(histories, key=lambda h: len(h._by_index))
        others = [h for h in histories if h is not base]
        every = [r for h in histories for r in h.records]
        records: dict[tuple[str, int, int], RestartRecord] = {}
        for r in sorted(every, key=lambda r: format_time(r.time), reverse=True):
            records[r.key] = r  # one pass decides a restart; the earliest copy wins all the same
        meta: dict[str, Any] = {
            "epoch": max(h.epoch for h in histories),
            "records": tuple(records[k] for k in sorted(records)),
            "rules": merge_rules(h.rules for h in histories),
            "excluded": merge_excluded(h.excluded for h in histories),
        }
        joined = _joined(base, others)
        if joined is not None:  # base's indices: its records patched where others' join moved them
            out: ReplicaHistory = patched(base, joined, **meta)
            return out.derived(base, joined)
        merged = dict(base.indices)
        for h in others:
            for i, record in h.indices:
                merged[i] = merged[i].merge(record) if i in merged else record
        return ReplicaHistory(indices=tuple(sorted(merged.items())), **meta)

    @once
    def _rules_by_index(self) -> dict[int, dict[str, RuleHistory]]:
        # Every slot of a pass asks about its own index: a dict, not a scan per question.
        out: dict[int, dict[str, RuleHistory]] = {}
        for (i, text), h in self.rules:
            out.setdefault(i, {})[text] = h
        return out

    @once
    def _excluded_by_index(self) -> dict[int, tuple[Exclusion, ...]]:
        out: dict[int, list[Exclusion]] = {}
        for (i, _), e in self.excluded:
            out.setdefault(i, []).append(e)
        return {i: tuple(found) for i, found in out.items()}

    def rule(self, index: int, rule: str) -> RuleHistory:
        """rule: what ``rule`` (its text) did to ``index`` (nothing yet: an empty history)."""
        return self.rules_of(index).get(rule) or RuleHistory()

    def rules_of(self, index: int) -> Mapping[str, RuleHistory]:
        """rules_of: what each rule (by text) did to ``index``."""
        return self._rules_by_index.get(index, {})

    def excluded_of(self, index: int) -> tuple[Exclusion, ...]:
        """excluded_of: the nodes ``index`` keeps off (expired ones included), by node."""
        return self._excluded_by_index.get(index, ())

    @once
    def wire(self) -> Mapping[str, Any]:
        """wire: the replica's part of the ledger's status form (``Ledger.to_json``; not to be
        changed). A history patched from another (``_from``: it and the indices whose records
        may differ) patches that one's, so a status write of a job of thousands of indices
        copies its lists and maps (in C) rather than writing every index again."""
        parent = self.__dict__.pop("_from", None)  # not kept: it would keep its parent alive
        return wire(self) if parent is None else wire_patched(self, parent[0].wire, parent[1])

    def same_indices(self, **changes: Any) -> ReplicaHistory:
        """same_indices: this history with ``changes`` to its epoch, records, rules or
        exclusions, its index records as they are: what was found of them (their dict
        and restart count) is kept, and its status form is patched from this one's."""
        out: ReplicaHistory = patched(self, {}, **changes)
        return out.derived(self, ())

    def derived(self, parent: ReplicaHistory, changed: Iterable[int]) -> ReplicaHistory:
        """derived: this history, noted as ``parent`` patched at the ``changed`` indices (its
        other records are the parent's; see ``wire``). At most a few parents are kept waiting
        for their own to be written: past that, this one writes its own."""
        depth = 0 if "wire" in parent.__dict__ else parent.__dict__.get("_depth", 0) + 1
        if depth <= 4:
            self.__dict__["_from"], self.__dict__["_depth"] = (parent, frozenset(changed)), depth
        return self

    @once
    def restart_count(self) -> int:
        # Each restart decided in a pass asks (policy's restartLimit): summed once per history.
        return sum(record.restarts for _, record in self.indices)


# Histories patched without their tuple (ledger_index.patched) sort it when it is read.
setattr(ReplicaHistory, "indices", LazyIndices())  # noqa: B010 (the dataclass's default is its own)


@dataclass(frozen=True)
class Ledger:
    """Ledger: per replica name, a ReplicaHistory (sorted by name). Immutable; merge is a max."""

    replicas: tuple[tuple[str, ReplicaHistory], ...] = ()

    def replica(self, name: str) -> ReplicaHistory:
        for n, record in self.replicas:
            if n == name:
                return record
        return ReplicaHistory()

    def merge(self, *others: Ledger) -> Ledger:
        groups: dict[str, list[ReplicaHistory]] = {}
        for ledger in (self, *others):
            for name, record in ledger.replicas:
                groups.setdefault(name, []).append(record)
        return Ledger(tuple(sorted((name, ReplicaHistory.merged(h)) for name, h in groups.items())))

    def with_index(self, replica: str, index: int, record: IndexHistory) -> Ledger:
        """with_index merges ``record`` into the replica's index record."""
        return self.merge(Ledger(((replica, ReplicaHistory(0, ((index, record),))),)))

    def with_epoch(self, replica: str, epoch: int) -> Ledger:
        return self.merge(Ledger(((replica, ReplicaHistory(epoch)),)))

    def with_rule(self, replica: str, index: int, rule: str, history: RuleHistory) -> Ledger:
        """with_rule merges ``history`` into what ``rule`` did to the replica's index."""
        return self.merge(Ledger(((replica, ReplicaHistory(rules=(((index, rule), history),))),)))

    def with_exclusion(self, replica: str, index: int, exclusion: Exclusion) -> Ledger:
        """with_exclusion merges ``exclusion`` into the nodes the replica's index keeps off."""
        key = (index, exclusion.node)
        return self.merge(Ledger(((replica, ReplicaHistory(excluded=((key, exclusion),))),)))

    def replaced(self, replica: str, history: ReplicaHistory) -> Ledger:
        """replaced: the ledger with the replica's history replaced (not merged: pruning)."""
        kept = tuple((n, h) for n, h in self.replicas if n != replica)
        return Ledger(tuple(sorted((*kept, (replica, history)))))

    def unrecorded(self) -> tuple[RestartRecord, ...]:
        """unrecorded: the restart records pods carry that the status does not hold yet (above
        their index's ``recorded``), oldest first."""
        found = [
            r
            for _, replica in self.replicas
            for r in replica.records
            if r.generation > replica.index(r.index).recorded
        ]
        return tuple(sorted(found, key=lambda r: (r.time, r.key)))

    def recording(self, records: Sequence[RestartRecord]) -> Ledger:
        """recording: the ledger of a status that holds ``records``: their marks raised."""
        ledger = self
        for r in records:
            ledger = ledger.with_index(r.replica, r.index, IndexHistory(recorded=r.generation))
        return ledger

    def to_json(self, *, for_pod: bool = False) -> dict[str, Any]:
        """to_json is the wire form; ``for_pod`` keeps only what a pod needs to carry.

        ``{"trainer": {"epoch": 1, "seenRuns": [[0, 1], [2, 1], [0, 1]], "ended": {"1": 1},
        "restarts": {"1": [1, 2]}, "stood": {"0": 0}, "recorded": {"1": 1}}}``: ``seenRuns`` is
        the newest generation seen per index, run-length encoded (-1: never seen; ledger_wire;
        the previous release wrote it dense, ``seen``, still read), ``ended``, ``succeeded``,
        ``stood``, ``recorded`` and ``restarts`` ([failed generation, count]) are sparse, and so
        are ``rules`` and ``excluded`` (aitj.core.planner.rulelog). A pod carries only ``epoch``
        and ``restarts``, enough to recount exactly if the status write was lost, and (``annotation``)
        the records of its pass with their indices' rules and exclusions. Records are never
        part of this form.
        """
        if not for_pod:  # each replica's made once per history, or patched from its parent's
            return {name: dict(record.wire) for name, record in self.replicas}
        out: dict[str, Any] = {}
        for name, record in self.replicas:
            entry: dict[str, Any] = {"epoch": record.epoch}
            # The status form's, equal (ledger_wire): made once per history or patched, where
            # reading every index again was a pass's O(indices) per restart (issue 26).
            restarts = dict(record.wire.get("restarts", {}))
            if restarts:
                entry["restarts"] = restarts
            out[name] = entry
        return out

    @classmethod
    def from_json(cls, value: object) -> Ledger:
        """from_json reads the wire form; anything unreadable is skipped (an empty ledger)."""
        return cls(
            tuple(sorted((str(n), _replica_history(str(n), mapping(e))) for n, e in mapping(value).items()))
        )

    @classmethod
    def from_status(cls, status: JobStatus) -> Ledger:
        """from_status reads ``status.restartLedger`` (an empty ledger when absent)."""
        return cls.from_json(status.restart_ledger.value if status.restart_ledger is not None else None)

    def to_status(self) -> RestartLedger:
        """to_status: ``status.restartLedger``, the full wire form."""
        return self._status

    @once
    def _status(self) -> RestartLedger:
        # Made once per ledger: a pass's is often the last pass's, kept (aitj.core.planner.memo).
        return RestartLedger(self.to_json())

    @classmethod
    def from_annotation(cls, value: object) -> Ledger:
        if not isinstance(value, str):
            return cls()
        try:
            return cls.from_json(json.loads(value))
        except ValueError:
            return cls()

    def annotation(self, records: Sequence[RestartRecord] = ()) -> str:
        """annotation is the compact JSON a new pod carries in ANNOTATION_LEDGER: the pod form,
        and ``records`` (the restarts its pass records) under their replicas' ``records``, with
        the rule histories and exclusions of their indices (aitj.core.planner.rulelog): the only
        ones the pass may have changed, so a job of many indices does not stamp them all on
        every pod. Older ones are in the status, or on the pods of the pass that changed them."""
        out = self.to_json(for_pod=True)
        touched: dict[str, set[int]] = {}
        for r in records:
            entry = out.setdefault(r.replica, {"epoch": self.replica(r.replica).epoch})
            entry.setdefault("records", []).append(record_to_json(r))
            touched.setdefault(r.replica, set()).add(r.index)
        for name, indices in touched.items():
            history = self.replica(name)
            rules = [item for item in history.rules if item[0][0] in indices]
            excluded = [item for item in history.excluded if item[0][0] in indices]
            if rules:
                out[name]["rules"] = rules_to_json(rules)
            if excluded:
                out[name]["excluded"] = excluded_to_json(excluded)
        return json.dumps(out, sort_keys=True, separators=(",", ":"))


def _replica_history(name: str, e: Mapping[str, Any]) -> ReplicaHistory:
    # Each index's fields gathered first and its IndexHistory made once: a job of thousands
    # reads thousands of them from its status after every status write.
    fields_of: dict[int, dict[str, int]] = {}

    def put(i: int | None, **fields: int) -> None:
        if i is not None and i >= 0:
            fields_of.setdefault(i, {}).update(fields)

    for i, seen in enumerate(seen_of(e)):  # ``seenRuns``, or the previous release's ``seen``
        gen = as_int(seen)
        if gen is not None and gen >= 0:
            put(i, seen=gen)
    for field in ("ended", "succeeded", "stood", "recorded"):
        for key, value in mapping(e.get(field)).items():
            gen = as_int(value)
            if gen is not None:
                put(as_int(key), **{field: gen})
    for key, pair in mapping(e.get("restarts")).items():
        if (restarts := _restart_pair(pair)) is not None:
            put(as_int(key), failed=restarts[0], restarts=restarts[1])
    indices = {i: IndexHistory(**fields) for i, fields in fields_of.items()}
    epoch = as_int(e.get("epoch"), 0) or 0
    found = (record_from_json(r) for r in as_list(e.get("records")))
    records = {r.key: r for r in found if r is not None and r.replica == name}
    return ReplicaHistory(
        max(epoch, 0),
        tuple(sorted(indices.items())),
        tuple(records[k] for k in sorted(records)),
        rules_from_json(e.get("rules")),
        excluded_from_json(e.get("excluded")),
    )


def _joined(base: ReplicaHistory, others: Sequence[ReplicaHistory]) -> dict[int, IndexHistory] | None:
    """_joined: when ``others``' indices are all ``base``'s, the records of those whose join
    with ``others``' (order-free) is not base's; None when they are not."""
    by_index = base._by_index
    if not all(i in by_index for h in others for i, _ in h.indices):
        return None
    joined: dict[int, IndexHistory] = {}
    for h in others:
        for i, record in h.indices:
            had = joined.get(i) or by_index[i]
            if (merged := had.merge(record)) is not had:
                joined[i] = merged
    return joined


def _restart_pair(pair: object) -> tuple[int, int] | None:
    """_restart_pair: an index's ``[failed generation, restart count]`` (None: unreadable)."""
    items = as_list(pair)
    if len(items) != 2:
        return None
    failed, count = as_int(items[0]), as_int(items[1])
    return (failed, count) if failed is not None and count is not None and count >= 0 else None


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
