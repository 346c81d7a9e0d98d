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
    seen = runs([h.index(i).seen for i in range(size)])
    sparse = {key: {str(i): getattr(r, key) for i, r in h.indices if getattr(r, key) >= 0} for key in _SPARSE}
    return _entry(h, restarts, seen, sparse)


def wire_patched(h: Any, base: Mapping[str, Any], changed: Iterable[int]) -> dict[str, Any]:
    """wire_patched: ``wire(h)``, made from ``base`` (that of the history ``h`` was patched
    from) where the records of the ``changed`` indices may differ; in the same order."""
    restarts = dict(base.get("restarts", {}))
    base_runs = base.get("seenRuns", [])  # ``base`` is a ``wire`` form: never the dense ``seen``
    seen: dict[int, int] = {}
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
        seen[i] = r.seen if r is not None else -1
    by_index = lambda kv: int(kv[0])  # noqa: E731
    if "restarts" in grew:  # a key put before the last: in index order again, as ``wire`` writes
        restarts = dict(sorted(restarts.items(), key=by_index))
    sparse = {key: dict(sorted(d.items(), key=by_index)) if key in grew else d for key, d in sparse.items()}
    return _entry(h, restarts, _patch_runs(base_runs, seen) if seen else list(base_runs), sparse)


def _put(d: dict[str, Any], key: str, value: Any) -> bool:
    """_put: ``d[key] = value`` (None: removed); True when ``key`` is new and not the last."""
    if value is None:
        d.pop(key, None)
        return False
    new = key not in d and bool(d) and int(next(reversed(d))) > int(key)
    d[key] = value
    return new


def _entry(
    h: Any, restarts: dict[str, Any], seen: list[list[int]], sparse: Mapping[str, dict[str, int]]
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
        entry["seenRuns"] = seen
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


def _patch_runs(base: list[list[int]], updates: Mapping[int, int]) -> list[list[int]]:
    """_patch_runs: ``runs(d)`` where ``d`` is ``expand(base)`` with ``d[i] = g`` for each
    ``i: g`` of ``updates``, made a run at a time (a job's runs are few; its indices are not)."""
    out: list[list[int]] = []

    def push(g: int, count: int) -> None:
        if count <= 0:
            return
        if out and out[-1][0] == g:
            out[-1] = [g, out[-1][1] + count]
        else:
            out.append([g, count])

    todo, pos, k = sorted(updates.items()), 0, 0
    for g, count in [*base, [-1, max(0, todo[-1][0] + 1 - sum(c for _, c in base))]]:
        end = pos + count
        while k < len(todo) and todo[k][0] < end:
            i, new = todo[k]
            push(g, i - pos)
            push(new, 1)
            pos, k = i + 1, k + 1
        push(g, end - pos)
        pos = end
    while out and out[-1][0] < 0:
        out.pop()
    return out


def read_runs(value: object) -> list[tuple[int, int]]:
    """read_runs: a ``seenRuns`` value's ``(generation, count)`` pairs as ``expand`` reads them
    (-1: unreadable generation; stopped at a run without a readable count, and at
    ``MAX_REPLICAS`` indices)."""
    out: list[tuple[int, int]] = []
    total = 0
    for item in as_list(value):
        pair = as_list(item)
        count = as_int(pair[1]) if len(pair) == 2 else None
        if count is None or count < 0:
            break
        gen = as_int(pair[0])
        count = min(count, MAX_REPLICAS - total)
        total += count
        out.append((gen if gen is not None and gen >= 0 else -1, count))
    return out


def runs_diff(old: object, new: object) -> list[tuple[int, int, int]]:
    """runs_diff: where two ``seenRuns`` values' dense lists differ, as ``(start, end,
    generation in new)`` (-1: none there), found a run at a time."""
    a, b = read_runs(old), read_runs(new)
    len_a, len_b = sum(c for _, c in a), sum(c for _, c in b)
    size = max(len_a, len_b)
    a.append((-1, size - len_a))
    b.append((-1, size - len_b))
    out: list[tuple[int, int, int]] = []
    i = j = pos = 0
    left_a, left_b = a[0][1], b[0][1]
    while pos < size:
        while left_a == 0:
            i += 1
            left_a = a[i][1]
        while left_b == 0:
            j += 1
            left_b = b[j][1]
        step = min(left_a, left_b)
        if a[i][0] != b[j][0]:
            out.append((pos, pos + step, b[j][0]))
        pos, left_a, left_b = pos + step, left_a - step, left_b - step
    return out


def expand(value: object) -> list[int]:
    """expand: the dense list of a ``seenRuns`` value, as ``read_runs`` reads its runs (-1 where
    a run's generation is unreadable; a run without a readable count ends it: the indices after
    it are not known; at most ``MAX_REPLICAS`` indices: no replica has more, and a run's count
    is not trusted to size a list)."""
    out: list[int] = []
    for gen, count in read_runs(value):
        out += [gen] * count
    return out


def seen_of(e: Mapping[str, Any]) -> list[Any]:
    """seen_of: a replica's status form's dense ``seen`` list: from ``seenRuns`` when present,
    else the previous release's ``seen`` as it is (its items not yet read)."""
    if "seenRuns" in e:
        return expand(e["seenRuns"])
    return list(as_list(e.get("seen")))
