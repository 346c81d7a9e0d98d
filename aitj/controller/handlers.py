"""kopf wiring: start-up, credentials and shutdown; the cache and the passes are the operator's own.

kopf runs the process: signals, the start-up and clean-up handlers, the login. It watches
nothing: its per-object machinery (an index-readiness toggle and a worker task per object)
grows with the square of the objects listed and kept a restarted operator from ever running a
pass at 10,000 pods (docs/operator.md, "Start-up at scale"). The cache is one list+watch per
kind instead (``aitj.controller.cache``, ``aitj.controller.informer``); a pass starts only
once every kind is listed, then every job is planned once, and a resync task plans each job
again every ``RESYNC_SECONDS`` in case a change was missed.

With leader election (``memo.election``, ``aitj.controller.leader``) a standby lists and
watches like the leader, so its cache is warm, but its cache kicks nothing and no pass runs
until it holds the Lease; it contends only once synced, so a warm standby, not a restarted
replica still listing, is the one that takes over. Then it plans every job at once, as at
start-up.

No kopf create/update/timer handlers either: they would put kopf's finalizer on every job (a
job could not be deleted while the operator is down) and add progress annotations to the
recovery path.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
import time
from typing import Any

import kopf

from aitj.controller import cache, collector, gangapi, leader, metrics
from aitj.controller.executor import KubeExecutor
from aitj.controller.kubeclient import api_client as new_api_client
from aitj.controller.kubeclient import bearer_token
from aitj.controller.logs import log
from aitj.controller.reconciler import Reconciler
from aitj.controller.served import served_kinds
from aitj.core.planner.types import ObjectKind

RESYNC_SECONDS = 300.0
STATE: dict[str, Any] = {}


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: Any, **_: Any) -> None:
    """startup: the cache, its informers and the reconciler; passes begin once it is synced."""
    settings.posting.enabled = False  # we emit the Events we mean
    settings.peering.standalone = True
    signals = memo.settings.node_signals
    # Which nodes count as failed besides NotReady: an admin checks here that the flags took.
    log.info(
        "node fault signals",
        conditions=sorted(f"{kind}={status}" for kind, status in signals.conditions),
        taints=sorted(signals.taints),
    )
    client = memo.api_client
    store = cache.InformerCache()
    collector.install(store)  # aitj_jobs, aitj_job_replicas, ...: read from the cache at scrape time
    # The listings first: they wait on the server while the rest is set up (building the API
    # classes the executor uses takes seconds). The watches hold their connections for
    # minutes: a client of their own keeps them out of the pool the passes' calls use.
    # Optional kinds (Volcano's PodGroup, the native gang API) are looked up once: the
    # informers and the planner's Settings follow what is served now (aitj.controller.served).
    served = await asyncio.to_thread(served_kinds, client)
    # Where Volcano's PodGroup is served, the scheduler behind the name volcano is Volcano,
    # which reads its own PodGroup: the native gang is then not planned (one gang per job).
    native = set(gangapi.KINDS) <= served and ObjectKind.VOLCANO_PODGROUP not in served
    gang: frozenset[str] = frozenset()
    if native:
        gang = await asyncio.to_thread(
            gangapi.gang_schedulers, client, gangapi.DEFAULT_SCHEDULERS, memo.namespaces
        )
    if not gang:
        served -= set(gangapi.KINDS)
    planner_settings = dataclasses.replace(
        memo.settings, volcano_podgroups=ObjectKind.VOLCANO_PODGROUP in served, gang_schedulers=gang
    )
    if served:
        log.info(
            "optional kinds served",
            kinds=sorted(str(k) for k in served),
            native_gang_schedulers=sorted(gang) or None,
        )
    informers = store.informers_for(new_api_client(memo.kubeconfig), memo.namespaces, served)
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    for informer in informers:
        informer.start(loop)
    reconciler = Reconciler(
        KubeExecutor(client),
        store.snapshot,
        job_exists=lambda namespace, name: cache.job_exists(client, namespace, name),
        settings=planner_settings,
        written=store.written,
    )
    leading = asyncio.Event()
    elector = None
    if memo.election is None:
        leading.set()
        metrics.set_leader(True)  # no leader election: this, the only replica, acts
    else:
        metrics.set_leader(False)
        elector = leader.Elector(
            memo.election,
            client.configuration,  # a client of its own: never queued behind the passes' calls
            on_leading=lambda: _lead_soon(loop, leading),
        )
    STATE.update(cache=store, reconciler=reconciler, informers=informers, elector=elector)
    STATE["resync"] = loop.create_task(_run(store, reconciler, started, leading, elector))


def _lead_soon(loop: asyncio.AbstractEventLoop, leading: asyncio.Event) -> None:
    """_lead_soon: from the Lease's thread, have the event loop start leading."""
    loop.call_soon_threadsafe(_lead, leading)


def _lead(leading: asyncio.Event) -> None:
    """_lead: the Lease is this process's (called on the event loop)."""
    metrics.set_leader(True)
    leading.set()


async def _run(
    store: cache.InformerCache,
    reconciler: Reconciler,
    started: float,
    leading: asyncio.Event,
    elector: leader.Elector | None,
) -> None:
    """_run: wait until every kind is listed and this process leads, plan every job once,
    then resync forever."""
    await store.synced.wait()
    log.info(
        "cache synced",
        seconds=round(time.monotonic() - started, 3),
        jobs=len(store.jobs.items),
        pods=len(store.pods.items),
        nodes=len(store.nodes.items),
    )
    if elector is not None:
        elector.start()
        await leading.wait()
    # From here on a change kicks its job; until now the cache kicked nothing (a standby).
    store.kick = reconciler.spawn
    # Jobs with a pod that ended or is being deleted first: after a restart, those are the ones
    # waiting for a replacement; the others' passes usually send nothing.
    urgent = store.jobs_with_pods_ending()
    for key in [*urgent, *(store.every_key() - urgent)]:
        reconciler.spawn(key)
    # Each job again once per RESYNC_SECONDS, spread evenly: a trickle, not a burst of every
    # job at once (idle CPU at 10,000 pods). Time-based actions do not wait for it: the
    # planner asks for its own wake-ups (Plan.requeue_after).
    while True:
        keys = store.job_keys()
        if not keys:
            await asyncio.sleep(RESYNC_SECONDS)
        for key in keys:
            await asyncio.sleep(RESYNC_SECONDS / len(keys))
            reconciler.spawn(key)


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    """cleanup: stop watching, stop taking kicks, let the passes in flight end (SIGTERM); then,
    and only then, release the Lease, so a standby takes over at once and never overlaps a
    pass of this process (the Lease is renewed meanwhile)."""
    for informer in STATE.get("informers", ()):
        informer.stop()
    task = STATE.get("resync")
    if task is not None:
        task.cancel()
    reconciler = STATE.get("reconciler")
    if reconciler is not None:
        await reconciler.close()
    elector = STATE.get("elector")
    if elector is not None:
        # A pass abandoned by ``close`` may still have a call on its thread: release only once
        # every pass thread has ended, else let the Lease expire (the standby waits it out).
        drained = reconciler is None or await asyncio.to_thread(_drained, reconciler.pool, 2.0)
        if not drained:
            log.warning("a pass is still sending: the Lease is left to expire")
        await asyncio.to_thread(elector.stop, drained)


def _drained(pool: concurrent.futures.ThreadPoolExecutor, timeout: float) -> bool:
    """_drained: every thread of ``pool`` (already shut) ended within ``timeout`` seconds. The
    wait is on a daemon thread, so a call that never returns cannot hold the exit."""
    waiter = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, daemon=True)
    waiter.start()
    waiter.join(timeout)
    return not waiter.is_alive()


@kopf.on.login()
def login(memo: Any, **_: Any) -> kopf.ConnectionInfo:
    """login gives kopf the credentials the API client already loaded, so both talk to the same
    cluster as the same user (kubeconfig or in-cluster), whatever the environment says."""
    cfg = memo.api_client.configuration
    # Through get_api_key_with_prefix, which calls the in-cluster refresh hook: a projected
    # ServiceAccount token is rotated by the kubelet, and kopf logs in again after a 401.
    header = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix("authorization")
    token = bearer_token(header)
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        token=token,
    )
