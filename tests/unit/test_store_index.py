"""The store's indexes of a job's objects (``Store.values``, ``named``, ``in_slots``) are what
its items say, after any sequence of puts, removes, relists and write-throughs (issue 26, F13:
a pass's snapshot and a recovery's awaited pods are read from them instead of looping over the
job's items). Random sequences, each index checked against the one made whole after every step."""

from __future__ import annotations

import random
from typing import Any

import pytest

from aitj.controller.cache import PODS, InformerCache
from aitj.controller.informer import Change, Item, Sync
from aitj.controller.store import JobKey
from aitj.controller.written import Written
from aitj.core import api
from aitj.core.observed import PodView

NS = "default"
JOBS = ["a", "b"]


def pod(rng: random.Random, name: str, rv: int) -> dict[str, Any]:
    labels = {api.LABEL_JOB: rng.choice(JOBS)}
    if rng.random() < 0.9:  # most of them in a slot; some with no index label
        labels[api.LABEL_REPLICA] = rng.choice(["trainer", "master"])
        labels[api.LABEL_INDEX] = str(rng.randrange(3))
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}-{rng.randrange(2)}",  # sometimes another pod of that name
            "resourceVersion": str(rv),
            "labels": labels,
        },
        "spec": {"nodeName": rng.choice(["n1", "n2"])},
        "status": {"phase": rng.choice(["Pending", "Running", "Failed"])},
    }


def check(cache: InformerCache) -> None:
    store = cache.pods
    keys: set[JobKey] = {(NS, j) for j in JOBS}
    for key in keys:
        items = store.by_job.get(key, {})
        assert store.named(key) == {name: item.value for name, item in items.items()}
        assert list(store.named(key)) == list(items)  # the same order: the pass's views' order
        assert store.of_job(key) == [item.value for item in items.values()]
        slots = {
            (v.replica, v.index) for v in store.of_job(key) if v.replica is not None and v.index is not None
        }
        for slot in [*slots, ("trainer", 9)]:
            whole = [item.value for item in items.values() if (item.value.replica, item.value.index) == slot]
            assert store.in_slots(key, [slot]) == whole
        snap = cache.snapshot(key)
        assert list(snap.pods) == store.of_job(key) and snap.by_name() == store.named(key)
    assert set(store.values) == set(store.by_job) and set(store.slots) <= set(store.by_job)


@pytest.mark.parametrize("seed", range(200))
def test_the_store_s_indexes_follow_its_items(seed: int) -> None:
    rng = random.Random(seed)
    cache = InformerCache()
    names = [f"p{i}" for i in range(8)]
    for rv in range(1, 61):
        step = rng.random()
        name = rng.choice(names)
        if step < 0.5:  # a watch event: added or modified, or deleted
            body = pod(rng, name, rv if rng.random() < 0.9 else rv - 5)
            kind = "DELETED" if rng.random() < 0.2 else "MODIFIED"
            cache.apply(PODS, [Change(kind, Item.of(body, PodView.from_dict(body)))])
        elif step < 0.75:  # the operator's own call: a pod written through, or found gone
            body = pod(rng, name, rv)
            cache.written(
                (NS, "a"), Written(pods=[body]) if rng.random() < 0.7 else Written(gone_pods=[name])
            )
        else:  # a relist of some of them
            bodies = [pod(rng, n, rv) for n in rng.sample(names, rng.randrange(len(names)))]
            cache.apply(PODS, [Sync([Item.of(b, PodView.from_dict(b)) for b in bodies], NS, str(rv))])
        check(cache)
