"""The /metrics server (aitj.controller.metrics_server) without an apiserver: plain HTTP serves
the page; HTTPS with a self-signed certificate refuses a scrape without a token before any API
call. Token and access reviews against a real apiserver: tests/e2e/test_metrics_auth.py."""

from __future__ import annotations

import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509
from kubernetes import client

from aitj.cli import main
from aitj.controller import runner
from aitj.controller.metrics_server import MetricsEndpoint, self_signed, serve
from aitj.controller.options import OperatorOptions
from tests.clusters import free_port

NOWHERE = client.ApiClient(client.Configuration(host="https://127.0.0.1:1"))  # any call would fail


@pytest.fixture
def secure() -> Iterator[int]:
    port = free_port()
    server = serve(MetricsEndpoint(port, "127.0.0.1", secure=True), NOWHERE)
    assert server is not None
    yield port
    server.shutdown()
    server.server_close()


def unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def status(url: str, context: ssl.SSLContext | None = None, token: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return e.code


def test_plain_http_serves_the_page_to_anyone() -> None:
    port = free_port()
    server = serve(MetricsEndpoint(port, "127.0.0.1", secure=False), None)
    assert server is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert b"# TYPE " in response.read()
        assert status(f"http://127.0.0.1:{port}/other") == 404
    finally:
        server.shutdown()
        server.server_close()


def test_a_scraper_that_asks_for_openmetrics_gets_the_counters_created_timestamps() -> None:
    # Prometheus asks for OpenMetrics; only that format carries each counter's _created, from
    # which created-timestamp-zero-ingestion counts a counter's first increment.
    port = free_port()
    server = serve(MetricsEndpoint(port, "127.0.0.1", secure=False), None)
    assert server is not None
    try:
        accept = {"Accept": "application/openmetrics-text; version=1.0.0"}
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=accept)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
            body = response.read()
        assert body.rstrip().endswith(b"# EOF")  # the OpenMetrics ending
    finally:
        server.shutdown()
        server.server_close()


def test_https_refuses_a_scrape_without_a_token(secure: int) -> None:
    assert status(f"https://127.0.0.1:{secure}/metrics", unverified()) == 401
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"https://127.0.0.1:{secure}/metrics", timeout=10, context=unverified())
    refused.value.close()
    assert refused.value.headers["WWW-Authenticate"].startswith("Bearer")


def test_https_answers_503_when_the_apiserver_cannot_review(secure: int) -> None:
    assert status(f"https://127.0.0.1:{secure}/metrics", unverified(), token="abc") == 503


def test_https_does_not_speak_plain_http(secure: int) -> None:
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"http://127.0.0.1:{secure}/metrics", timeout=10)


def test_a_self_signed_certificate_leaves_no_key_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each start makes a new key pair; a folder left per start would pile up private keys.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port = free_port()
    server = serve(MetricsEndpoint(port, "127.0.0.1", secure=True), NOWHERE)
    assert server is not None
    try:
        assert status(f"https://127.0.0.1:{port}/metrics", unverified()) == 401  # TLS is served
        assert list(tmp_path.iterdir()) == []
    finally:
        server.shutdown()
        server.server_close()


def test_port_zero_serves_nothing() -> None:
    assert serve(MetricsEndpoint(0), None) is None


def test_secure_needs_an_api_client() -> None:
    with pytest.raises(ValueError, match="API client"):
        serve(MetricsEndpoint(free_port(), secure=True), None)


def test_the_self_signed_certificate_names_the_host_and_the_address() -> None:
    cert = x509.load_pem_x509_certificate(self_signed("10.1.2.3")[0])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param([], MetricsEndpoint(8443, "127.0.0.1", True, None), id="HTTPS on 8443 by default"),
        pytest.param(
            ["--metrics-insecure", "--metrics-port=8080"],
            MetricsEndpoint(8080, "127.0.0.1", False, None),
            id="plain HTTP asked for by name",
        ),
        pytest.param(
            ["--metrics-address=0.0.0.0", "--metrics-secure"],
            MetricsEndpoint(8443, "0.0.0.0", True, None),
            id="as the Deployment runs it",
        ),
    ],
)
def test_aitj_run_serves_metrics_as_its_flags_say(
    monkeypatch: pytest.MonkeyPatch, args: list[str], expected: MetricsEndpoint
) -> None:
    started: list[OperatorOptions] = []
    monkeypatch.setattr(runner, "run", started.append)
    result = CliRunner().invoke(main, ["run", *args])
    assert result.exit_code == 0, result.output
    assert [o.metrics for o in started] == [expected]


def test_a_mounted_certificate_is_the_one_served(tmp_path: Path) -> None:
    cert, key = self_signed("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    port = free_port()
    server = serve(MetricsEndpoint(port, "127.0.0.1", secure=True, cert_dir=tmp_path), NOWHERE)
    assert server is not None
    try:
        # Verified against that certificate alone, by name: it is the one the server presents.
        trusting = ssl.create_default_context(cadata=cert.decode())
        assert status(f"https://localhost:{port}/metrics", trusting) == 401
    finally:
        server.shutdown()
        server.server_close()
