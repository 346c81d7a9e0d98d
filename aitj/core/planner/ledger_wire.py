"""The restart ledger's status form, one replica's history at a time (aitj.core.planner.ledger,
``ReplicaHistory.wire``): written whole, or patched from the form of the history it was
patched from, where its index records changed.

Pure. Apart from the ledger so that it holds the histories only; a history is whatever has
the ledger's ``ReplicaHistory`` fields (``epoch``, ``indices``, ``rules``, ``excluded``,
``index``, ``_by_index``).

Per index, the newest generation seen is written run-length encoded, ``seenRuns``: ``[generation,
count]`` pairs in index order (-1: none seen; no trailing -1 run; equal neighbours merged, so equal
ledgers write equal forms). The dense list of one generation per index (``seen``), which the
previous release wrote, made a job of 4,096 trainers write 4,096 integers with every status
write, and the apiserver took 115-136 ms p50 over such a write against 13-23 ms with 8 (issue
26, F12, hack/statuscost.py); a job never restarted has one run. Readers take either
(``seen_of``): running clusters hold statuses in the old form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import groupby
from typing import Any

from aitj.core.api import MAX_REPLICAS
from aitj.core.planner.rulelog import excluded_to_json, rules_to_json
from aitj.core.wire import as_int, as_list

_SPARSE = ("ended", "succeeded", "stood", "recorded")


def wire(h: Any) -> dict[str, Any]:
    """wire: ``h``'s status form, every index written (see ``Ledger.to_json``)."""
    restarts = {str(i): [r.failed, r.restarts] for i, r in h.indices if r.restarts}
    size = max((i + 1 for i, r in h.indices if r.seen >= 0), default=0)
    seen = [h.index(i).seen for i in range(size)]
    sparse = {key: {str(i): getattr(r, key) for i, r in h.indices if getattr(r, key) >= 0} for key in _SPARSE}
    return _entry(h, restarts, seen, sparse)


def wire_patched(h: Any, base: Mapping[str, Any], changed: Iterable[int]) -> dict[str, Any]:
    """wire_patched: ``wire(h)``, made from ``base`` (that of the history ``h`` was patched
    from) where the records of the ``changed`` indices may differ; in the same order."""
    restarts, seen = dict(base.get("restarts", {})), seen_of(base)
    sparse = {key: dict(base.get(key, {})) for key in _SPARSE}
    grew: set[str] = set()
    for i in sorted(changed):
        r, k = h._by_index.get(i), str(i)
        if _put(restarts, k, [r.failed, r.restarts] if r is not None and r.restarts else None):
            grew.add("restarts")
        for key in _SPARSE:
            value = getattr(r, key) if r is not None else -1
            if _put(sparse[key], k, value if value >= 0 else None):
                grew.add(key)
        seen.extend([-1] * (i + 1 - len(seen)))
        seen[i] = r.seen if r is not None else -1
    while seen and seen[-1] < 0:
        seen.pop()
    by_index = lambda kv: int(kv[0])  # noqa: E731
    if "restarts" in grew:  # a key put before the last: in index order again, as ``wire`` writes
        restarts = dict(sorted(restarts.items(), key=by_index))
    sparse = {key: dict(sorted(d.items(), key=by_index)) if key in grew else d for key, d in sparse.items()}
    return _entry(h, restarts, seen, sparse)


def _put(d: dict[str, Any], key: str, value: Any) -> bool:
    """_put: ``d[key] = value`` (None: removed); True when ``key`` is new and not the last."""
    if value is None:
        d.pop(key, None)
        return False
    new = key not in d and bool(d) and int(next(reversed(d))) > int(key)
    d[key] = value
    return new


def _entry(
    h: Any, restarts: dict[str, Any], seen: list[int], sparse: Mapping[str, dict[str, int]]
) -> dict[str, Any]:
    """_entry: a replica's status form from its parts, in ``Ledger.to_json``'s order."""
    entry: dict[str, Any] = {"epoch": h.epoch}
    if restarts:
        entry["restarts"] = restarts
    if h.rules:
        entry["rules"] = rules_to_json(h.rules)
    if h.excluded:
        entry["excluded"] = excluded_to_json(h.excluded)
    if seen:
        entry["seenRuns"] = runs(seen)
    entry.update((key, d) for key, d in sparse.items() if d)
    return entry


def runs(seen: list[int]) -> list[list[int]]:
    """runs: ``seen`` (one generation per index) as ``[generation, count]`` pairs, equal
    neighbours merged. The runs' ends are found in C (``list.count`` for a list of one run,
    the common case; ``groupby`` else), so a list of thousands costs a loop over its runs: 3 us
    for 4,096 indices of one run, 45-80 for up to 40 runs (``map(ne, ...)`` over the list and
    its shift took 170)."""
    if not seen:
        return []
    if seen.count(seen[0]) == len(seen):
        return [[seen[0], len(seen)]]
    return [[g, len(list(run))] for g, run in groupby(seen)]


def expand(value: object) -> list[int]:
    """expand: the dense list of a ``seenRuns`` value (-1 where a run's generation is
    unreadable). A run without a readable count ends it: the indices after it are not known.
    At most ``MAX_REPLICAS`` indices: no replica has more, and a run's count is not trusted
    to size a list."""
    out: list[int] = []
    for item in as_list(value):
        pair = as_list(item)
        count = as_int(pair[1]) if len(pair) == 2 else None
        if count is None or count < 0:
            break
        gen = as_int(pair[0])
        out += [gen if gen is not None and gen >= 0 else -1] * min(count, MAX_REPLICAS - len(out))
    return out


def seen_of(e: Mapping[str, Any]) -> list[Any]:
    """seen_of: a replica's status form's dense ``seen`` list: from ``seenRuns`` when present,
    else the previous release's ``seen`` as it is (its items not yet read)."""
    if "seenRuns" in e:
        return expand(e["seenRuns"])
    return list(as_list(e.get("seen")))
