"""The informer cache, fed by hand: listings and watch events land in the right stores, a change
kicks the job it concerns (only once synced, and only when it is news), the operator's own
writes are stored at once and their echoes dropped, a pod found gone stays gone until the
watch confirms it, and the watch's relist decision. The informers against a real apiserver:
tests/e2e/test_scale.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aitj.controller.cache import JOBS, NODES, OWNED_COLLECTIONS, PODS, InformerCache, Kicked, owned_kind
from aitj.controller.informer import (
    Action,
    Change,
    Delta,
    Item,
    Kind,
    Sync,
    _lines,
    continue_token,
    watch_action,
)
from aitj.controller.written import Seen, Written
from aitj.core import api
from aitj.core.observed import TRACKING_FINALIZER
from aitj.core.planner.types import ObjectKind, ObjectRef, ObjectState

NS = "default"
KEY = (NS, "job")


def pod(
    name: str, rv: int, *, node: str = "n1", job: str = "job", uid: str = "", **meta: Any
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": uid or f"uid-{name}",
            "resourceVersion": str(rv),
            "labels": {api.LABEL_JOB: job},
            "finalizers": [TRACKING_FINALIZER],
            **meta,
        },
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


def failed(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "status": {"phase": "Failed"}}


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    """ready: the pod Ready, with an IP: nothing its view (PodView) holds."""
    conditions = [{"type": "Ready", "status": "True"}]
    return {**obj, "status": {"phase": "Running", "podIP": "10.0.0.9", "conditions": conditions}}


def job(rv: int, name: str = "job") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": str(rv)}}


def node(name: str, ready: str, rv: int = 1, **conditions: str) -> dict[str, Any]:
    more = [{"type": t, "status": s} for t, s in conditions.items()]
    return {
        "metadata": {"name": name, "uid": name, "resourceVersion": str(rv)},
        "status": {"conditions": [{"type": "Ready", "status": ready}, *more]},
    }


def cordoned(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "spec": {"unschedulable": True}}


def tainted(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]}}


def item(kind: Kind[Any], obj: dict[str, Any]) -> Item[Any]:
    return Item.of(obj, kind.convert(obj))


def sync(kind: Kind[Any], *objs: dict[str, Any]) -> list[Delta[Any]]:
    return [Sync([item(kind, o) for o in objs], None)]


def change(kind: Kind[Any], type: str, obj: dict[str, Any]) -> list[Delta[Any]]:
    return [Change(type, item(kind, obj))]


class Kicks(list[tuple[str, str]]):
    """Kicks: the jobs kicked, in order, and (``seen``) the events each kick came with."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Kicked] = []

    def __call__(self, key: tuple[str, str], seen: Kicked) -> None:
        self.append(key)
        self.seen.append(seen)

    def clear(self) -> None:
        super().clear()
        self.seen.clear()


def synced_cache(*pods: dict[str, Any]) -> tuple[InformerCache, Kicks]:
    """synced_cache: every kind listed (one job, the given pods, two Ready nodes); no kicks yet."""
    kicks = Kicks()
    cache = InformerCache(kicks)
    cache._waiting = {(k.name, None) for k in (JOBS, PODS, NODES)}
    cache.apply(JOBS, sync(JOBS, job(5)))
    cache.apply(NODES, sync(NODES, node("n1", "True"), node("n2", "True")))
    assert not cache.synced.is_set()
    cache.apply(PODS, sync(PODS, *pods))
    assert cache.synced.is_set()
    kicks.clear()  # the listing's own kicks; the start-up plans every job anyway
    return cache, kicks


def test_nothing_kicks_before_every_kind_is_listed() -> None:
    kicks = Kicks()
    cache = InformerCache(kicks)
    cache._waiting = {("jobs", None), ("pods", None)}
    cache.apply(JOBS, sync(JOBS, job(1)))
    cache.apply(JOBS, change(JOBS, "MODIFIED", job(2)))
    assert kicks == [] and not cache.synced.is_set()


def test_a_snapshot_holds_the_job_its_pods_the_nodes_and_its_objects() -> None:
    cache, _ = synced_cache(pod("p-0", 10), pod("other-0", 11, job="other"))
    configmap = owned_kind(ObjectKind.CONFIGMAP)
    meta = {"name": "job-discovery", "namespace": NS, "uid": "c-1", "labels": {api.LABEL_JOB: "job"}}
    cache.apply(configmap, sync(configmap, {"metadata": meta}))
    snap = cache.snapshot(KEY)
    assert snap.body is not None and snap.body["metadata"]["resourceVersion"] == "5"
    assert [p.name for p in snap.pods] == ["p-0"]
    assert set(snap.nodes) == {"n1", "n2"}
    assert snap.owned == {ObjectRef(ObjectKind.CONFIGMAP, "job-discovery"): ObjectState(uid="c-1")}


def test_every_owned_kind_has_a_collection_and_is_listed_by_name_only() -> None:
    assert set(OWNED_COLLECTIONS) == set(ObjectKind)
    assert all(owned_kind(k).metadata_only for k in ObjectKind)
    assert len({owned_kind(k).name for k in ObjectKind}) == len(ObjectKind)  # one store each


@pytest.mark.parametrize(
    ("kind", "type", "obj", "kicked"),
    [
        pytest.param(PODS, "MODIFIED", failed(pod("p-0", 11)), [KEY], id="a pod's change kicks its job"),
        pytest.param(PODS, "MODIFIED", ready(pod("p-0", 11)), [], id="unless the planner cannot see it"),
        pytest.param(PODS, "MODIFIED", pod("p-0", 10), [], id="a change the cache holds does not"),
        pytest.param(PODS, "MODIFIED", pod("p-0", 9), [], id="nor an older one"),
        pytest.param(PODS, "DELETED", pod("p-0", 12), [KEY], id="a pod's deletion kicks its job"),
        pytest.param(JOBS, "MODIFIED", job(6), [KEY], id="a job's change kicks it"),
        pytest.param(NODES, "MODIFIED", node("n1", "True", 2), [], id="a heartbeat kicks nothing"),
        pytest.param(NODES, "MODIFIED", node("n1", "Unknown", 2), [KEY], id="readiness kicks the jobs on it"),
        pytest.param(NODES, "MODIFIED", node("n2", "False", 2), [], id="but not jobs elsewhere"),
        pytest.param(
            NODES, "MODIFIED", node("n1", "True", 2, KernelDeadlock="True"), [KEY], id="so does a condition"
        ),
        pytest.param(NODES, "MODIFIED", tainted(node("n1", "True", 2)), [KEY], id="and a taint"),
        pytest.param(NODES, "MODIFIED", cordoned(node("n1", "True", 2)), [KEY], id="and a cordon"),
    ],
)
def test_what_a_watch_event_kicks(kind: Kind[Any], type: str, obj: dict[str, Any], kicked: list[Any]) -> None:
    cache, kicks = synced_cache(pod("p-0", 10))
    cache.apply(kind, change(kind, type, obj))
    assert kicks == kicked


@pytest.mark.parametrize(
    ("kind", "type", "obj", "seen"),
    [
        pytest.param(
            PODS, "MODIFIED", failed(pod("p-0", 11)), (Seen("uid-p-0", "11"),), id="a pod's change: the event"
        ),
        pytest.param(
            PODS, "DELETED", pod("p-0", 12), (Seen("uid-p-0", "12", deleted=True),), id="a pod's deletion"
        ),
        pytest.param(JOBS, "MODIFIED", job(6), (Seen("uid-job", "6"),), id="the job's change"),
        pytest.param(JOBS, "DELETED", job(6), None, id="the job's deletion: no echo to tell"),
        pytest.param(NODES, "MODIFIED", node("n1", "Unknown", 2), None, id="a node's: none"),
    ],
)
def test_a_kick_says_which_events_of_the_job_and_its_pods_made_it(
    kind: Kind[Any], type: str, obj: dict[str, Any], seen: Kicked
) -> None:
    """What a running pass needs to tell its own echoes from news (written.confirms)."""
    cache, kicks = synced_cache(pod("p-0", 10))
    cache.apply(kind, change(kind, type, obj))
    assert kicks == [KEY] and kicks.seen == [seen]


def test_a_batch_s_events_of_one_job_kick_it_once_with_all_of_them() -> None:
    cache, kicks = synced_cache(pod("p-0", 10), pod("p-1", 10))
    cache.apply(
        PODS, [*change(PODS, "MODIFIED", failed(pod("p-0", 11))), *change(PODS, "DELETED", pod("p-1", 12))]
    )
    assert kicks == [KEY] and kicks.seen == [(Seen("uid-p-0", "11"), Seen("uid-p-1", "12", deleted=True))]
    cache.apply(PODS, [*change(PODS, "MODIFIED", failed(pod("p-0", 13))), *sync(PODS, pod("p-0", 14))])
    assert kicks.seen[1:] == [None]  # a relist among them: any change, no echo to tell


def test_only_the_deletion_of_an_owned_object_kicks() -> None:
    cache, kicks = synced_cache()
    service = owned_kind(ObjectKind.SERVICE)
    obj = {
        "metadata": {
            "name": "job",
            "namespace": NS,
            "uid": "s",
            "resourceVersion": "3",
            "labels": {api.LABEL_JOB: "job"},
        }
    }
    cache.apply(service, change(service, "ADDED", obj))
    assert kicks == []
    cache.apply(service, change(service, "DELETED", obj))
    assert kicks == [KEY]


def test_a_status_write_is_planned_from_at_once_and_its_echo_is_dropped() -> None:
    cache, kicks = synced_cache()
    cache.written(KEY, Written(jobs=[job(8)]))
    assert cache.snapshot(KEY).body["metadata"]["resourceVersion"] == "8"  # type: ignore[index]
    cache.apply(JOBS, change(JOBS, "MODIFIED", job(6)))  # someone's earlier change, late
    cache.apply(JOBS, change(JOBS, "MODIFIED", job(8)))  # the echo of the write
    assert cache.snapshot(KEY).body["metadata"]["resourceVersion"] == "8"  # type: ignore[index]
    assert kicks == []
    cache.apply(JOBS, change(JOBS, "MODIFIED", job(9)))  # news
    assert kicks == [KEY]


def test_a_pod_released_during_a_graceful_deletion_stays_visible_untracked() -> None:
    cache, _ = synced_cache(pod("p-0", 10))
    going = pod(
        "p-0", 13, deletionTimestamp="2026-01-01T00:05:00Z", deletionGracePeriodSeconds=300, finalizers=[]
    )
    cache.written(KEY, Written(pods=[going]))
    [view] = cache.snapshot(KEY).pods
    assert view.deleting and not view.tracked  # the planner may still force-delete it


def test_a_created_pod_is_in_the_next_snapshot() -> None:
    cache, _ = synced_cache()
    cache.written(KEY, Written(pods=[pod("p-1", 20)]))
    assert [p.name for p in cache.snapshot(KEY).pods] == ["p-1"]


@pytest.mark.parametrize(
    "written",
    [
        pytest.param(
            Written(pods=[pod("p-0", 13, deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[])]),
            id="released",
        ),
        pytest.param(Written(gone_pods=["p-0"]), id="found gone (404)"),
    ],
)
def test_a_pod_let_go_is_not_released_again_until_the_watch_confirms_it(written: Written) -> None:
    cache, kicks = synced_cache(pod("p-0", 10))
    cache.written(KEY, written)
    assert cache.snapshot(KEY).pods == []
    cache.apply(PODS, change(PODS, "MODIFIED", pod("p-0", 12)))  # late news of it
    assert cache.snapshot(KEY).pods == [] and kicks == []
    cache.apply(PODS, change(PODS, "DELETED", pod("p-0", 14)))
    assert cache.pods.gone == set()


def test_a_relist_replaces_the_kind_and_kicks_what_changed() -> None:
    cache, kicks = synced_cache(pod("p-0", 10), pod("q-0", 10, job="other"), pod("r-0", 10, job="third"))
    cache.apply(PODS, sync(PODS, pod("p-0", 10), pod("q-0", 15, job="other"), pod("s-0", 16, job="fourth")))
    assert sorted(kicks) == [(NS, "fourth"), (NS, "other"), (NS, "third")]
    assert cache.snapshot((NS, "third")).pods == []


@pytest.mark.parametrize(
    ("event", "action", "version"),
    [
        pytest.param({"type": "ADDED", "object": job(3)}, Action.APPLY, "3", id="a change is applied"),
        pytest.param({"type": "BOOKMARK", "object": job(7)}, Action.BOOKMARK, "7", id="a bookmark moves on"),
        pytest.param(
            {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
            Action.RELIST,
            "",
            id="410 Gone relists",
        ),
        pytest.param({"type": "ERROR", "object": {"code": 500}}, Action.RELIST, "", id="so does any error"),
    ],
)
def test_the_relist_decision(event: dict[str, Any], action: Action, version: str) -> None:
    assert watch_action(event) == (action, version)


def test_watch_lines_are_split_across_chunks() -> None:
    class Response:
        def stream(self, amt: int, decode_content: bool) -> list[bytes]:
            return [b'{"a":', b'1}\n{"b"', b":2}\n\n", b'{"c":3}']

    assert list(_lines(Response())) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_the_collection_paths() -> None:
    assert PODS.path(None) == "/api/v1/pods"
    assert PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert NODES.path("ns") == "/api/v1/nodes"
    assert JOBS.path("ns") == f"/apis/{api.GROUP}/{api.VERSION}/namespaces/ns/{api.PLURAL}"


def test_the_cache_is_synced_on_an_event_loop() -> None:
    async def main() -> bool:
        cache, _ = synced_cache()
        await asyncio.wait_for(cache.synced.wait(), 1)
        return True

    assert asyncio.run(main())


@pytest.mark.parametrize(
    ("body", "token"),
    [
        pytest.param(
            b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"eyJ2Ijo=",'
            b'"remainingItemCount":3},"items":[{"metadata":{"continue":"no"}}]}',
            "eyJ2Ijo=",
            id="the token of a page with more to come",
        ),
        pytest.param(
            b'{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"continue":"no"}}]}',
            "",
            id="none on the last page, whatever the items hold",
        ),
    ],
)
def test_the_continue_token_is_read_off_the_head_of_a_page(body: bytes, token: str) -> None:
    assert continue_token(body) == token


def test_the_continue_token_of_a_custom_resource_list_is_at_its_end() -> None:
    body = (
        b'{"apiVersion":"v1","items":[{"metadata":{"name":"a","labels":{"x":"y"}}}],"kind":"L",'
        b'"metadata":{"continue":"tok","remainingItemCount":1,"resourceVersion":"5"}}'
    )
    assert continue_token(body) == "tok"


def owned_body(name: str, uid: str, *, label: bool = True, controller: str = "") -> dict[str, Any]:
    """owned_body: an object other than a pod as a create or the read after AlreadyExists
    returns it (metadata only)."""
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid, "resourceVersion": "7"}
    if label:
        meta["labels"] = {api.LABEL_JOB: "job"}
    if controller:
        meta["ownerReferences"] = [{"uid": controller, "controller": True}]
    return {"metadata": meta}


def test_an_object_held_by_another_is_in_the_snapshot_until_the_job_s_own_replaces_it() -> None:
    cache, kicks = synced_cache()
    ref = ObjectRef(ObjectKind.CONFIGMAP, "job-discovery")
    # The read after AlreadyExists: a user's ConfigMap, without the job's label (no watch shows it).
    cache.written(KEY, Written(owned=[(ObjectKind.CONFIGMAP, owned_body(ref.name, "theirs", label=False))]))
    assert cache.snapshot(KEY).owned == {ref: ObjectState(uid="theirs", resource_version="7")}
    # The user deleted it; the probe's create made the job's own.
    mine = owned_body(ref.name, "mine", controller="uid-job")
    cache.written(KEY, Written(owned=[(ObjectKind.CONFIGMAP, mine)]))
    assert cache.snapshot(KEY).owned == {
        ref: ObjectState(uid="mine", resource_version="7", controller="uid-job")
    }
    assert cache.held == {} and kicks == []


def test_a_deleted_job_s_secret_and_the_objects_held_under_its_names_are_forgotten() -> None:
    # Secrets are not watched: no DELETED event will ever remove the job's; its job's does.
    cache, _ = synced_cache()
    secret = (ObjectKind.SECRET, owned_body("job-ssh", "s-1", controller="uid-job"))
    held = (ObjectKind.PDB, owned_body("job-trainer", "theirs", label=False))
    cache.written(KEY, Written(owned=[secret, held]))
    assert set(cache.snapshot(KEY).owned) == {
        ObjectRef(ObjectKind.SECRET, "job-ssh"),
        ObjectRef(ObjectKind.PDB, "job-trainer"),
    }
    cache.apply(JOBS, change(JOBS, "DELETED", job(9)))
    assert cache.snapshot(KEY).owned == {}
    assert cache.owned[ObjectKind.SECRET].items == {} and cache.held == {}
