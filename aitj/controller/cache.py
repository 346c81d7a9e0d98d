"""The controller's view of the cluster: what a pass's snapshot is read from.

Everything the planner is told about the world comes through ``Cache.snapshot``: the job's
body, its pods, the nodes, and the job's objects other than pods (``Owned``: Service, ssh
Secret, discovery ConfigMap, found by the job label). The reconciler reads nothing else, so
how the cache is filled can change without touching it. Today kopf indexes fill it
(``KopfIndexes``, wired in ``aitj.controller.handlers``); a cache that starts faster at
10,000 pods only has to implement the same small interface.

Also here, the one read the cache cannot answer: whether a job it no longer holds is really
gone (``job_exists``), asked before letting that job's pods go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core import api
from aitj.core.observed import NodeView, PodView
from aitj.core.planner.types import ObjectKind, ObjectRef, Owned

JobKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class Snapshot:
    """Snapshot: what one pass plans from. ``body`` None: the job is not in the cache."""

    body: Mapping[str, Any] | None
    pods: Sequence[PodView] = ()
    nodes: Mapping[str, NodeView] = field(default_factory=dict)
    owned: Owned = frozenset()


class Cache(Protocol):
    """Cache: the small interface the reconciler and the handlers' fan-out read from."""

    def snapshot(self, key: JobKey) -> Snapshot: ...
    def job_keys(self) -> Iterable[JobKey]: ...
    def jobs_on_node(self, node: str) -> Iterable[JobKey]: ...


# kopf index name -> the kind of object it holds (the handlers declare one index per name).
OWNED_INDEXES = {
    "services": ObjectKind.SERVICE,
    "secrets": ObjectKind.SECRET,
    "configmaps": ObjectKind.CONFIGMAP,
}


class KopfIndexes:
    """KopfIndexes: the Cache over kopf's indexes, captured from the first handler call that
    receives them (kopf hands indexes only to handlers, as keyword arguments)."""

    def __init__(self) -> None:
        self._indexes: Mapping[str, Any] = {}

    def capture(self, kwargs: Mapping[str, Any]) -> None:
        """capture keeps the indexes a handler received."""
        self._indexes = {k: kwargs[k] for k in ("jobs", "pods", "nodes", *OWNED_INDEXES)}

    def _get(self, index: str) -> Mapping[Any, Any]:
        """_get: one index (empty before the first handler call)."""
        return self._indexes.get(index) or {}

    def snapshot(self, key: JobKey) -> Snapshot:
        """snapshot: the job's body, its pods, every node and the job's other objects."""
        body = next(iter(self._get("jobs").get(key, ())), None)
        pods = list(self._get("pods").get(key, ()))
        nodes = {name: next(iter(store)) for name, store in self._get("nodes").items()}
        owned = frozenset(ref for index in OWNED_INDEXES for ref in self._get(index).get(key, ()))
        return Snapshot(body, pods, nodes, owned)

    def job_keys(self) -> list[JobKey]:
        """job_keys: every job in the cache (the resync kicks them all)."""
        return list(self._get("jobs"))

    def jobs_on_node(self, node: str) -> list[JobKey]:
        """jobs_on_node: the jobs with a pod on ``node`` (kicked when its readiness changes)."""
        return [
            key for key, store in list(self._get("pods").items()) if any(p.node_name == node for p in store)
        ]


def owned_entry(kind: ObjectKind, namespace: str | None, name: str, job: str) -> dict[JobKey, ObjectRef]:
    """owned_entry: the index entry of an object the job label ties to ``job``."""
    return {(namespace or "", job): ObjectRef(kind, name)}


def job_exists(api_client: client.ApiClient, namespace: str, name: str) -> bool:
    """job_exists reads the job from the API server (the cache may only be late)."""
    try:
        client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            api.GROUP, api.VERSION, namespace, api.PLURAL, name, _preload_content=False
        )
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True
