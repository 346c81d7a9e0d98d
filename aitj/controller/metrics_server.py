"""The operator's /metrics endpoint: HTTPS with the apiserver's authentication and authorization
by default, plain HTTP for local development (``aitj run --metrics-insecure``).

Secure, as controller-runtime serves metrics by default: TLS, then each scrape's bearer token
is reviewed (TokenReview) and its user must be allowed ``get`` on the non-resource URL
``/metrics`` (SubjectAccessReview); ``aitj.core.metrics_auth`` decides, this module only asks.
Each scrape costs two small API calls (one every 30 s from a Prometheus); a request without a
token costs none. The operator's account needs ``create`` on tokenreviews and
subjectaccessreviews (manifests/base/clusterrole.yaml).

The certificate: ``tls.crt`` and ``tls.key`` from ``--metrics-cert-dir`` when given (a Secret
mounted there, from cert-manager for instance; read once at start, so a rotated certificate
takes a restart); else a self-signed one made at start (ECDSA P-256, one year, held in memory
once loaded: the files ssl loads it from are written to a private temporary directory, which
is removed at once; the Deployment's root filesystem is read-only, /tmp is an emptyDir). A
Prometheus scraping a self-signed endpoint skips verification (manifests/monitoring/
servicemonitor.yaml says ``insecureSkipVerify``): the token, not the certificate, is what keeps
the page private.

Insecure: plain HTTP, no authentication, for the local control plane, the tests, the demo, the
bench and chaos, which read it from 127.0.0.1.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import structlog
import urllib3
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder

from aitj.core import metrics_auth
from aitj.core.metrics_auth import Verdict

log = structlog.get_logger(__name__)

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"
CERT_DAYS = 365
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class MetricsEndpoint:
    """MetricsEndpoint: where /metrics is served (``port`` 0: not at all) and how: ``secure``
    (HTTPS, token and access reviewed) or plain HTTP; ``cert_dir`` holds tls.crt and tls.key
    (None: self-signed at start)."""

    port: int = 8443
    address: str = "127.0.0.1"
    secure: bool = True
    cert_dir: Path | None = None


DEFAULT_METRICS = MetricsEndpoint()


class ReviewFailed(Exception):
    """ReviewFailed: the apiserver did not answer a review (the scrape gets a 503)."""


class Reviewer:
    """Reviewer: asks the apiserver whose a token is and whether that user may read /metrics."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    def verdict(self, authorization: str | None) -> Verdict:
        """verdict: the answer to a scrape sending this Authorization header."""
        token = metrics_auth.bearer(authorization)
        if token is None:
            return metrics_auth.verdict(None, None)
        status = self._create(TOKEN_REVIEWS, metrics_auth.token_review(token))
        asked = metrics_auth.access_review(status)
        if asked is None:
            return metrics_auth.verdict(status, None)
        return metrics_auth.verdict(status, self._create(ACCESS_REVIEWS, asked))

    def _create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """_create: the status of a review created at ``path`` (plain JSON: no model objects)."""
        method, url, headers, data, post = self.api.param_serialize(
            "POST",
            path,
            body=body,
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(method, url, headers, data, post, _request_timeout=(5.0, 10.0)).response
        try:
            if response.status != 201:
                raise ReviewFailed(f"{path}: {response.status}")
            status: dict[str, Any] = json.loads(response.data).get("status") or {}
            return status
        finally:
            response.release_conn()


def serve(endpoint: MetricsEndpoint, api: client.ApiClient | None) -> ThreadingHTTPServer | None:
    """serve starts /metrics in a daemon thread as ``endpoint`` says and returns its server
    (None when the port is 0). ``api`` is needed when secure."""
    if not endpoint.port:
        return None
    reviewer = None
    if endpoint.secure:
        if api is None:
            raise ValueError("secure metrics need an API client for their reviews")
        reviewer = Reviewer(api)
    server_class = _Server6 if ":" in endpoint.address else _Server
    server = server_class((endpoint.address, endpoint.port), _handler(reviewer))
    if endpoint.secure:
        # The handshake waits for the first read, in the request's own thread: a client that
        # connects and stalls holds its thread, not the accept loop.
        server.socket = _tls(endpoint).wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log.info("metrics served", address=endpoint.address, port=endpoint.port, secure=endpoint.secure)
    return server


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def _handler(reviewer: Reviewer | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 30  # seconds a connection may idle (the TLS handshake included)

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != metrics_auth.METRICS_PATH:
                self._answer(404, b"not found\n", "text/plain")
                return
            answer = Verdict.ALLOWED
            if reviewer is not None:
                try:
                    answer = reviewer.verdict(self.headers.get("Authorization"))
                except (ReviewFailed, OSError, urllib3.exceptions.HTTPError) as e:  # not the caller's fault
                    log.warning("metrics review failed", error=str(e))
                    self._answer(503, b"review failed\n", "text/plain")
                    return
            if answer is not Verdict.ALLOWED:
                self._answer(answer, f"{answer.name.lower()}\n".encode(), "text/plain")
                return
            # The format the scraper asks for, as prometheus_client's own server chooses it
            # (OpenMetrics adds each counter's created timestamp; the counters' known label sets
            # exist at 0 anyway, so neither format loses a first increment: docs/dashboards.md).
            encoder, content_type = choose_encoder(self.headers.get("Accept") or "")
            self._answer(200, encoder(REGISTRY), content_type)

        def _answer(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(int(code))
            if code == Verdict.UNAUTHENTICATED:
                self.send_header("WWW-Authenticate", 'Bearer realm="aitj metrics"')
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Scrapes are not logged: one line every 30 s says nothing."""

    return Handler


def _tls(endpoint: MetricsEndpoint) -> ssl.SSLContext:
    """_tls: a server context with the mounted certificate, else a self-signed one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if endpoint.cert_dir is not None:
        context.load_cert_chain(endpoint.cert_dir / CERT_FILE, endpoint.cert_dir / KEY_FILE)
        return context
    # ssl loads a chain from files only: the self-signed pair is written to a private folder
    # (mode 0700), loaded, and removed at once, so no key is left behind on disk.
    cert, key = self_signed(endpoint.address)
    with tempfile.TemporaryDirectory(prefix="aitj-metrics-tls-") as name:
        folder = Path(name)
        (folder / CERT_FILE).write_bytes(cert)
        (folder / KEY_FILE).touch(mode=0o600)
        (folder / KEY_FILE).write_bytes(key)
        context.load_cert_chain(folder / CERT_FILE, folder / KEY_FILE)
    return context


def self_signed(address: str, now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """self_signed: (certificate PEM, key PEM) for this host: its name, localhost and
    ``address`` when that is an IP other than the unspecified one."""
    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    names: list[x509.GeneralName] = [x509.DNSName(host), x509.DNSName("localhost")]
    try:
        ip = ipaddress.ip_address(address)
        if not ip.is_unspecified:
            names.append(x509.IPAddress(ip))
    except ValueError:
        pass
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"aitj-metrics@{host}"[:64])])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
