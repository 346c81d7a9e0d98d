"""controller-runtime's metrics of the operator's machinery (aitj.controller.clientmetrics): the
pass queue as ``workqueue_*``, every request of an instrumented API client as ``rest_client_*``
(the generated client's path, the raw GETs and the executor's Wire alike), and the Lease as
``leader_election_master_status``."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client.core import REGISTRY

from aitj.controller import clientmetrics, metrics
from aitj.controller.executor.wire import Wire
from aitj.controller.kubeclient import raw_get
from tests.unit.test_reconciler import KEY, Recorder, body, reconciler

QUEUE = {"name": clientmetrics.QUEUE}


def value(family: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(family, labels) or 0.0


class Counts:
    """Counts: the queue's adds, waits observed and passes observed, from a starting point."""

    def __init__(self) -> None:
        self.start = self.now()

    @staticmethod
    def now() -> tuple[float, float, float]:
        return (
            value("workqueue_adds_total", **QUEUE),
            value("workqueue_queue_duration_seconds_count", **QUEUE),
            value("workqueue_work_duration_seconds_count", **QUEUE),
        )

    def since(self) -> tuple[float, float, float]:
        now = self.now()
        return (now[0] - self.start[0], now[1] - self.start[1], now[2] - self.start[2])


def test_a_job_waiting_is_added_once_and_taken_when_its_pass_starts() -> None:
    queue, counts = clientmetrics.WorkQueue(), Counts()
    queue.add(("ns", "a"))
    queue.add(("ns", "a"))  # already waiting: nothing more
    queue.add(("ns", "b"))
    assert queue.depth() == 2 and value("workqueue_depth", **QUEUE) == 2
    started = queue.get(("ns", "a"))
    assert queue.depth() == 1 and value("workqueue_depth", **QUEUE) == 1
    queue.done(started)
    queue.defer(("ns", "b"))  # held back by a backoff: out of the queue, no wait observed
    assert value("workqueue_depth", **QUEUE) == 0
    assert counts.since() == (2, 1, 1)


def test_a_kick_is_one_add_one_wait_and_one_pass_of_work() -> None:
    r, _, _ = reconciler(Recorder(), body())
    counts = Counts()
    asyncio.run(r.kick(KEY))
    assert counts.since() == (1, 1, 1)
    assert value("workqueue_depth", **QUEUE) == 0


def test_kicks_during_a_pass_are_one_more_item_as_controller_runtime_s_dirty_item() -> None:
    rec = Recorder()
    rec.gate = threading.Event()
    r, planner, _ = reconciler(rec, body())
    counts = Counts()

    async def burst() -> None:
        first = asyncio.ensure_future(r.kick(KEY))
        await asyncio.sleep(0.05)  # the first pass is blocked in the executor
        await asyncio.gather(*(r.kick(KEY) for _ in range(5)))
        assert value("workqueue_depth", **QUEUE) == 1  # waiting for the pass under way
        rec.gate.set()  # type: ignore[union-attr]
        await first

    asyncio.run(burst())
    assert len(planner.calls) == 2 and counts.since() == (2, 2, 2)
    assert value("workqueue_depth", **QUEUE) == 0


# ---- the REST client ----------------------------------------------------------------------


class _Answers(BaseHTTPRequestHandler):
    """Answers 200 to GET /ok, 201 to any POST, 404 to anything else."""

    def do_GET(self) -> None:
        self._answer(200 if self.path == "/ok" else 404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(201)

    def _answer(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def api_for(host: str) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = f"http://{host}"
    cfg.retries = False
    return clientmetrics.instrument(client.ApiClient(cfg))


def requests(code: str, method: str, host: str) -> float:
    return value("rest_client_requests_total", code=code, method=method, host=host)


def test_every_request_of_an_instrumented_client_is_counted_by_code_method_and_host_and_timed(
    server: str,
) -> None:
    api = api_for(server)
    timed = value("rest_client_request_duration_seconds_count", verb="GET", host=server)
    assert raw_get(api, "/ok")[0] == 200
    assert raw_get(api, "/missing")[0] == 404
    assert requests("200", "GET", server) == 1 and requests("404", "GET", server) == 1
    assert value("rest_client_request_duration_seconds_count", verb="GET", host=server) == timed + 2
    # The executor's own path (Wire: straight to the pool) is counted by the same hook.
    Wire(api).send("POST", "/api/v1/namespaces/ns/pods", {"kind": "Pod"})
    assert requests("201", "POST", server) == 1
    with pytest.raises(ApiException):
        Wire(api).send("GET", "/nothing-here")
    assert requests("404", "GET", server) == 2


def test_a_request_that_gets_no_answer_is_counted_as_an_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        host = f"127.0.0.1:{s.getsockname()[1]}"
    api = api_for(host)
    with pytest.raises(Exception):  # noqa: B017 - urllib3's error, whichever it is
        raw_get(api, "/ok", timeout=(1.0, 1.0))
    assert requests(clientmetrics.NO_ANSWER, "GET", host) >= 1


def test_the_lease_s_status_follows_leadership_only_under_leader_election() -> None:
    metrics.set_leader(False, "aitj-leader")
    assert value("leader_election_master_status", name="aitj-leader") == 0
    metrics.set_leader(True, "aitj-leader")
    assert value("leader_election_master_status", name="aitj-leader") == 1
    metrics.set_leader(True)  # no leader election: aitj_leader only
    assert value("aitj_leader") == 1
