"""The Operator: the one object that wires the cache, its informers, the reconciler, the
executor, metrics and leader election, built from ``OperatorOptions``. kopf's handlers
(``aitj.controller.handlers``) find it in kopf's memo and call ``start``, ``stop`` and
``connection``.

The way a pod event travels, each step a call you can follow: the informer of its kind
(``aitj.controller.informer``) hands a batch of deltas to ``InformerCache.apply``, which stores
them and calls the ``kick`` it was built with: ``Operator.kick``, which passes the job on to
``Reconciler.spawn`` once this process acts (leads). The pass snapshots the cache, plans, and
hands the Plan to ``KubeExecutor.execute``, whose ``walk`` calls one ``PlanSink`` method per
step; what the calls did comes back as ``Sent`` for the reconciler (and ``Written`` for the
cache).

With leader election (``options.election``, ``aitj.controller.leader``) a standby lists and
watches like the leader, so its cache is warm, but it kicks nothing and no pass runs until it
holds the Lease; it contends only once synced, so a warm standby, not a restarted replica still
listing, is the one that takes over. Then it plans every job at once, as at start-up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import Any

import kopf
from kubernetes import client

from aitj.controller import cache, clientmetrics, collector, leader, metrics
from aitj.controller.drainhooks import DrainHooks
from aitj.controller.executor import KubeExecutor
from aitj.controller.informer import Informer
from aitj.controller.kubeclient import OPERATOR_AGENT, bearer_token, job_exists
from aitj.controller.kubeclient import api_client as new_api_client
from aitj.controller.logs import log
from aitj.controller.options import OperatorOptions
from aitj.controller.progress import ProgressMonitor
from aitj.controller.reconciler import JobKey, Reconciler, Sources
from aitj.controller.settings import planner_settings
from aitj.controller.training_watch import TrainingWatch

RESYNC_SECONDS = 300.0


class Operator:
    """Operator: one per process. Built before kopf runs (``aitj.controller.runner``); what
    needs the cluster is made by ``start``."""

    def __init__(self, options: OperatorOptions, api_client: client.ApiClient) -> None:
        self.options = options
        self.api_client = api_client  # the passes' calls, and kopf's login
        self.cache = cache.InformerCache(kick=self.kick)
        self.reconciler: Reconciler | None = None  # made by start
        self.drain_hooks: DrainHooks | None = None  # made by start: checkpoints before a drain
        self.informers: list[Informer[Any]] = []
        self.elector: leader.Elector | None = None
        self.acting = False  # this process leads: the cache's changes kick passes
        self._leading = asyncio.Event()
        self._resync: asyncio.Task[None] | None = None
        self.progress: ProgressMonitor | None = None  # spec.progress's log reads, made by start
        self._progress: asyncio.Task[None] | None = None
        self.training: TrainingWatch | None = None  # the recovery watchdog's log reads, made by start
        self._training: asyncio.Task[None] | None = None

    def kick(self, key: JobKey, seen: cache.Kicked = None) -> None:
        """kick: the cache's news that a change concerns job ``key`` (``seen``: the events of the
        job and its pods that did, for a pass that runs to tell its own echoes); a standby
        ignores it."""
        if self.acting and self.reconciler is not None:
            self.reconciler.spawn(key, seen)

    async def start(self) -> None:
        """start: the Settings, the informers and the reconciler; passes begin once the cache
        is synced and this process leads."""
        signals = self.options.node_signals
        # Which nodes count as failed besides NotReady: an admin checks here that the flags took.
        log.info(
            "node fault signals",
            conditions=sorted(f"{kind}={status}" for kind, status in signals.conditions),
            taints=sorted(signals.taints),
        )
        collector.install(self.cache)  # aitj_jobs, aitj_job_replicas, ...: read from the cache at scrape time
        # The listings first: they wait on the server while the rest is set up (building the API
        # classes the executor uses takes seconds). The watches hold their connections for
        # minutes: a client of their own keeps them out of the pool the passes' calls use.
        # Optional kinds (Volcano's PodGroup, the native gang API) are looked up once: the
        # informers and the planner's Settings follow what is served now.
        settings, served = await asyncio.to_thread(planner_settings, self.api_client, self.options)
        if served:
            log.info(
                "optional kinds served",
                kinds=sorted(str(k) for k in served),
                native_gang_schedulers=sorted(settings.gang_schedulers) or None,
                native_gang_version=settings.gang_version if settings.gang_schedulers else None,
            )
        watching = clientmetrics.instrument(
            new_api_client(self.options.kubeconfig, user_agent=OPERATOR_AGENT)
        )
        self.informers = self.cache.informers_for(
            watching, self.options.namespaces, served, settings.gang_version
        )
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        for informer in self.informers:
            informer.start(loop)
        api = self.api_client
        store = self.cache

        def body(key: JobKey) -> Any:
            item = store.jobs.items.get(key)
            return item.value if item is not None else None

        self.progress = ProgressMonitor(api, body, store.pods.of_job, self.kick)
        if self.options.recovery_watchdog:  # on unless aitj run --no-recovery-watchdog
            self.training = TrainingWatch(api, body, store.pods.of_job, self.kick)
        progress, training = self.progress, self.training
        collector.COLLECTOR.resumed = self.progress.resumption  # goodput: the head of a Running spell
        self.reconciler = Reconciler(
            KubeExecutor(api, gang_version=settings.gang_version),
            self.cache.snapshot,
            job_exists=lambda namespace, name: job_exists(api, namespace, name),
            settings=settings,
            written=self.cache.written,
            sources=Sources(
                progress=progress.views
                if training is None
                else lambda key, pods: training.views(key, progress.views(key, pods))
            ),
        )
        self.drain_hooks = DrainHooks(api)
        self.reconciler.drain_hooks = self.drain_hooks.start
        if self.options.election is None:
            self._lead()  # no leader election: this, the only replica, acts
        else:
            metrics.set_leader(False, self.options.election.name)
            self.elector = leader.Elector(
                self.options.election,
                api.configuration,  # a client of its own: never queued behind the passes' calls
                on_leading=lambda: self._lead_soon(loop),
            )
            clientmetrics.instrument(self.elector.api.api_client)  # its Lease calls, before its start
        self._resync = loop.create_task(self._run(self.reconciler, started))

    def _lead_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        """_lead_soon: from the Lease's thread, have the event loop start leading."""
        loop.call_soon_threadsafe(self._lead)

    def _lead(self) -> None:
        """_lead: the Lease is this process's (on the event loop)."""
        election = self.options.election
        metrics.set_leader(True, election.name if election is not None else None)
        self._leading.set()

    async def _run(self, reconciler: Reconciler, started: float) -> None:
        """_run: wait until every kind is listed and this process leads, plan every job once,
        then resync forever."""
        store = self.cache
        await store.synced.wait()
        log.info(
            "cache synced",
            seconds=round(time.monotonic() - started, 3),
            jobs=len(store.jobs.items),
            pods=len(store.pods.items),
            nodes=len(store.nodes.items),
        )
        if self.elector is not None:
            self.elector.start()
        await self._leading.wait()
        # From here on a change kicks its job; until now the cache kicked nothing (a standby).
        self.acting = True
        if self.progress is not None:  # the watched pods' logs are read by the process that acts
            self._progress = asyncio.get_running_loop().create_task(self.progress.run(store.job_keys))
        if self.training is not None:
            self._training = asyncio.get_running_loop().create_task(self.training.run(store.job_keys))
        for key in start_order(store):
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

    async def stop(self) -> None:
        """stop: stop watching, stop taking kicks, let the passes in flight end (SIGTERM); then,
        and only then, release the Lease, so a standby takes over at once and never overlaps a
        pass of this process (the Lease is renewed meanwhile)."""
        for informer in self.informers:
            informer.stop()
        if self._resync is not None:
            self._resync.cancel()
        if self._progress is not None:
            self._progress.cancel()
        if self._training is not None:
            self._training.cancel()
        reconciler = self.reconciler
        if reconciler is not None:
            await reconciler.close()
        if self.drain_hooks is not None:
            self.drain_hooks.close()
        if self.elector is not None:
            # A pass abandoned by ``close`` may still have a call on its thread: release only once
            # every pass thread has ended, else let the Lease expire (the standby waits it out).
            drained = reconciler is None or await asyncio.to_thread(drained_within, reconciler.pool, 2.0)
            if not drained:
                log.warning("a pass is still sending: the Lease is left to expire")
            await asyncio.to_thread(self.elector.stop, drained)

    def connection(self) -> kopf.ConnectionInfo:
        """connection: the credentials the API client already loaded, so kopf and the passes
        talk to the same cluster as the same user (kubeconfig or in-cluster), whatever the
        environment says."""
        cfg = self.api_client.configuration
        # Through get_api_key_with_prefix, which calls the in-cluster refresh hook: a projected
        # ServiceAccount token is rotated by the kubelet, and kopf logs in again after a 401.
        header = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix("authorization")
        return kopf.ConnectionInfo(
            server=cfg.host,
            ca_path=cfg.ssl_ca_cert,
            insecure=not cfg.verify_ssl,
            certificate_path=cfg.cert_file,
            private_key_path=cfg.key_file,
            token=bearer_token(header),
        )


def start_order(store: cache.InformerCache) -> list[JobKey]:
    """start_order: every job, and every job its pods name (a gone job's pods must be let go),
    those with a pod that ended or is being deleted first: after a restart, those are the ones
    waiting for a replacement; the others' passes usually send nothing."""
    urgent = {
        key
        for key, pods in store.pods.by_job.items()
        if any(p.value.deleting or p.value.terminal for p in pods.values())
    }
    return [*urgent, *((set(store.jobs.items) | set(store.pods.by_job)) - urgent)]


def drained_within(pool: concurrent.futures.ThreadPoolExecutor, timeout: float) -> bool:
    """drained_within: every thread of ``pool`` (already shut) ended within ``timeout`` seconds.
    The wait is on a daemon thread, so a call that never returns cannot hold the exit."""
    waiter = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, daemon=True)
    waiter.start()
    waiter.join(timeout)
    return not waiter.is_alive()
