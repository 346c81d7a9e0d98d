"""The controller's view of the cluster: what a pass's snapshot is read from.

Everything the planner is told about the world comes through ``Cache.snapshot``: the job's
body, its pods, the nodes, and the objects other than pods under the job's names (``Owned``:
Service, ssh Secret, discovery ConfigMap, ..., found by the job label, each with its
``ObjectState``: uid, resourceVersion, controller, fingerprint; and those a create found held
by another). Secrets are never listed nor watched (``UNWATCHED``): the job's ssh Secret is
known from the operator's own create, or its read after AlreadyExists. The reconciler reads nothing else,
so how the cache is filled can change without touching it.

``InformerCache`` is filled by one list+watch per kind (``aitj.controller.informer``) and lives
on the event loop: every store is changed there only, so a snapshot needs no lock. It is
``synced`` once every kind has been listed; until then it kicks nothing (the start-up kicks
every job once, then). After that a change kicks the job it concerns: any change of the job,
a change of one of its pods that its view shows (a pod's Ready condition or IP changing alone
plans nothing: the planner sees neither), the deletion of one of its owned objects, a change of
a node's readiness (the jobs with a pod on it). A change the cache already holds kicks nothing.
A kick of the job or its pod's event says which (``Seen``): a pass running then keeps it
(one more pass follows it: aitj.controller.reconciler, ``_settle``).

Write-through (``written``): what the operator's own calls returned (the job after its status
write, a pod it created, deleted or released) is stored at once, so the next pass plans from
it instead of from a copy the watch has not caught up with; the watch's echo of those writes,
no newer, is then dropped. A pod found gone (force-deleted and released, or 404) is
removed and its uid remembered until the watch confirms the deletion. Versions are compared as
numbers when both are numbers (etcd revisions), which is what lets an echo be told from news.

The one read the cache cannot answer, whether a job it no longer holds is really gone, is
``kubeclient.job_exists``, asked before letting that job's pods go.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from kubernetes import client

from aitj.controller import gangapi
from aitj.controller.informer import Change, Delta, Informer, Item, Kind, Sync
from aitj.controller.logs import log
from aitj.controller.store import JobKey as JobKey
from aitj.controller.store import Store
from aitj.controller.written import Seen, Written, pod_gone
from aitj.core import api
from aitj.core.observed import MAX_LEDGER_ANNOTATION, NodeView, PodView
from aitj.core.planner import objects
from aitj.core.planner.types import ObjectKind, ObjectRef, ObjectState, Owned
from aitj.core.render.gang import NEWEST
from aitj.core.wire import mapping

T = TypeVar("T")
# A kick's cause: the job's and its pods' events (a running pass keeps them: each makes one more pass),
# or None for any other (a node, a relist, an owned object or the job deleted).
Kicked = tuple[Seen, ...] | None


@dataclass(frozen=True)
class Snapshot:
    """Snapshot: what one pass plans from. ``body`` None: the job is not in the cache."""

    body: Mapping[str, Any] | None
    pods: Sequence[PodView] = ()
    nodes: Mapping[str, NodeView] = field(default_factory=dict)
    owned: Owned = field(default_factory=dict)
    # ``pods`` by name (None: made from ``pods`` when read: ``by_name``)
    named: Mapping[str, PodView] | None = None
    # The pods at some (replica, index) slots, from the cache's index of them: the store as it
    # is when called, so read before the pass first awaits (None: ``pods`` is searched).
    at: Callable[[Collection[tuple[str, int]]], list[PodView]] | None = None

    def by_name(self) -> Mapping[str, PodView]:
        """by_name: ``pods`` by name."""
        return self.named if self.named is not None else {p.name: p for p in self.pods}


class Cache(Protocol):
    """Cache: the small interface the reconciler and the start-up fan-out read from."""

    def snapshot(self, key: JobKey) -> Snapshot: ...
    def job_keys(self) -> Iterable[JobKey]: ...
    def jobs_on_node(self, node: str) -> Iterable[JobKey]: ...


def slim_job(body: Mapping[str, Any]) -> dict[str, Any]:
    """slim_job: the parts of a job a pass reads (managedFields and the like left out)."""
    meta = dict(mapping(body.get("metadata")))
    meta.pop("managedFields", None)
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": meta,
        "spec": dict(mapping(body.get("spec"))),
        "status": dict(mapping(body.get("status"))),
    }


def pod_view(body: Mapping[str, Any]) -> PodView:
    """pod_view: the pod's PodView; a ledger stamp too large to keep is logged, once per
    version the watch brings (the view keeps its size only)."""
    view = PodView.from_dict(body)
    if view.ledger_dropped:
        log.warning(
            "restart-ledger annotation too large: ignored",
            namespace=view.namespace,
            pod=view.name,
            size=view.ledger_dropped,
            limit=MAX_LEDGER_ANNOTATION,
        )
    return view


def _state(body: Mapping[str, Any]) -> ObjectState:
    """_state: what is kept of an object a job may own: its metadata's few facts (uid,
    resourceVersion, controller uid, the fingerprint of what the operator wrote)."""
    return objects.state_of(mapping(body.get("metadata")))


JOB_SELECTOR = api.LABEL_JOB  # "has the job label"
JOBS: Kind[dict[str, Any]] = Kind("jobs", f"/apis/{api.GROUP}/{api.VERSION}", api.PLURAL, slim_job)
PODS: Kind[PodView] = Kind("pods", "/api/v1", "pods", pod_view, JOB_SELECTOR)
NODES: Kind[NodeView] = Kind("nodes", "/api/v1", "nodes", NodeView.from_dict, namespaced=False)
# The job's objects other than pods, one informer each, metadata only (their ``ObjectState``).
OWNED_COLLECTIONS: dict[ObjectKind, tuple[str, str]] = {
    ObjectKind.SERVICE: ("/api/v1", "services"),
    ObjectKind.SECRET: ("/api/v1", "secrets"),
    ObjectKind.CONFIGMAP: ("/api/v1", "configmaps"),
    ObjectKind.SERVICE_ACCOUNT: ("/api/v1", "serviceaccounts"),
    ObjectKind.ROLE: ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    ObjectKind.ROLE_BINDING: ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    ObjectKind.PDB: ("/apis/policy/v1", "poddisruptionbudgets"),
    ObjectKind.VOLCANO_PODGROUP: ("/apis/scheduling.volcano.sh/v1beta1", "podgroups"),
    **{kind: (gangapi.group_path(), plural) for kind, plural in gangapi.KINDS.items()},
}
# Kinds only some clusters serve (a CRD of another project, an alpha API): watched only when
# the operator found them served at start (``aitj.controller.served``); a list of a kind not
# served would fail forever, and the cache would never be synced.
OPTIONAL: frozenset[ObjectKind] = frozenset({ObjectKind.VOLCANO_PODGROUP, *gangapi.KINDS})
# Kinds listed again every so often instead of watched: every change of a job's budget but its
# deletion (or a hand's edit) is its status, which the disruption controller rewrites on every
# pod change of the job (3.6 times a recovery, each read and decoded for nothing). What the
# operator writes is stored at once (``written``); a budget deleted by hand is made again at the
# next listing (docs/operator.md, "The hot path").
RELISTED: dict[ObjectKind, float] = {ObjectKind.PDB: 30.0}
# Kinds never listed nor watched: a list of Secrets, even metadata-only, is authorised as a
# full one, so the right to watch them would be the right to read every Secret. The cache
# knows the job's ssh Secret from the operator's own create (or the read after AlreadyExists).
UNWATCHED: frozenset[ObjectKind] = frozenset({ObjectKind.SECRET})


def owned_kind(kind: ObjectKind, gang_version: str = NEWEST) -> Kind[ObjectState]:
    """owned_kind: the informer kind of one ObjectKind (metadata only, by the job label; the gang
    kinds in ``gang_version``), by its plural, qualified by its group for an optional kind."""
    group_path, plural = OWNED_COLLECTIONS[kind]
    if kind in gangapi.KINDS:
        group_path = gangapi.group_path(gang_version)
    name = f"{plural}.{group_path.split('/')[2]}" if kind in OPTIONAL else plural
    return Kind(
        name, group_path, plural, _state, JOB_SELECTOR, metadata_only=True, relist_seconds=RELISTED.get(kind)
    )


OWNED: dict[str, ObjectKind] = {owned_kind(kind).name: kind for kind in OWNED_COLLECTIONS}


def _by_label(item: Item[Any]) -> JobKey | None:
    """_by_label: the job an object's job label names."""
    job = item.labels.get(api.LABEL_JOB)
    return (item.namespace, job) if job else None


def _slot(view: PodView) -> tuple[str, int] | None:
    """_slot: a pod's (replica, index), as its labels say (None: it has none)."""
    return (view.replica, view.index) if view.replica is not None and view.index is not None else None


def _itself(item: Item[Any]) -> JobKey:
    """_itself: a job is its own key."""
    return (item.namespace, item.name)


class InformerCache:
    """InformerCache: the Cache over one informer per kind; ``kick`` is called with each job a
    change concerns, once ``synced``."""

    def __init__(self, kick: Callable[[JobKey, Kicked], None] = lambda _key, _seen: None) -> None:
        self.kick = kick
        self.jobs: Store[dict[str, Any]] = Store(_itself)
        self.pods: Store[PodView] = Store(_by_label, _slot)
        self.nodes: Store[NodeView] = Store(lambda _item: None)
        self.owned: dict[ObjectKind, Store[ObjectState]] = {k: Store(_by_label) for k in OWNED_COLLECTIONS}
        self._stores: dict[str, Store[Any]] = {
            JOBS.name: self.jobs,
            PODS.name: self.pods,
            NODES.name: self.nodes,
        }
        self._stores.update((name, self.owned[kind]) for name, kind in OWNED.items())
        # Objects under a job's names its label does not pick (another's), as the operator's
        # read after AlreadyExists found them: kept until the job's own object replaces them
        # (a create that went through) or the job is deleted.
        self.held: dict[JobKey, dict[ObjectRef, ObjectState]] = {}
        self.synced = asyncio.Event()
        self._waiting: set[tuple[str, str | None]] = set()  # (kind, namespace) not listed yet
        self.informers: list[Informer[Any]] = []
        self._late: list[Informer[Any]] = []  # those whose quiet events wait for a snapshot
        self._nodes: dict[str, NodeView] | None = None  # the nodes mapping, until a node changes

    def informers_for(
        self,
        api_client: client.ApiClient,
        namespaces: Sequence[str],
        served: Collection[ObjectKind] = (),
        gang_version: str = NEWEST,
    ) -> list[Informer[Any]]:
        """informers_for: the informers that fill this cache (not started); of the ``OPTIONAL``
        kinds, only those ``served`` (the gang kinds in ``gang_version``)."""
        owned = [
            owned_kind(k, gang_version)
            for k in OWNED_COLLECTIONS
            if k not in UNWATCHED and (k not in OPTIONAL or k in served)
        ]
        kinds: list[Kind[Any]] = [JOBS, PODS, NODES, *owned]
        scopes: list[str | None] = list(namespaces) or [None]
        self.informers = [
            Informer(api_client, kind, ns, self.apply, known=self._store(kind).holds, quiet=self._quiet(kind))
            for kind in kinds
            for ns in (scopes if kind.namespaced else [None])
        ]
        self._late = [i for i in self.informers if i.quiet is not None]
        self._waiting = {(i.kind.name, i.namespace) for i in self.informers}
        return self.informers

    # ---- the Cache interface ----------------------------------------------------------------
    def snapshot(self, key: JobKey) -> Snapshot:
        """snapshot: the job's body, its pods, every node and the job's other objects (the
        versions the informers hold back, ``_quiet``, taken in first)."""
        for informer in self._late:
            informer.flush()
        job = self.jobs.items.get(key)
        if self._nodes is None:
            self._nodes = {item.name: item.value for item in self.nodes.items.values()}
        nodes = self._nodes
        owned = dict(self.held.get(key, {}))
        for kind, store in self.owned.items():
            owned.update(
                (ObjectRef(kind, name), item.value) for name, item in store.by_job.get(key, {}).items()
            )
        # Two copies made in C (issue 26, F13: a pass of a job of thousands looped over its items).
        named = self.pods.named(key)
        at = functools.partial(self.pods.in_slots, key)
        return Snapshot(job.value if job else None, list(named.values()), nodes, owned, named, at)

    def job_keys(self) -> list[JobKey]:
        """job_keys: every job in the cache (the resync kicks them all)."""
        return list(self.jobs.items)

    def jobs_on_node(self, node: str) -> list[JobKey]:
        """jobs_on_node: the jobs with a pod on ``node`` (kicked when its health changes)."""
        return [
            key
            for key, pods in self.pods.by_job.items()
            if any(p.value.node_name == node for p in pods.values())
        ]

    # ---- filled by the informers (on the loop) ------------------------------------------------
    def apply(self, kind: Kind[Any], deltas: list[Delta[Any]]) -> None:
        """apply stores a batch of one kind's deltas and kicks the jobs they concern, each with
        the events that did (``Kicked``)."""
        store = self._store(kind)
        if kind is NODES:
            self._nodes = None
        touched: dict[JobKey, list[Seen] | None] = {}
        for delta in deltas:
            if isinstance(delta, Sync):
                relisted = kind.relist_seconds is not None  # nodes: none (a node relisted kicks nothing)
                changed = (
                    store.relisted(delta.items, delta.namespace, delta.version)
                    if relisted
                    else store.replace(delta.items, delta.namespace)
                )
                touched.update(dict.fromkeys(changed))
                self._waiting.discard((kind.name, delta.namespace))
                if not self._waiting and not self.synced.is_set():
                    self.synced.set()
                continue
            for key, seen in self._change(kind, store, delta).items():
                if seen is None:
                    touched[key] = None
                elif (events := touched.setdefault(key, [])) is not None:
                    events.append(seen)
        if self.synced.is_set():
            for key, events in touched.items():
                self.kick(key, tuple(events) if events is not None else None)

    def _change(self, kind: Kind[Any], store: Store[Any], delta: Change[Any]) -> dict[JobKey, Seen | None]:
        """_change: one watch event; the jobs to kick, each with the event (of it or its pod) or None."""
        item = delta.item
        old = store.items.get((item.namespace, item.name))
        deleted = delta.type == "DELETED"
        if not (store.remove(item.namespace, item.name, item.uid) if deleted else store.put(item)):
            return {}
        if kind is NODES:
            was = old.value.health if old is not None else None
            now = item.value.health if not deleted else None
            return dict.fromkeys(self.jobs_on_node(item.name)) if was != now else {}
        if kind is JOBS and deleted:
            self._forget_unwatched((item.namespace, item.name))
            return {(item.namespace, item.name): None}
        if (job := store.job_of(item)) is None:
            return {}
        if kind.name in OWNED:  # created or rewritten by the operator itself: nothing to plan
            return {job: None} if deleted else {}
        if kind is PODS and old is not None and not deleted and old.value == item.value:
            return {}  # a change the planner cannot see (a condition, the pod's IP): no pass
        return {job: Seen(item.uid, item.resource_version, deleted)}

    def _store(self, kind: Kind[Any]) -> Store[Any]:
        """_store: the store of ``kind``."""
        return self._stores[kind.name]

    def _quiet(self, kind: Kind[Any]) -> Callable[[Item[Any]], bool] | None:
        """_quiet: for an owned kind, its watch events that may reach the store late (their
        version alone moved): no such event kicks a pass, so none need wake the event loop, and
        the store is read by a pass's snapshot only, which takes them in first (``snapshot``)."""
        return self.owned[OWNED[kind.name]].only_version if kind.name in OWNED else None

    # ---- write-through ----------------------------------------------------------------------
    def written(self, key: JobKey, w: Written) -> None:
        """written stores what the operator's own calls for job ``key`` returned (``Written``): the
        job after a status or spec write, pods created, deleted or released (one force-deleted
        with no finalizer left is gone), pods and objects found gone, objects created. Kicks
        nothing: the pass that wrote them planned with this in mind."""
        for body in w.jobs:
            self.jobs.put(Item.of(body, slim_job(body)))
        for body in w.pods:
            meta = mapping(body.get("metadata"))
            if pod_gone(meta):  # nothing holds it any more (a graceful deletion stays)
                self._pod_gone(key[0], str(meta.get("name") or ""), str(meta.get("uid") or ""))
            else:
                self.pods.put(Item.of(body, PodView.from_dict(body)))
        for name in w.gone_pods:
            self._pod_gone(key[0], name)
        for kind, body in w.owned:
            self._owned_written(key, kind, body)
        for ref in w.gone_owned:
            self.held.get(key, {}).pop(ref, None)
            store = self.owned.get(ref.kind)
            item = store.items.get((key[0], ref.name)) if store else None
            if store is not None and item is not None:
                store.remove(key[0], ref.name, item.uid, confirmed=False)

    def _owned_written(self, key: JobKey, kind: ObjectKind, body: Mapping[str, Any]) -> None:
        """_owned_written stores an object a call of job ``key``'s pass returned or read: under
        the job when its label names the job (it is watched, or a Secret), else as one held
        under the job's names (whoever holds it: the planner judges)."""
        item = Item.of(body, _state(body))
        ref = ObjectRef(kind, item.name)
        held = self.held.setdefault(key, {})
        if _by_label(item) == key and kind in self.owned:
            held.pop(ref, None)
            self.owned[kind].put(item)
        else:
            held[ref] = item.value
        if not held:
            del self.held[key]

    def _forget_unwatched(self, key: JobKey) -> None:
        """_forget_unwatched: the job is deleted: what no watch will remove goes (its ssh
        Secret, the objects held by another under its names)."""
        self.held.pop(key, None)
        for kind in UNWATCHED:
            for item in list(self.owned[kind].by_job.get(key, {}).values()):
                self.owned[kind].remove(item.namespace, item.name, item.uid)

    def _pod_gone(self, namespace: str, name: str, uid: str = "") -> None:
        """_pod_gone: the operator's own call found the pod gone (or made it so)."""
        item = self.pods.items.get((namespace, name))
        self.pods.remove(namespace, name, uid or (item.uid if item else ""), confirmed=False)
