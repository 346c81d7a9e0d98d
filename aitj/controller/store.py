"""One kind's objects as the cache holds them (``Store``), by (namespace, name) and by job.

By job, a store keeps the items and their values apart (``by_job``, ``values``), in the same
order, so that a pass's snapshot of a job of thousands of pods is two copies made in C (the
list of views and the views by name), not a loop over its items; and, for pods, the views by
slot (``slot_of``: replica and index), so that what a few slots hold is found without looking
through the job's every pod (a recovery's awaited pods).

Changed on the event loop only (aitj.controller.cache); ``holds`` and ``only_version`` are read
from an informer's thread (reads only). Versions are compared as numbers when both are numbers
(etcd revisions), which is what lets an echo be told from news.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from aitj.controller.informer import Item

JobKey = tuple[str, str]  # (namespace, name)
T = TypeVar("T")


def _newer(new: str, old: str) -> bool:
    """_newer: ``new`` is a later resourceVersion than ``old`` (unknown order: assume so)."""
    if new.isdigit() and old.isdigit():
        return int(new) > int(old)
    return new != old


class Store(Generic[T]):
    """Store: one kind's items by (namespace, name), and by job for the kinds a job owns."""

    def __init__(
        self,
        job_of: Callable[[Item[T]], JobKey | None],
        slot_of: Callable[[T], Hashable | None] | None = None,
    ) -> None:
        self.items: dict[tuple[str, str], Item[T]] = {}
        self.by_job: dict[JobKey, dict[str, Item[T]]] = {}
        self.values: dict[JobKey, dict[str, T]] = {}  # by_job's values, in its order
        # by job, by slot (``slot_of``, when given; None: in no slot), the values there by name
        self.slots: dict[JobKey, dict[Hashable, dict[str, T]]] = {}
        self.gone: set[str] = set()  # uids found gone by the operator's own calls
        self.job_of = job_of
        self.slot_of = slot_of

    def put(self, item: Item[T]) -> bool:
        """put stores ``item`` unless the store holds that object at this version or later;
        True when it changed anything."""
        old = self.items.get((item.namespace, item.name))
        if item.uid in self.gone:
            return False
        if (
            old is not None
            and old.uid == item.uid
            and not _newer(item.resource_version, old.resource_version)
        ):
            return False
        self._drop(old)
        self.items[(item.namespace, item.name)] = item
        job = self.job_of(item)
        if job is not None:
            self.by_job.setdefault(job, {})[item.name] = item
            self.values.setdefault(job, {})[item.name] = item.value
            if self.slot_of is not None and (slot := self.slot_of(item.value)) is not None:
                self.slots.setdefault(job, {}).setdefault(slot, {})[item.name] = item.value
        return True

    def holds(self, meta: Mapping[str, Any]) -> bool:
        """holds (asked from an informer's thread: reads only): ``put`` would drop the object
        of ``meta``, as the store has it at this version or later, or its uid is gone."""
        uid = str(meta.get("uid") or "")
        old = self.items.get((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
        if old is None or old.uid != uid:
            return uid in self.gone
        return not _newer(str(meta.get("resourceVersion") or ""), old.resource_version)

    def only_version(self, item: Item[Any]) -> bool:
        """only_version (from an informer's thread: reads only): of an owned object, ``item``
        differs from the one stored in its version alone (a budget's status changed)."""
        old: Item[Any] | None = self.items.get((item.namespace, item.name))
        return old is not None and _facts(old) == _facts(item)

    def remove(self, namespace: str, name: str, uid: str = "", *, confirmed: bool = True) -> bool:
        """remove forgets an object; ``confirmed`` False (the operator's own call found it gone)
        also remembers its uid, so the watch's late news of it does not bring it back."""
        old = self.items.get((namespace, name))
        if not confirmed and uid:
            self.gone.add(uid)
        elif uid:
            self.gone.discard(uid)
        if old is None or (uid and old.uid != uid):
            return False
        self._drop(old)
        return True

    def replace(self, items: Iterable[Item[T]], namespace: str | None) -> set[JobKey]:
        """replace: a new listing of ``namespace`` (None: all); returns the jobs that changed."""
        before = {k: v for k, v in self.items.items() if namespace is None or k[0] == namespace}
        for previous in before.values():
            self._drop(previous)
        self.gone.clear()
        changed: set[JobKey] = set()
        for item in items:
            self.put(item)
            old = before.pop((item.namespace, item.name), None)
            if old is None or old.resource_version != item.resource_version:
                for job in (self.job_of(item), self.job_of(old) if old is not None else None):
                    if job is not None:
                        changed.add(job)
        changed |= {k for k in map(self.job_of, before.values()) if k is not None}
        return changed

    def relisted(self, items: Iterable[Item[T]], namespace: str | None, version: str) -> set[JobKey]:
        """relisted: a new listing of ``namespace`` (None: all), taken at ``version``, of an owned
        kind listed instead of watched (``Kind.relist_seconds``). An object stored since (the
        operator's own write, newer than the listing) stands, and one the operator found gone
        that the listing still shows stays gone. Returns the jobs whose object went or came,
        or changed in more than its version (a budget's status is news to no one)."""
        listed = {(i.namespace, i.name): i for i in items}
        self.gone &= {i.uid for i in listed.values()}  # the rest: gone as the listing confirms
        changed: set[JobKey | None] = set()
        for key, old in [(k, v) for k, v in self.items.items() if namespace is None or k[0] == namespace]:
            new = listed.pop(key, None)
            if _since(old, version):
                continue
            self._drop(old)
            if new is None or not self.put(new):
                changed.add(self.job_of(old))
            elif _facts(new) != _facts(old):
                changed |= {self.job_of(old), self.job_of(new)}
        changed |= {self.job_of(new) for new in listed.values() if self.put(new)}
        return {job for job in changed if job is not None}

    def of_job(self, key: JobKey) -> list[T]:
        """of_job: the values of the job's objects."""
        return list(self.values.get(key, {}).values())

    def named(self, key: JobKey) -> dict[str, T]:
        """named: the values of the job's objects by name (a copy: the store changes on)."""
        return dict(self.values.get(key, {}))

    def in_slots(self, key: JobKey, slots: Iterable[Hashable]) -> list[T]:
        """in_slots: the values of the job's objects in ``slots`` (``slot_of``), slot by slot."""
        held = self.slots.get(key, {})
        return [value for slot in slots for value in held.get(slot, {}).values()]

    def _drop(self, old: Item[T] | None) -> None:
        """_drop takes ``old`` out of both maps."""
        if old is None:
            return
        self.items.pop((old.namespace, old.name), None)
        job = self.job_of(old)
        if job is not None:
            entries = self.by_job.get(job)
            if entries is not None and entries.get(old.name) is old:
                del entries[old.name]
                del self.values[job][old.name]
                if not entries:
                    del self.by_job[job]
                    del self.values[job]
                self._unslot(job, old)

    def _unslot(self, job: JobKey, old: Item[T]) -> None:
        """_unslot takes ``old`` out of its slot."""
        if self.slot_of is None or (slot := self.slot_of(old.value)) is None:
            return
        held = self.slots.get(job, {})
        there = held.get(slot)
        if there is not None and there.get(old.name) is old.value:
            del there[old.name]
            if not there:
                del held[slot]
                if not held:
                    del self.slots[job]


def _facts(item: Item[Any]) -> tuple[Any, ...]:
    """_facts: of an owned object, what the planner reads besides its version."""
    return (item.uid, item.labels, item.value.controller, item.value.digest)


def _since(item: Item[Any], version: str) -> bool:
    """_since: ``item`` was stored after a listing taken at ``version`` (both known as numbers)."""
    return version.isdigit() and item.resource_version.isdigit() and int(item.resource_version) > int(version)
