"""The job's PodDisruptionBudgets are listed again every ``RELISTED`` seconds instead of
watched: the disruption controller rewrites a budget's status on every pod change of its job,
and no one reads it. What the operator writes is stored at once (write-through); a listing
kicks the job whose budget went (deleted by hand: made again), came, or changed in more than its
version, and leaves alone what the operator stored after the listing was taken. Against a real
apiserver: tests/e2e/test_foreign_objects.py (a budget deleted by hand is made again)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aitj.controller.cache import JOBS, NODES, PODS, RELISTED, InformerCache, owned_kind
from aitj.controller.informer import Informer, Sync
from aitj.controller.written import Written
from aitj.core import api
from aitj.core.planner.objects import ANNOTATION_WRITTEN
from aitj.core.planner.types import ObjectKind, ObjectRef
from tests.unit.test_cache import KEY, NS, Kicks, item, job, node, sync

PDB = owned_kind(ObjectKind.PDB)
REF = ObjectRef(ObjectKind.PDB, "job-trainer")


def budget(rv: int, *, uid: str = "uid-pdb", digest: str = "d1", name: str = "job-trainer") -> dict[str, Any]:
    meta = {
        "name": name,
        "namespace": NS,
        "uid": uid,
        "resourceVersion": str(rv),
        "labels": {api.LABEL_JOB: "job"},
        "annotations": {ANNOTATION_WRITTEN: digest},
        "ownerReferences": [{"uid": "uid-job", "controller": True}],
    }
    return {"kind": "PodDisruptionBudget", "metadata": meta}


def listing(version: int, *objs: dict[str, Any]) -> list[Any]:
    return [Sync([item(PDB, o) for o in objs], None, str(version))]


def synced(*budgets: dict[str, Any]) -> tuple[InformerCache, Kicks]:
    """synced: a synced cache whose budgets were listed at version 10."""
    kicks = Kicks()
    cache = InformerCache(kicks)
    cache._waiting = {(k.name, None) for k in (JOBS, PODS, NODES, PDB)}
    cache.apply(JOBS, sync(JOBS, job(5)))
    cache.apply(NODES, sync(NODES, node("n1", "True")))
    cache.apply(PODS, sync(PODS))
    cache.apply(PDB, listing(10, *budgets))
    assert cache.synced.is_set()
    kicks.clear()
    return cache, kicks


def versions(cache: InformerCache) -> dict[str, str]:
    return {name: i.resource_version for (_, name), i in cache.owned[ObjectKind.PDB].items.items()}


def test_budgets_are_listed_again_not_watched() -> None:
    assert PDB.relist_seconds == RELISTED[ObjectKind.PDB]
    assert all(owned_kind(k).relist_seconds is None for k in ObjectKind if k is not ObjectKind.PDB)


@pytest.mark.parametrize(
    ("listed", "kicked", "held"),
    [
        pytest.param([budget(14)], [], {"job-trainer": "14"}, id="its status alone moved: stored, no pass"),
        pytest.param([], [KEY], {}, id="deleted by hand: its job is planned (made again)"),
        pytest.param([budget(15, digest="d2")], [KEY], {"job-trainer": "15"}, id="edited by hand"),
        pytest.param([budget(16, uid="uid-new")], [KEY], {"job-trainer": "16"}, id="made again by someone"),
        pytest.param(
            [budget(14), budget(17, name="job-launcher")],
            [KEY],
            {"job-trainer": "14", "job-launcher": "17"},
            id="a new one under the job's label",
        ),
    ],
)
def test_what_a_listing_kicks(listed: list[dict[str, Any]], kicked: list[Any], held: dict[str, str]) -> None:
    cache, kicks = synced(budget(12))
    cache.apply(PDB, listing(20, *listed))
    assert kicks == kicked and versions(cache) == held


def test_a_budget_the_operator_wrote_after_the_listing_was_taken_stands() -> None:
    cache, kicks = synced(budget(12))
    cache.written(KEY, Written(owned=[(ObjectKind.PDB, budget(25, digest="d2"))]))  # rewritten
    cache.written(KEY, Written(owned=[(ObjectKind.PDB, budget(26, name="job-launcher"))]))  # made
    cache.apply(PDB, listing(20, budget(14)))  # taken before both writes
    assert kicks == [] and versions(cache) == {"job-trainer": "25", "job-launcher": "26"}
    assert REF in cache.snapshot(KEY).owned
    cache.apply(PDB, listing(30, budget(27, digest="d2"), budget(28, name="job-launcher")))
    assert kicks == [] and versions(cache) == {"job-trainer": "27", "job-launcher": "28"}


def test_a_budget_the_operator_deleted_stays_gone_until_a_listing_confirms_it() -> None:
    cache, kicks = synced(budget(12))
    cache.written(KEY, Written(gone_owned=[REF]))  # the job's end removed it
    cache.apply(PDB, listing(20, budget(14)))  # taken before the delete
    assert kicks == [] and versions(cache) == {}
    cache.apply(PDB, listing(30))
    assert kicks == [] and cache.owned[ObjectKind.PDB].gone == set()


def test_an_informer_of_a_kind_listed_again_never_watches() -> None:
    informer = Informer(Any, dataclasses.replace(PDB, relist_seconds=0.01), None, lambda kind, deltas: None)  # type: ignore[arg-type]
    lists: list[str] = []

    def list_once() -> str:
        lists.append("listed")
        if len(lists) == 3:
            informer._stop.set()
        return "5"

    def watch(version: str) -> str:
        raise AssertionError("watched")

    informer._list = list_once  # type: ignore[method-assign]
    informer._watch = watch  # type: ignore[method-assign]
    informer._run()
    assert lists == ["listed"] * 3
