"""A fault-injecting HTTPS proxy in front of the local control plane's real apiserver.

The operator under test is given a kubeconfig that names the proxy instead of the apiserver
(``FaultProxy.write_kubeconfig``); everything it sends is forwarded to the real apiserver,
except what a ``Rule`` says to break: answer 429 (with Retry-After), 409 or 5xx without
forwarding; forward and then lose the answer (a 5xx, or the connection closed: the write
happened, the client cannot know); close the connection unanswered; hold a request (a delay,
or until the test opens a gate); answer a watch 410 Gone, as the apiserver does for a
resourceVersion that was compacted away; stall a watch (forwarded, but no event gets
through). Watches in flight can be ended cleanly (as the server's timeout ends them) or cut
mid-stream. Every request is recorded (``seen``), so a test counts the attempts it saw.

Why a proxy and not a real 410: the apiserver's watch cache serves a watch from an old
version even after an etcd compaction (docs/operator.md), so an expired watch is produced here.

TLS: the proxy serves the apiserver's own certificate (its names include 127.0.0.1 and the
cluster CA, which the kubeconfig trusts, signed it) and talks to the apiserver as the cluster's
admin. Standard library only: threads, ``http.server`` and ``http.client``. Which rule applies
to a request is decided purely (``aitj.devcluster.faultrules``).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import random
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from aitj.devcluster.faultrules import Fault, Request, Rule, choose, gone_event, status_body

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "trailer"}
# Not forwarded either: the relay reads watch events line by line, so nothing comes compressed.
DROPPED = {*HOP_BY_HOP, "accept-encoding"}
HOLD_LIMIT = 120.0  # a gate never opened lets its requests go after this long


@dataclass
class Seen:
    """Seen: one request the proxy received, and what it did (``fault`` None: forwarded as is)."""

    at: float  # time.monotonic()
    request: Request
    fault: Fault | None
    status: int | None = None  # the status the client got (None: none, or a stream)


@dataclass(eq=False)
class _Stream:
    """_Stream: a watch being relayed; ``end`` or ``cut`` asked by the test."""

    request: Request
    stalled: bool
    upstream: http.client.HTTPSConnection
    how: str = ""  # "end" (cleanly, as a server timeout) or "cut" (mid-stream)


class FaultProxy:
    """FaultProxy: listens on 127.0.0.1 (a free port unless given), forwards to ``upstream``
    (``https://127.0.0.1:PORT``) with the certificates in ``pki`` (the cluster's state dir)."""

    def __init__(self, upstream: str, pki: Path, *, port: int = 0, seed: int = 0) -> None:
        target = urlsplit(upstream)
        self.upstream_host, self.upstream_port = target.hostname or "127.0.0.1", target.port or 443
        self.client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.client_tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_tls.load_cert_chain(str(pki / "apiserver.crt"), str(pki / "apiserver.key"))
        self.server_tls.set_alpn_protocols(["http/1.1"])
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        self.withheld: list[Mapping[str, Any]] = []  # watch events a stalled watch did not pass on
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self._streams: set[_Stream] = set()
        self._server = _Server(("127.0.0.1", port), _Handler, self)
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """url: where the proxy listens, for a kubeconfig."""
        return f"https://127.0.0.1:{self.port}"

    # ---- control, from the test -----------------------------------------------------------
    def start(self) -> FaultProxy:
        """start serves in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, name="faultproxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """stop: no more connections; watches in flight are cut."""
        self._server.shutdown()
        self._server.server_close()
        self.cut_watches()

    def add(self, rule: Rule) -> Rule:
        """add puts ``rule`` after the others (the first matching rule applies)."""
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        """clear removes every rule (gates already waited on stay as they are)."""
        with self.lock:
            self.rules.clear()

    def requests(self, method: str = ".*", path: str = ".*", *, since: float = 0.0) -> list[Seen]:
        """requests: those seen since ``since`` (monotonic) whose method and path match in full."""
        with self.lock:
            seen = list(self.seen)
        return [
            s
            for s in seen
            if s.at >= since and re.fullmatch(method, s.request.method) and re.fullmatch(path, s.request.path)
        ]

    def end_watches(self, path: str = ".*") -> int:
        """end_watches ends the watches whose path matches as the server ends one (the final
        chunk: the client resumes from the last version it saw); returns how many."""
        return self._close_streams(path, "end")

    def cut_watches(self, path: str = ".*") -> int:
        """cut_watches breaks the watches whose path matches mid-stream (no final chunk)."""
        return self._close_streams(path, "cut")

    def write_kubeconfig(self, source: Path, target: Path) -> Path:
        """write_kubeconfig: ``source`` with every cluster's server set to the proxy."""
        config = yaml.safe_load(source.read_text())
        for entry in config.get("clusters") or []:
            entry["cluster"]["server"] = self.url
        target.write_text(yaml.safe_dump(config))
        return target

    def _close_streams(self, path: str, how: str) -> int:
        """_close_streams marks the matching watches ``how`` to end and wakes their relays."""
        with self.lock:
            streams = [s for s in self._streams if re.fullmatch(path, s.request.path)]
        for stream in streams:
            stream.how = how
            with contextlib.suppress(OSError):  # wakes the relay blocked on the upstream read
                if stream.upstream.sock is not None:
                    stream.upstream.sock.shutdown(socket.SHUT_RDWR)
        return len(streams)

    # ---- serving (handler threads) --------------------------------------------------------
    def decide(self, req: Request) -> Rule | None:
        """decide: the rule for ``req`` (counted), or None."""
        with self.lock:
            rule = choose(self.rules, req, self.rng.random)
            if rule is not None:
                rule.hits += 1
            return rule

    def record(self, req: Request, fault: Fault | None, status: int | None) -> None:
        """record adds a request to ``seen``, with what the client got."""
        with self.lock:
            self.seen.append(Seen(time.monotonic(), req, fault, status))

    def connect(self) -> http.client.HTTPSConnection:
        """connect: a new connection to the apiserver (raises OSError when it is down)."""
        conn = http.client.HTTPSConnection(
            self.upstream_host, self.upstream_port, context=self.client_tls, timeout=30
        )
        conn.connect()
        return conn


class _Server(http.server.ThreadingHTTPServer):
    """_Server: TLS per connection, in the connection's own thread (a slow handshake blocks
    only itself)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], proxy: FaultProxy) -> None:
        self.proxy = proxy
        super().__init__(address, handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """finish_request: the TLS handshake, then the connection's requests."""
        try:
            tls = self.proxy.server_tls.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()  # the raw socket socketserver closes was handed over to ``tls``

    def handle_error(self, request: Any, client_address: Any) -> None:
        """handle_error: a client that went away is no news."""


class _Handler(http.server.BaseHTTPRequestHandler):
    """_Handler: one client connection; each request goes through ``FaultProxy.decide``."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """log_message: silent (the proxy records what it saw in ``seen``)."""

    def do_GET(self) -> None:
        """do_GET (and every other method): ``_serve``."""
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _serve(self) -> None:
        """_serve: one request: the rule for it, held if it says so, then answered by the
        rule or forwarded (the apiserver down: the connection is closed unanswered)."""
        proxy = self.server.proxy
        req = Request.of(self.command, self.path)
        body = self._body()
        rule = proxy.decide(req)
        if rule is not None:
            if rule.gate is not None:
                rule.gate.wait(HOLD_LIMIT)
            if rule.delay:
                time.sleep(rule.delay)
        fault = rule.fault if rule is not None else None
        if rule is not None and fault in (Fault.STATUS, Fault.DROP, Fault.GONE):
            proxy.record(req, fault, {Fault.DROP: None, Fault.GONE: 410}.get(fault, rule.status))
            if fault is Fault.DROP:
                self.close_connection = True
            elif fault is Fault.GONE:
                self._stream_head(200)
                self._chunk(gone_event(req.resource_version))
                self._chunk(b"")
                self.close_connection = True
            else:
                self._answer(rule.status, status_body(rule.status, "injected by the fault proxy"), rule)
            return
        try:
            upstream = proxy.connect()
        except OSError:  # the apiserver is down: the client sees its connection close
            proxy.record(req, fault, None)
            self.close_connection = True
            return
        try:
            self._forward(upstream, req, body, rule)
        except OSError:
            self.close_connection = True
        finally:
            upstream.close()

    def _forward(
        self, upstream: http.client.HTTPSConnection, req: Request, body: bytes, rule: Rule | None
    ) -> None:
        """_forward sends the request to the apiserver and passes its answer on (a watch event
        by event), or loses the answer as the rule says."""
        proxy, fault = self.server.proxy, rule.fault if rule is not None else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in DROPPED}
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        resp = upstream.getresponse()
        if req.watch and resp.status == 200 and fault not in (Fault.LOST, Fault.DROP_AFTER):
            proxy.record(req, fault, 200)
            self._relay(upstream, resp, req, stalled=fault is Fault.STALL)
            return
        data = resp.read()
        if rule is not None and fault is Fault.DROP_AFTER:
            proxy.record(req, fault, None)
            self.close_connection = True
        elif rule is not None and fault is Fault.LOST:
            proxy.record(req, fault, rule.status)
            self._answer(rule.status, status_body(rule.status, "injected after forwarding"), rule)
        else:
            proxy.record(req, fault, resp.status)
            self._answer(resp.status, data, None, resp.getheaders())

    def _relay(
        self,
        upstream: http.client.HTTPSConnection,
        resp: http.client.HTTPResponse,
        req: Request,
        *,
        stalled: bool,
    ) -> None:
        """_relay passes a watch on event by event until it ends, or the test ends or cuts it."""
        proxy = self.server.proxy
        stream = _Stream(req, stalled, upstream)
        with proxy.lock:
            proxy._streams.add(stream)
        self._stream_head(200, resp.getheaders())
        try:
            while not stream.how:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException):
                    line = b""
                if not line or stream.how:
                    break
                if stalled:
                    with proxy.lock, contextlib.suppress(ValueError):
                        proxy.withheld.append(json.loads(line))
                    continue
                self._chunk(line)
            if stream.how == "cut":
                self.connection.shutdown(socket.SHUT_RDWR)
            elif stream.how == "end" or not line:
                # The apiserver ended it cleanly, or was stopped; either way the client reads an end.
                self._chunk(b"")
        finally:
            with proxy.lock:
                proxy._streams.discard(stream)
            self.close_connection = True

    # ---- writing ---------------------------------------------------------------------------
    def _body(self) -> bytes:
        """_body: the request's body (by Content-Length, or chunked)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return data
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _answer(
        self, status: int, data: bytes, rule: Rule | None, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        """_answer writes a whole answer: the apiserver's (its ``headers``), or the rule's own."""
        self.send_response_only(status)
        for key, value in headers:
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if rule is not None:
            self.send_header("Content-Type", "application/json")
            if rule.retry_after is not None:
                self.send_header("Retry-After", str(rule.retry_after))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stream_head(self, status: int, headers: Sequence[tuple[str, str]] = ()) -> None:
        """_stream_head starts a chunked answer (a watch), closed when it ends."""
        self.send_response_only(status)
        for key, value in headers:
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if not headers:
            self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        """_chunk writes one chunk (empty: the final one)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
