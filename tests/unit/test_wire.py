"""The executor's prebuilt JSON (aitj.controller.executor.wire): what a Plan's bodies hold is
written as the JSON object it stands for, and anything else is refused rather than sent as
something the apiserver would misread; a call's request line is the path to the server and the
whole URL to a proxy. The calls themselves are tested against the real apiserver
(tests/e2e/test_executor.py)."""

from __future__ import annotations

import http.server
import json
import threading
from types import MappingProxyType
from typing import ClassVar

import pytest
from kubernetes import client

from aitj.controller.executor.wire import Wire, encode


def test_plain_json_is_written_as_it_is() -> None:
    body = {"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"n": [1, 2.5, True, None]}}
    assert json.loads(encode(body)) == body


def test_read_only_mappings_and_tuples_are_written_as_objects_and_arrays() -> None:
    body = MappingProxyType({"spec": MappingProxyType({"args": ("a", "b")})})
    assert json.loads(encode(body)) == {"spec": {"args": ["a", "b"]}}


def test_a_value_json_has_no_form_for_is_refused() -> None:
    with pytest.raises(TypeError, match="set"):
        encode({"finalizers": {"a"}})


class _Recorder(http.server.BaseHTTPRequestHandler):
    """_Recorder: answers every request 201 with an empty object, keeping its request line."""

    lines: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.lines.append(self.requestline)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        """log_message: quiet."""


@pytest.mark.parametrize("through_proxy", [False, True])
def test_a_call_names_the_path_to_the_server_and_the_whole_url_to_a_proxy(through_proxy: bool) -> None:
    """Straight to the server the request line holds the path (the server's pool, found once);
    through an HTTP proxy the whole URL, as the proxy needs (the pool manager's own path)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    here = f"http://127.0.0.1:{server.server_port}"
    config = client.Configuration(host="http://apiserver.invalid:6443" if through_proxy else here)
    if through_proxy:
        config.proxy = here
    _Recorder.lines.clear()
    try:
        with client.ApiClient(config) as api:
            wire = Wire(api)
            for _ in range(2):  # the second call reuses what the first found
                wire.create_event("ns", {"metadata": {"name": "e"}})
    finally:
        server.shutdown()
        server.server_close()
    path = "/api/v1/namespaces/ns/events"
    target = f"http://apiserver.invalid:6443{path}" if through_proxy else path
    assert _Recorder.lines == [f"POST {target} HTTP/1.1"] * 2
