"""Ledger deltas: the pass's restart ledgers made from the last pass's where little changed.

Pure; used by the job's Memo (aitj.core.planner.memo, issue 26). A job of thousands of indices
writes its status after each decision and its pods come and go one at a time; parsing the
status's ledger, gathering what the pods tell and merging the two is O(indices) per pass. These
make the same Ledgers (equal to ``Ledger.from_json``, ``stamps.told`` and ``Ledger.merge``) from
the last pass's, patched where their inputs changed, and say which index records they changed
(``Changes``): what the survey redoes. An unchanged replica's history is the same object, and so
is an unchanged index's record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aitj.core.observed import PodView
from aitj.core.planner.ledger import (
    IndexHistory,
    Ledger,
    ReplicaHistory,
    _parse_annotation,
    _replica_history,
    _restart_pair,
)
from aitj.core.planner.ledger_index import patched
from aitj.core.planner.ledger_wire import runs_diff, seen_of
from aitj.core.wire import as_int, mapping

# Per replica name, the indices whose records may differ from the last pass's; a replica not in
# it is the same history object (its epoch, records and rules too). None: anything may differ.
Changes = dict[str, set[int]] | None

SPARSE = ("ended", "succeeded", "stood", "recorded", "restarts")  # the wire form's per-index maps
META = ("epoch", "records", "rules", "excluded")  # the rest of a replica's wire form


@dataclass(frozen=True)
class Parsed:
    """Parsed: a status's ``restartLedger`` value, its Ledger, and per replica each per-index
    field of the wire form read into ``{index: value}`` (``fields``: what ``reparse`` diffs)."""

    value: Any
    ledger: Ledger
    fields: Mapping[str, Mapping[str, dict[int, Any]]]


def parse(value: Any) -> Parsed:
    """parse: ``Ledger.from_json(value)``, with its fields for the next ``reparse``."""
    fields = {str(n): _fields(mapping(e)) for n, e in mapping(value).items()}
    return Parsed(value, Ledger.from_json(value), fields)


def reparse(last: Parsed, value: Any) -> tuple[Parsed, Changes]:
    """reparse: ``parse(value)`` made from ``last``: a replica whose wire form is equal keeps its
    history; another is patched at the indices whose fields changed. A status write records a
    decision or two: a few indices, not thousands, are read again."""
    old, new = mapping(last.value), mapping(value)
    if not isinstance(value, Mapping) or old.keys() != new.keys():
        return parse(value), None
    histories, fields, changes = dict(last.ledger.replicas), {}, {}
    for name, e in new.items():
        if e == old[name]:
            fields[name] = last.fields[name]
            continue
        if not isinstance(e, Mapping) or not isinstance(old[name], Mapping):
            return parse(value), None
        histories[name], fields[name], changes[name] = _patched(
            name, old[name], e, histories[name], last.fields[name]
        )
    return Parsed(value, Ledger(tuple(sorted(histories.items()))), fields), changes


def _patched(
    name: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    history: ReplicaHistory,
    fields: Mapping[str, dict[int, Any]],
) -> tuple[ReplicaHistory, dict[str, dict[int, Any]], set[int]]:
    """_patched: ``_replica_history(name, new)`` from ``history``, that of ``old``."""
    out, changed = dict(fields), set()
    for field in SPARSE:
        if new.get(field) != old.get(field):
            out[field] = _sparse(field, new.get(field))
            changed |= {i for i, _ in out[field].items() ^ fields[field].items()}
    # The runs compared (a few pairs while few indices were restarted), and where they differ
    # diffed a run at a time; the dense lists (the previous release's status, ``seen``) only
    # when either form is the old one.
    if "seenRuns" in old and "seenRuns" in new:
        if new["seenRuns"] != old["seenRuns"]:
            out["seen"], moved = _runs_patched(fields["seen"], old["seenRuns"], new["seenRuns"])
            changed |= moved
    elif new.get("seenRuns") != old.get("seenRuns") or new.get("seen") != old.get("seen"):
        out["seen"], moved = _seen_patched(fields["seen"], seen_of(old), seen_of(new))
        changed |= moved
    if any(new.get(k) != old.get(k) for k in META):
        meta = _replica_history(name, {k: new[k] for k in META if k in new})
        history = _remeta(history, meta)
    records = {i: _record(out, i) for i in changed}
    return with_records(history, records), out, changed


def _fields(e: Mapping[str, Any]) -> dict[str, dict[int, Any]]:
    """_fields: the per-index fields of a replica's wire form, as ``_replica_history`` reads them."""
    seen = {i: g for i, v in enumerate(seen_of(e)) if (g := as_int(v)) is not None and g >= 0}
    return {"seen": seen, **{field: _sparse(field, e.get(field)) for field in SPARSE}}


def _sparse(field: str, value: object) -> dict[int, Any]:
    """_sparse: one per-index map of the wire form (the later of two keys for one index wins,
    as in ``_replica_history``)."""
    out: dict[int, Any] = {}
    for key, item in mapping(value).items():
        got = _restart_pair(item) if field == "restarts" else as_int(item)
        i = as_int(key)
        if got is not None and i is not None and i >= 0:
            out[i] = got
    return out


def _runs_patched(seen: dict[int, int], old: object, new: object) -> tuple[dict[int, int], set[int]]:
    """_runs_patched: ``_seen_patched`` of two ``seenRuns`` values, at the indices where their
    runs differ (``runs_diff``), not expanded."""
    out, moved = dict(seen), set[int]()
    for start, end, g in runs_diff(old, new):
        for i in range(start, end):
            if g >= 0:
                out[i] = g
            else:
                out.pop(i, None)
        moved.update(range(start, end))
    return out, moved


def _seen_patched(seen: dict[int, int], old: list[Any], new: list[Any]) -> tuple[dict[int, int], set[int]]:
    """_seen_patched: the dense ``seen`` list (``seen_of``) read again where it differs from
    ``old``'s (found a chunk at a time: the list is as long as the replica)."""
    out, moved, chunk = dict(seen), set(), 256
    for start in range(0, max(len(old), len(new)), chunk):
        a, b = old[start : start + chunk], new[start : start + chunk]
        if a == b:
            continue
        for i in range(start, start + max(len(a), len(b))):
            if i < len(old) and i < len(new) and old[i] == new[i]:
                continue
            g = as_int(new[i]) if i < len(new) else None
            if g is not None and g >= 0:
                out[i] = g
            else:
                out.pop(i, None)
            moved.add(i)
    return out, moved


def _record(fields: Mapping[str, Mapping[int, Any]], i: int) -> IndexHistory | None:
    """_record: index ``i``'s IndexHistory from the fields read (None: the wire form has none)."""
    kwargs: dict[str, int] = {}
    for field, by_index in fields.items():
        if i in by_index:
            if field == "restarts":
                kwargs["failed"], kwargs["restarts"] = by_index[i]
            else:
                kwargs[field] = by_index[i]
    return IndexHistory(**kwargs) if kwargs else None


def with_records(history: ReplicaHistory, records: Mapping[int, IndexHistory | None]) -> ReplicaHistory:
    """with_records: ``history`` with the records of some indices replaced (None: removed); a
    record equal to the one it replaces keeps that object (and ``history`` is kept when every
    one does). Its index records are shared, not copied (``ledger_index.patched``): a patch
    costs the indices it changes, not the replica's."""
    by_index = history._by_index
    changed = {i: record for i, record in records.items() if record != by_index.get(i)}
    if not changed:
        return history
    out: ReplicaHistory = patched(history, changed)
    return out.derived(history, records)


def _remeta(history: ReplicaHistory, meta: ReplicaHistory) -> ReplicaHistory:
    """_remeta: ``history`` with ``meta``'s epoch, records, rules and exclusions; its indices,
    and what was found of them, as they were."""
    return history.same_indices(
        epoch=meta.epoch, records=meta.records, rules=meta.rules, excluded=meta.excluded
    )


def remerged(prev: Ledger, a: Ledger, b: Ledger, ca: Changes, cb: Changes) -> tuple[Ledger, Changes]:
    """remerged: ``a.merge(b)``, made from ``prev`` (the merge of the ledgers ``a`` and ``b``
    were made from with ``ca`` and ``cb``): each replica that changed in either merged again, its
    index records only where they changed."""
    if ca is None or cb is None:
        return a.merge(b), None
    if not ca and not cb:
        return prev, {}
    olds, ones, others = dict(prev.replicas), dict(a.replicas), dict(b.replicas)
    if olds.keys() != ones.keys() | others.keys():
        return a.merge(b), None
    histories, changes = dict(olds), {}
    for name in ca.keys() | cb.keys():
        one, other = ones.get(name), others.get(name)
        if one is None or other is None:  # in one of them only: Ledger.merge takes it as it is
            histories[name] = one if one is not None else olds[name] if other is None else other
            changes[name] = set(ca.get(name, set()) | cb.get(name, set()))
            continue
        touched = ca.get(name, set()) | cb.get(name, set())
        meta = ReplicaHistory.merged([replace(one, indices=()), replace(other, indices=())])
        histories[name] = with_records(_remeta(olds[name], meta), {i: _join(one, other, i) for i in touched})
        changes[name] = touched
    return Ledger(tuple(sorted(histories.items()))), changes


def _join(a: ReplicaHistory, b: ReplicaHistory, i: int) -> IndexHistory | None:
    """_join: index ``i``'s record in the merge of ``a`` and ``b`` (None: in neither)."""
    x, y = a._by_index.get(i), b._by_index.get(i)
    if x is None or y is None:
        return x or y
    return x.merge(y)


@dataclass
class Told:
    """Told: what the job's pods tell of the ledger (``stamps.told``), kept by delta: each
    (replica, index)'s generations, the pods' stamps (by annotation), the ledgers they make."""

    names: tuple[str, ...]
    generations: dict[tuple[str, int], Counter[int]]
    stamps: Counter[str]
    seen: Ledger  # the generations' ledger
    stamped: Ledger  # the stamps', merged
    ledger: Ledger  # both merged: ``stamps.told``


def tell(names: tuple[str, ...], pods: Iterable[PodView]) -> Told:
    """tell: ``stamps.told`` of the job (its replicas' ``names``) and ``pods``, kept by delta."""
    generations: dict[tuple[str, int], Counter[int]] = {}
    stamps: Counter[str] = Counter()
    for p in pods:
        if p.replica in names and p.index is not None and p.index >= 0:
            generations.setdefault((p.replica, p.index), Counter())[p.generation] += 1
        if p.ledger_annotation is not None:
            stamps[p.ledger_annotation] += 1
    tops: dict[str, dict[int, int]] = {}
    for (name, i), gens in generations.items():
        tops.setdefault(name, {})[i] = max(gens)
    seen = Ledger(
        tuple(
            (name, ReplicaHistory(0, tuple((i, IndexHistory(seen=g)) for i, g in sorted(by_index.items()))))
            for name, by_index in sorted(tops.items())
        )
    )
    stamped = _stamped(stamps)
    return Told(names, generations, stamps, seen, stamped, seen.merge(stamped))


def retold(
    last: Told, names: tuple[str, ...], came: Sequence[PodView], went: Sequence[PodView]
) -> tuple[Told, Changes] | None:
    """retold: ``tell`` of the pods after ``came`` came and ``went`` went, made from ``last``
    (the pods before): the generations and stamps counted by delta, the ledgers patched, and
    what changed. None when a replica's pods came or all went: then only ``tell`` says."""
    if names != last.names:
        return None
    generations, stamps, touched = _counted(last, names, came, went)
    seen, cs = _seen_patched_ledger(last.seen, generations, touched)
    if cs is None:
        return None
    stamped = last.stamped
    if stamps.keys() != last.stamps.keys():  # a stamp came (a merge) or went (merge them all again)
        fresh = [s for s in stamps if s not in last.stamps]
        gone = last.stamps.keys() - stamps.keys()
        stamped = _stamped(stamps) if gone else stamped.merge(*(_parse_annotation(s) for s in fresh))
    ct = {} if stamped is last.stamped else _diff(stamped, last.stamped)
    ledger, changes = remerged(last.ledger, seen, stamped, cs, ct)
    return Told(names, generations, stamps, seen, stamped, ledger), changes


def _counted(
    last: Told, names: tuple[str, ...], came: Sequence[PodView], went: Sequence[PodView]
) -> tuple[dict[tuple[str, int], Counter[int]], Counter[str], dict[str, set[int]]]:
    """_counted: ``last``'s generations and stamps after ``came`` came and ``went`` went, and
    the indices whose generations moved."""
    generations, stamps = dict(last.generations), Counter(last.stamps)
    touched: dict[str, set[int]] = {}
    for pods, step in ((went, -1), (came, 1)):
        for p in pods:
            if p.replica in names and p.index is not None and p.index >= 0:
                key = (p.replica, p.index)
                gens = generations[key] = Counter(generations.get(key, ()))
                gens[p.generation] += step
                touched.setdefault(p.replica, set()).add(p.index)
            if p.ledger_annotation is not None:
                stamps[p.ledger_annotation] += step
    for name, indices in touched.items():  # only counts that moved: the others are positive
        for i in indices:
            if not (gens := +generations[(name, i)]):
                del generations[(name, i)]
            else:
                generations[(name, i)] = gens
    stamps = +stamps
    return generations, stamps, touched


def _seen_patched_ledger(
    seen: Ledger, generations: Mapping[tuple[str, int], Counter[int]], touched: Mapping[str, set[int]]
) -> tuple[Ledger, Changes]:
    """_seen_patched_ledger: the generations' ledger, patched at the ``touched`` indices (None
    changes: a replica came or went, only ``tell`` says what)."""
    if not touched:
        return seen, {}
    histories = dict(seen.replicas)
    for name, indices in touched.items():
        if name not in histories:
            return seen, None
        records = {}
        for i in indices:
            gens = generations.get((name, i))
            records[i] = IndexHistory(seen=max(gens)) if gens else None
        histories[name] = with_records(histories[name], records)
        if not histories[name]._by_index:
            return seen, None
    return Ledger(tuple(sorted(histories.items()))), {name: set(i) for name, i in touched.items()}


def _stamped(stamps: Iterable[str]) -> Ledger:
    """_stamped: the pods' stamps (their annotations), merged."""
    return Ledger().merge(*(_parse_annotation(s) for s in stamps))


def _diff(new: Ledger, old: Ledger) -> Changes:
    """_diff: which index records of ``new`` are not ``old``'s (for the small ledgers of stamps)."""
    a, b = dict(new.replicas), dict(old.replicas)
    if a.keys() != b.keys():
        return None
    out: dict[str, set[int]] = {}
    for name, h in a.items():
        if h is not b[name]:
            x, y = h._by_index, b[name]._by_index
            out[name] = {i for i in x.keys() | y.keys() if x.get(i) != y.get(i)}
    return out
