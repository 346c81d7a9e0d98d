"""What an informer's thread hands the event loop, fed watch events by hand: the echo of the
operator's own write (the cache holds that version already) is dropped in the thread, but not
while something it handed over is still to be applied (a relist could take the store back);
a deletion always goes; a new version of an owned object that moves only its version (a
PodDisruptionBudget's status) waits without waking the loop, and a pass's snapshot takes it
in; any other change of it wakes the loop, in order. The cache's side: tests/unit/test_cache.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aitj.controller.cache import JOBS, NODES, PODS, InformerCache, owned_kind
from aitj.controller.informer import Informer
from aitj.controller.written import Written
from aitj.core.planner.objects import ANNOTATION_WRITTEN
from aitj.core.planner.types import ObjectKind, ObjectRef
from tests.unit.test_cache import KEY, Kicks, job, node, owned_body, pod, sync

PDB = owned_kind(ObjectKind.PDB)
REF = ObjectRef(ObjectKind.PDB, "job")


class Loop:
    """Loop: the event loop as an informer's thread sees it: the hand-overs asked for, run when
    ``run`` says."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        self.calls.append(fn)

    def run(self) -> int:
        calls, self.calls = self.calls, []
        for fn in calls:
            fn()
        return len(calls)


def wired() -> tuple[InformerCache, dict[str, Informer[Any]], Loop, Kicks]:
    """wired: a synced cache (a job, its pod p-0 at version 10, a node, its budget at version 7)
    with its informers, whose threads are the test's calls to ``_event``."""
    kicks = Kicks()
    cache = InformerCache(kicks)
    loop = Loop()
    informers = {i.kind.name: i for i in cache.informers_for(Any, [])}  # type: ignore[arg-type]
    for informer in informers.values():
        informer._loop = loop  # type: ignore[assignment]
    cache._waiting = {(k.name, None) for k in (JOBS, PODS, NODES, PDB)}
    cache.apply(JOBS, sync(JOBS, job(5)))
    cache.apply(NODES, sync(NODES, node("n1", "True")))
    cache.apply(PDB, sync(PDB, owned_body("job", "uid-pdb", controller="uid-job")))
    cache.apply(PODS, sync(PODS, pod("p-0", 10)))
    assert cache.synced.is_set()
    kicks.clear()
    return cache, informers, loop, kicks


def budget(rv: int, **annotations: str) -> dict[str, Any]:
    body = owned_body("job", "uid-pdb", controller="uid-job")
    body["metadata"].update(resourceVersion=str(rv), annotations=annotations)
    return body


def event(type: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": type, "object": obj}


def test_the_echo_of_the_operator_s_own_write_is_dropped_in_the_thread() -> None:
    cache, informers, loop, kicks = wired()
    pods = informers[PODS.name]
    cache.written(KEY, Written(pods=[pod("p-0", 11)]))  # the operator's patch, stored at once
    assert pods._event(event("MODIFIED", pod("p-0", 11))) == "11"  # its echo
    assert not pods._pending and loop.run() == 0
    pods._event(event("MODIFIED", pod("p-0", 12, node="n2")))  # news
    assert loop.run() == 1 and cache.pods.items[("default", "p-0")].resource_version == "12"
    assert kicks == [KEY]


def test_an_echo_is_handed_over_while_the_thread_s_last_hand_over_is_not_applied() -> None:
    cache, informers, loop, _ = wired()
    pods = informers[PODS.name]
    cache.written(KEY, Written(pods=[pod("p-0", 11)]))
    pods._post(sync(PODS, pod("p-0", 9))[0])  # a relist, not yet applied: it takes p-0 back to 9
    pods._event(event("MODIFIED", pod("p-0", 11)))
    assert len(pods._pending) == 2
    loop.run()
    assert cache.pods.items[("default", "p-0")].resource_version == "11"


def test_a_deletion_is_handed_over_even_at_the_version_held() -> None:
    cache, informers, loop, kicks = wired()
    informers[PODS.name]._event(event("DELETED", pod("p-0", 10)))
    assert loop.run() == 1 and ("default", "p-0") not in cache.pods.items and kicks == [KEY]


def test_a_budget_s_status_waits_for_the_next_snapshot_without_waking_the_loop() -> None:
    cache, informers, loop, kicks = wired()
    pdbs = informers[PDB.name]
    pdbs._event(event("MODIFIED", budget(8)))
    pdbs._event(event("MODIFIED", budget(9)))
    assert len(pdbs._pending) == 2 and loop.run() == 0
    assert cache.snapshot(KEY).owned[REF].resource_version == "9"  # taken in by the snapshot
    assert not pdbs._pending and loop.run() == 0 and kicks == []


def test_any_other_change_of_a_budget_wakes_the_loop_in_order() -> None:
    cache, informers, loop, kicks = wired()
    pdbs = informers[PDB.name]
    other = {ANNOTATION_WRITTEN: "other"}
    pdbs._event(event("MODIFIED", budget(8)))  # waits
    pdbs._event(event("MODIFIED", budget(9, **other)))  # a new fingerprint: wakes, both go
    assert loop.run() == 1 and cache.owned[ObjectKind.PDB].items[("default", "job")].value.digest == "other"
    pdbs._event(event("MODIFIED", budget(10, **other)))  # waits
    assert pdbs._pending and loop.run() == 0
    pdbs._event(event("DELETED", budget(10, **other)))
    assert loop.run() == 1 and REF not in cache.snapshot(KEY).owned and kicks == [KEY]
