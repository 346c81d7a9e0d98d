"""kopf wiring: indexes and event handlers, a few lines each, delegating to the Reconciler.

No create/update/resume handlers (they wait for their own patches and write progress
annotations); only indexes, ``on.event`` and a periodic resync task, none of which delay the
recovery path or put a finalizer on the job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import kopf

from aitj.controller import cache
from aitj.controller.executor import KubeExecutor
from aitj.controller.reconciler import JobKey, Reconciler
from aitj.core import api
from aitj.core.observed import NodeView, PodView
from aitj.core.planner.types import ObjectKind, ObjectRef

RESYNC_SECONDS = 30.0
CACHE = cache.KopfIndexes()
STATE: dict[str, Any] = {}
_node_ready: dict[str, str | None] = {}


def reconciler() -> Reconciler:
    return STATE["reconciler"]  # type: ignore[no-any-return]


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: Any, **_: Any) -> None:
    settings.posting.enabled = False  # we emit the Events we mean
    settings.watching.server_timeout = 300  # renew a silently dead watch
    settings.watching.client_timeout = 330
    settings.peering.standalone = True
    client = memo.api_client
    STATE["reconciler"] = Reconciler(
        KubeExecutor(client),
        CACHE.snapshot,
        job_exists=lambda namespace, name: cache.job_exists(client, namespace, name),
        settings=memo.settings,
    )
    # A periodic pass over every job catches anything a missed event would have hidden. Not a
    # kopf timer: kopf puts a finalizer on objects with timers, and a job should be deletable
    # while the operator is down.
    STATE["resync"] = asyncio.get_running_loop().create_task(_resync_forever())


async def _resync_forever() -> None:
    while True:
        await asyncio.sleep(RESYNC_SECONDS)
        for key in CACHE.job_keys():
            reconciler().spawn(key)


@kopf.on.login()
def login(memo: Any, **_: Any) -> kopf.ConnectionInfo:
    """login gives kopf the credentials the API client already loaded, so both talk to the same
    cluster as the same user (kubeconfig or in-cluster), whatever the environment says."""
    cfg = memo.api_client.configuration
    auth = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
    token = auth.removeprefix("Bearer ").strip() if auth else None
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        token=token,
    )


@kopf.index(api.GROUP, api.VERSION, api.PLURAL)
def jobs(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> dict[JobKey, Mapping[str, Any]]:
    return {
        (namespace or "", name): {
            "apiVersion": body.get("apiVersion"),
            "kind": body.get("kind"),
            "metadata": dict(body.metadata),
            "spec": dict(body.spec),
            "status": dict(body.status),
        }
    }


@kopf.index("pods", labels={api.LABEL_JOB: kopf.PRESENT})
def pods(namespace: str | None, labels: kopf.Labels, body: kopf.Body, **_: Any) -> dict[JobKey, PodView]:
    return {(namespace or "", labels[api.LABEL_JOB]): PodView.from_dict(body)}


@kopf.index("nodes")
def nodes(name: str, body: kopf.Body, **_: Any) -> dict[str, NodeView]:
    return {name: NodeView.from_dict(body)}


# The job's objects other than pods, by the job label, so the planner sees one that is missing
# (deleted by hand, say) and plans it again. Only names are kept: never a Secret's data.
@kopf.index("services", labels={api.LABEL_JOB: kopf.PRESENT})
def services(namespace: str | None, name: str, labels: kopf.Labels, **_: Any) -> dict[JobKey, ObjectRef]:
    return cache.owned_entry(ObjectKind.SERVICE, namespace, name, labels[api.LABEL_JOB])


@kopf.index("secrets", labels={api.LABEL_JOB: kopf.PRESENT})
def secrets(namespace: str | None, name: str, labels: kopf.Labels, **_: Any) -> dict[JobKey, ObjectRef]:
    return cache.owned_entry(ObjectKind.SECRET, namespace, name, labels[api.LABEL_JOB])


@kopf.index("configmaps", labels={api.LABEL_JOB: kopf.PRESENT})
def configmaps(namespace: str | None, name: str, labels: kopf.Labels, **_: Any) -> dict[JobKey, ObjectRef]:
    return cache.owned_entry(ObjectKind.CONFIGMAP, namespace, name, labels[api.LABEL_JOB])


# The handlers below receive the indexes above as keyword arguments named after them
# (jobs, pods, nodes, services, secrets, configmaps); kopf's handler protocols do not know
# those names, hence **kwargs.


@kopf.on.event(api.GROUP, api.VERSION, api.PLURAL)
async def job_event(namespace: str | None, name: str, **kwargs: Any) -> None:
    CACHE.capture(kwargs)
    await reconciler().kick((namespace or "", name))


@kopf.on.event("pods", labels={api.LABEL_JOB: kopf.PRESENT})
async def pod_event(namespace: str | None, labels: kopf.Labels, **kwargs: Any) -> None:
    """pod_event kicks the pod's job; the pass also lets the pods of a job that is gone go."""
    CACHE.capture(kwargs)
    await reconciler().kick((namespace or "", labels[api.LABEL_JOB]))


# Only a deletion changes what the planner decides about these objects (it plans them again);
# their creation and the host-list rewrites are the operator's own writes coming back.
@kopf.on.event("services", labels={api.LABEL_JOB: kopf.PRESENT})
async def service_event(namespace: str | None, labels: kopf.Labels, type: str, **kwargs: Any) -> None:
    await _owned_event(namespace, labels, type, kwargs)


@kopf.on.event("secrets", labels={api.LABEL_JOB: kopf.PRESENT})
async def secret_event(namespace: str | None, labels: kopf.Labels, type: str, **kwargs: Any) -> None:
    await _owned_event(namespace, labels, type, kwargs)


@kopf.on.event("configmaps", labels={api.LABEL_JOB: kopf.PRESENT})
async def configmap_event(namespace: str | None, labels: kopf.Labels, type: str, **kwargs: Any) -> None:
    await _owned_event(namespace, labels, type, kwargs)


async def _owned_event(
    namespace: str | None, labels: kopf.Labels, type: str, kwargs: Mapping[str, Any]
) -> None:
    CACHE.capture(kwargs)
    if type == "DELETED":
        await reconciler().kick((namespace or "", labels[api.LABEL_JOB]))


@kopf.on.event("nodes")
async def node_event(name: str, type: str, **kwargs: Any) -> None:
    CACHE.capture(kwargs)
    view = next(iter(kwargs["nodes"].get(name, ())), None) if type != "DELETED" else None
    ready = view.ready if view is not None else None
    if _node_ready.get(name, "unseen") == ready:
        return  # heartbeats and label edits do not change what the planner decides
    _node_ready[name] = ready
    for key in CACHE.jobs_on_node(name):
        reconciler().spawn(key)
