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

from aitj.controller.executor import KubeExecutor
from aitj.controller.logs import log
from aitj.controller.reconciler import JobKey, Reconciler, Snapshot
from aitj.core import api
from aitj.core.observed import TRACKING_FINALIZER, NodeView, PodView

RESYNC_SECONDS = 30.0


class _Indexes:
    """The kopf indexes, captured from the first handler call that receives them."""

    jobs: Any = None
    pods: Any = None
    nodes: Any = None

    def capture(self, kwargs: Mapping[str, Any]) -> None:
        self.jobs, self.pods, self.nodes = kwargs["jobs"], kwargs["pods"], kwargs["nodes"]

    def snapshot(self, key: JobKey) -> Snapshot:
        body = next(iter(self.jobs.get(key, ())), None) if self.jobs is not None else None
        pods = list(self.pods.get(key, ())) if self.pods is not None else []
        nodes = {name: next(iter(store)) for name, store in (self.nodes or {}).items()}
        return body, pods, nodes


INDEXES = _Indexes()
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
    executor = KubeExecutor(memo.api_client, memo.config)
    STATE["executor"] = executor
    STATE["reconciler"] = Reconciler(executor, INDEXES.snapshot)
    # A periodic pass over every job catches anything a missed event would have hidden. Not a
    # kopf timer: kopf puts a finalizer on objects with timers, and a job should be deletable
    # while the operator is down.
    STATE["resync"] = asyncio.get_running_loop().create_task(_resync_forever())


async def _resync_forever() -> None:
    while True:
        await asyncio.sleep(RESYNC_SECONDS)
        for key in list(INDEXES.jobs or {}):
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


# The handlers below receive the indexes above as keyword arguments named after them
# (jobs, pods, nodes); kopf's handler protocols do not know those names, hence **kwargs.


@kopf.on.event(api.GROUP, api.VERSION, api.PLURAL)
async def job_event(namespace: str | None, name: str, **kwargs: Any) -> None:
    INDEXES.capture(kwargs)
    await reconciler().kick((namespace or "", name))


@kopf.on.event("pods", labels={api.LABEL_JOB: kopf.PRESENT})
async def pod_event(
    namespace: str | None, name: str, labels: kopf.Labels, meta: kopf.Meta, **kwargs: Any
) -> None:
    INDEXES.capture(kwargs)
    key = (namespace or "", labels[api.LABEL_JOB])
    orphan = key not in kwargs["jobs"] and meta.get("deletionTimestamp")
    if orphan and TRACKING_FINALIZER in (meta.get("finalizers") or []):
        await _release_orphan(key[0], key[1], name)
        return
    await reconciler().kick(key)


@kopf.on.event("nodes")
async def node_event(name: str, type: str, **kwargs: Any) -> None:
    INDEXES.capture(kwargs)
    view = next(iter(kwargs["nodes"].get(name, ())), None) if type != "DELETED" else None
    ready = view.ready if view is not None else None
    if _node_ready.get(name, "unseen") == ready:
        return  # heartbeats and label edits do not change what the planner decides
    _node_ready[name] = ready
    for key, store in list(kwargs["pods"].items()):
        if any(p.node_name == name for p in store):
            reconciler().spawn(key)


async def _release_orphan(namespace: str, job: str, pod: str) -> None:
    """A pod whose job is gone (deleted, garbage collection under way): let it go."""
    executor: KubeExecutor = STATE["executor"]
    if await asyncio.to_thread(executor.job_exists, namespace, job):
        return  # the jobs index has not caught up yet; the job's own pass will handle the pod
    log.info("releasing pod of a deleted job", namespace=namespace, job=job, pod=pod)
    await asyncio.to_thread(executor.release, namespace, pod)
