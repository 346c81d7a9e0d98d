"""The informer against the real apiserver: it lists, then watches; after a watch that ends as
410 Gone does it lists again and carries on watching; a Secret reaches it as metadata only."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any

import pytest

from aitj.controller.cache import owned_kind
from aitj.controller.informer import Delta, Gone, Informer, Kind, Sync
from aitj.core import api
from aitj.core.planner.types import ObjectKind, ObjectState
from tests.clusters import KubeCluster
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {api.LABEL_JOB: "job"}}, "data": {"k": "v"}}


class Loop:
    """Loop: an event loop in a thread of its own, collecting what an informer hands over."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.deltas: list[Delta[Any]] = []
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def sink(self, _kind: Kind[Any], batch: list[Delta[Any]]) -> None:
        self.deltas += batch

    def names(self) -> set[str]:
        """names: the objects as the deltas so far leave them."""
        seen: dict[str, bool] = {}
        for d in list(self.deltas):
            if isinstance(d, Sync):
                seen = {i.name: True for i in d.items}
            else:
                seen[d.item.name] = d.type != "DELETED"
        return {name for name, present in seen.items() if present}

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def test_the_informer_lists_again_after_410_and_keeps_watching(cluster: KubeCluster, namespace: str) -> None:
    # The apiserver's watch cache serves a watch from any old version (even after an etcd
    # compaction), so the 410 itself cannot be provoked here: the first watch is made to end
    # as a 410 does (watch_action's decision, tested in tests/unit/test_cache.py), and the
    # relist and the watch after it run against the real apiserver.
    cluster.core.create_namespaced_config_map(namespace, configmap("before"))
    loop = Loop()
    informer = Informer(cluster.new_api(), owned_kind(ObjectKind.CONFIGMAP), namespace, loop.sink)
    real_watch = informer._watch

    def expired_once(version: str) -> str:
        if informer.lists == 1:
            raise Gone()
        return real_watch(version)

    informer._watch = expired_once  # type: ignore[method-assign]
    informer.start(loop.loop)
    try:
        wait_for(lambda: informer.lists >= 2, 30, "a second listing after 410 Gone")
        assert "before" in loop.names()
        cluster.core.create_namespaced_config_map(namespace, configmap("after"))
        wait_for(lambda: "after" in loop.names(), 30, "the watch after the relist")
        cluster.core.delete_namespaced_config_map("before", namespace)
        wait_for(lambda: "before" not in loop.names(), 30, "a deletion seen by the watch")
    finally:
        informer.stop()
        loop.close()


def test_a_secret_reaches_the_informer_without_its_data(cluster: KubeCluster, namespace: str) -> None:
    cluster.core.create_namespaced_secret(
        namespace,
        {"metadata": {"name": "s", "labels": {api.LABEL_JOB: "job"}}, "stringData": {"key": "private"}},
    )
    seen: list[Any] = []
    kind = owned_kind(ObjectKind.SECRET)

    def spy_convert(obj: Any) -> ObjectState:
        seen.append(obj)
        return kind.convert(obj)

    spy = dataclasses.replace(kind, convert=spy_convert)
    informer = Informer(cluster.new_api(), spy, namespace, lambda k, d: None)
    informer._list()
    assert [o["metadata"]["name"] for o in seen] == ["s"]
    assert "data" not in seen[0] and "stringData" not in seen[0]
