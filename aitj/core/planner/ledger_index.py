"""A replica history's index records, patched without copying them (aitj.core.planner.ledger).

Pure. A job of thousands of indices has a restart ledger whose histories a pass patches at an
index or two (a status write, a pod that came or went; aitj.core.planner.ledger_delta): copying
the history's dict and tuple of index records to change one was O(indices) per patch, four
patches a pass. ``IndexMap`` is that dict shared: the dict of a history patched from (never
changed) and the indices that differ from it, folded into a new dict once ``FOLD`` indices
differ (so a copy is paid once per ``FOLD`` changes, not once per change). A history made by
``patched`` keeps its records this way and sorts them into its ``indices`` tuple only when that
is read (``LazyIndices``), which a pass of the memo's does not do: it asks by index.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

FOLD = 64  # indices differing from the shared dict before it is copied with them
_MISSING: Any = object()


class IndexMap(Mapping[int, Any]):
    """IndexMap: ``base`` (shared, never changed) with the records of the indices in ``delta``
    replaced (None: removed); ``size`` records in all."""

    __slots__ = ("base", "delta", "size")

    def __init__(self, base: Mapping[int, Any], delta: dict[int, Any], size: int) -> None:
        self.base, self.delta, self.size = base, delta, size

    def get(self, i: int, default: Any = None) -> Any:
        found = self.delta.get(i, _MISSING)
        if found is _MISSING:
            return self.base.get(i, default)
        return default if found is None else found

    def __getitem__(self, i: int) -> Any:
        found = self.get(i, _MISSING)
        if found is _MISSING:
            raise KeyError(i)
        return found

    def __contains__(self, i: object) -> bool:
        return isinstance(i, int) and self.get(i, _MISSING) is not _MISSING

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[int]:
        return iter(self.flat())

    def items(self) -> Any:
        return self.flat().items()

    def flat(self) -> dict[int, Any]:
        """flat: the records as one dict."""
        out = dict(self.base)
        for i, record in self.delta.items():
            if record is None:
                out.pop(i, None)
            else:
                out[i] = record
        return out


def repatched(by_index: Mapping[int, Any], records: Mapping[int, Any]) -> Mapping[int, Any]:
    """repatched: ``by_index`` with the records of ``records``' indices replaced (None:
    removed), sharing what it shares; folded into one dict past ``FOLD`` changed indices."""
    if isinstance(by_index, IndexMap):
        base, delta, size = by_index.base, dict(by_index.delta), by_index.size
    else:
        base, delta, size = by_index, {}, len(by_index)
    for i, record in records.items():
        size += (record is not None) - (by_index.get(i) is not None)
        if base.get(i) is record:  # as in the shared dict again (or in neither)
            delta.pop(i, None)
        else:
            delta[i] = record
    out = IndexMap(base, delta, size)
    return out.flat() if len(delta) > FOLD else out


class LazyIndices:
    """LazyIndices: a history's ``indices`` tuple, sorted from its ``_by_index`` when first
    read, for the histories ``patched`` makes without one (a dataclass field's value in the
    instance's dict comes first: any other history has it there)."""

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return ()  # the field's default, as the class held it
        value = instance.__dict__["indices"] = tuple(sorted(instance._by_index.items()))
        return value


def patched(history: Any, changed: Mapping[int, Any], /, **meta: Any) -> Any:
    """patched: ``history`` (a ReplicaHistory) with the records of ``changed``' indices replaced
    (None: removed) and ``meta`` (epoch, records, rules, excluded) changed, made without copying
    its index records: its dict is shared (``repatched``), its tuple made when read, its restart
    count patched by the difference."""
    out = object.__new__(type(history))
    fields = {k: history.__dict__[k] for k in ("epoch", "records", "rules", "excluded")}
    fields.update(meta)
    if not changed:  # its records as they are, and what was found of them
        fields.update((k, history.__dict__[k]) for k in ("indices", "_by_index") if k in history.__dict__)
    by_index = history._by_index if changed else {}
    if changed:
        fields["_by_index"] = repatched(by_index, changed)
    count = history.__dict__.get("restart_count")
    if count is not None:
        for i, record in changed.items():
            had = by_index.get(i)
            count += (record.restarts if record is not None else 0) - (had.restarts if had is not None else 0)
        fields["restart_count"] = count
    out.__dict__.update(fields)
    return out
