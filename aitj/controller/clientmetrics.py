"""The controller-runtime metrics of the operator's machinery: its work queue and its REST
client, under controller-runtime's (client-go's) names, labels and meanings, so that dashboards
and alerts written for controller-runtime operators read aitj too (docs/metrics.md,
"controller-runtime metrics"). The families are declared in ``aitj.controller.metrics``;
``leader_election_master_status`` moves with ``metrics.set_leader``.

- ``WorkQueue``: the reconciler's per-job pass queue seen as controller-runtime's work queue. An
  item is a job; it is added when a kick finds it not already waiting (a kick during the job's
  pass waits for that pass to end, as controller-runtime's dirty item does), taken when its pass
  starts, and done when the pass ends. A job held back by a backoff or by pacing leaves the queue
  until its timer kicks it again (controller-runtime's rate-limited ``AddAfter``), so neither wait
  counts as queueing.
- ``instrument``: every request an API client sends, counted by status code (``<error>`` when no
  answer came) and method, and timed to its answer's headers (a watch: until it starts
  streaming), by the pools' own class: the generated client's calls, the raw GETs and the
  executor's ``Wire`` all go through the client's urllib3 pools, so one hook sees them all
  without touching the callers. kopf's own calls (aiohttp) are not counted.

Cost on the hot path: per request, two clock reads, a dict lookup and one counter increment and
one histogram observation (each a lock and an add); per pass, the same for the queue. No label
takes a value per call: ``host`` is the API server's ``host:port``, ``code`` and ``method`` are
small closed sets.
"""

from __future__ import annotations

import time
from typing import Any

import urllib3
from kubernetes import client

from aitj.controller import metrics

JobKey = tuple[str, str]
QUEUE = "aitrainingjob"  # the ``name`` label: controller-runtime names a controller by its kind
NO_ANSWER = "<error>"  # client-go's code when a request got no response


class WorkQueue:
    """WorkQueue: the ``workqueue_*`` series of one queue. Called on the event loop only (the
    reconciler's kicks and passes), so it needs no lock."""

    def __init__(self, name: str = QUEUE) -> None:
        self._waiting: dict[JobKey, float] = {}  # job -> when it was added (perf_counter)
        self._depth = metrics.WORKQUEUE_DEPTH.labels(name)
        self._adds = metrics.WORKQUEUE_ADDS.labels(name)
        self._queued = metrics.WORKQUEUE_QUEUE_DURATION.labels(name)
        self._work = metrics.WORKQUEUE_WORK_DURATION.labels(name)
        self._depth.set(0)

    def add(self, key: JobKey) -> None:
        """add: the job is kicked; counted once until its pass takes it (or a wait defers it)."""
        if key in self._waiting:
            return
        self._waiting[key] = time.perf_counter()
        self._adds.inc()
        self._depth.set(len(self._waiting))

    def get(self, key: JobKey) -> float:
        """get: the job's pass starts: how long it waited; returns the start, for ``done``."""
        now = time.perf_counter()
        added = self._waiting.pop(key, None)
        if added is not None:
            self._queued.observe(now - added)
            self._depth.set(len(self._waiting))
        return now

    def defer(self, key: JobKey) -> None:
        """defer: the job waits on a timer (backoff, pacing), out of the queue until it fires."""
        if self._waiting.pop(key, None) is not None:
            self._depth.set(len(self._waiting))

    def done(self, started: float) -> None:
        """done: the pass that ``get`` started at ``started`` ended."""
        self._work.observe(time.perf_counter() - started)

    def depth(self) -> int:
        """depth: the jobs waiting for their pass (for tests)."""
        return len(self._waiting)


class _Metered:
    """_Metered: a urllib3 connection pool that counts and times each request it sends (one per
    attempt: urllib3's own retries are requests of their own, as client-go counts them)."""

    host: str
    port: int | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._at = f"{self.host}:{self.port}" if self.port else self.host  # the ``host`` label
        # The (counter, histogram) children by (method, code): made once, then a dict lookup.
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}

    def _make_request(self, conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            response = super()._make_request(conn, method, url, *args, **kwargs)  # type: ignore[misc]
        except BaseException:
            self._observe(method, NO_ANSWER, started)
            raise
        self._observe(method, str(response.status), started)
        return response

    def _observe(self, method: str, code: str, started: float) -> None:
        seconds = time.perf_counter() - started
        pair = self._children.get((method, code))
        if pair is None:  # two threads may both make it: labels() returns the same children
            pair = self._children[(method, code)] = (
                metrics.REST_REQUESTS.labels(code, method, self._at),
                metrics.REST_DURATION.labels(method, self._at),
            )
        pair[0].inc()
        pair[1].observe(seconds)


class MeteredHTTPConnectionPool(_Metered, urllib3.HTTPConnectionPool):
    """MeteredHTTPConnectionPool: a plain HTTP pool, metered."""


class MeteredHTTPSConnectionPool(_Metered, urllib3.HTTPSConnectionPool):
    """MeteredHTTPSConnectionPool: an HTTPS pool, metered."""


def instrument(api_client: client.ApiClient) -> client.ApiClient:
    """instrument: ``api_client``'s requests counted and timed from now on (its pool manager makes
    metered pools; a pool it had already made is dropped, so call this before sending)."""
    manager = api_client.rest_client.pool_manager
    manager.pool_classes_by_scheme = {"http": MeteredHTTPConnectionPool, "https": MeteredHTTPSConnectionPool}
    manager.clear()
    return api_client
