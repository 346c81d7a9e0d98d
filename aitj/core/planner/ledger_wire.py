"""The restart ledger's status form, one replica's history at a time (aitj.core.planner.ledger,
``ReplicaHistory.wire``): written whole, or patched from the form of the history it was
patched from, where its index records changed.

Pure. Apart from the ledger so that it holds the histories only; a history is whatever has
the ledger's ``ReplicaHistory`` fields (``epoch``, ``indices``, ``rules``, ``excluded``,
``index``, ``_by_index``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aitj.core.planner.rulelog import excluded_to_json, rules_to_json

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
    restarts, seen = dict(base.get("restarts", {})), list(base.get("seen", []))
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
        entry["seen"] = seen
    entry.update((key, d) for key, d in sparse.items() if d)
    return entry
