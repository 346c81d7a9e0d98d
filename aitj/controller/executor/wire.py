"""Wire: the calls a recovery makes (a pod's create, patch and delete, an Event, the job's status
write) sent as JSON built here, straight through the official client's connection pool.

Why not the generated client for these (issue 26, docs/operator.md "The hot path"): profiled
under ``make bench``, its call path (pydantic's ``validate_call`` on every method, the walk of
``sanitize_for_serialization`` over the body, ``param_serialize``) was 30 % of the operator's
busy CPU, for calls whose bodies are plain JSON already. Here a call is its path, the body
encoded once by orjson and one urllib3 request. What the client gives stays the client's: the
pool (so connections are shared with every other call and reused: docs/operator.md
"Connections"), TLS, the credentials (``update_params_for_auth``, which also refreshes an
expiring token through the configuration's hook) and its default headers (User-Agent).

Answers keep the client's shape, so the executor's handling is unchanged: a status of 400 or
more raises ``ApiException`` (its ``status``, ``body`` and ``headers``, Retry-After included),
no answer raises urllib3's ``HTTPError`` as the client's calls do. A successful answer is
returned read (``.data``), its connection back in the pool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import orjson
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.informer import JSON
from aitj.core import api

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
# A pod's patches use strategic merge: the finalizer's release is a ``$deleteFromPrimitiveList``.
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
# Connect, then read: a call that hangs must not hold one of the passes' threads for ever (the
# generated client's calls had no timeout); a minute is far past any answer of a loaded server.
TIMEOUT = urllib3.Timeout(connect=10.0, read=60.0)


def encode(body: Any) -> bytes:
    """encode: ``body`` as JSON bytes. Plans hold plain dicts, lists and tuples; a read-only
    mapping (a rendered template's) is written as the object it is."""
    return orjson.dumps(body, default=_plain)


def _plain(value: Any) -> Any:
    """_plain: what orjson cannot write on its own, as something it can (a Mapping as a dict)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


class Wire:
    """Wire sends the executor's frequent calls (module docstring) with ``api_client``'s pool and
    credentials. Safe to share between the passes' threads, as the pool is."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self.host = api_client.configuration.host.rstrip("/")
        self.pool = api_client.rest_client.pool_manager
        # The server's connection pool, found once: the manager's ``request`` parses the URL
        # and looks the pool up again on every call (7 % of a call's CPU). Behind a proxy the
        # manager's own path is kept, as it writes the request line for the proxy.
        self._direct = not isinstance(self.pool, urllib3.ProxyManager)
        self._server: urllib3.HTTPConnectionPool | None = None

    # ---- the calls ----------------------------------------------------------------------------
    def create_pod(self, namespace: str, body: Mapping[str, Any]) -> Any:
        """create_pod: POST the pod."""
        return self.send("POST", f"/api/v1/namespaces/{namespace}/pods", body)

    def patch_pod(self, name: str, namespace: str, patch: Mapping[str, Any]) -> Any:
        """patch_pod: a strategic merge patch of one pod."""
        return self.send("PATCH", _pod(namespace, name), patch, content_type=STRATEGIC_PATCH)

    def delete_pod(self, name: str, namespace: str, uid: str, grace: int | None) -> Any:
        """delete_pod: DELETE one pod under its uid (a newer pod of the name answers 409), with
        ``grace`` seconds (None: the pod's own)."""
        options: dict[str, Any] = {"preconditions": {"uid": uid}}
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        return self.send("DELETE", _pod(namespace, name), options)

    def create_event(self, namespace: str, body: Mapping[str, Any], *, dry_run: bool = False) -> Any:
        """create_event: POST a core/v1 Event (``dry_run``: admitted, not stored)."""
        query = (("dryRun", "All"),) if dry_run else ()
        return self.send("POST", f"/api/v1/namespaces/{namespace}/events", body, query=query)

    def patch_job_status(self, namespace: str, name: str, patch: Any, content_type: str) -> Any:
        """patch_job_status: PATCH the job's status subresource (a JSON patch or a merge patch)."""
        path = f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.PLURAL}/{name}/status"
        return self.send("PATCH", path, patch, content_type=content_type)

    # ---- one request ----------------------------------------------------------------------------
    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = JSON,
        query: Sequence[tuple[str, str]] = (),
    ) -> Any:
        """send: one request, its answer read; a status of 400 or more raises ApiException."""
        headers = {**self.api_client.default_headers, "Accept": JSON, "Content-Type": content_type}
        self.api_client.update_params_for_auth(headers, [], ["BearerToken"], path, method, None)
        target = quote(path)
        if query:
            target += "?" + urlencode(query)
        data = None if body is None else encode(body)
        if self._direct:
            answer = self._send_direct(method, target, data, headers)
        else:
            url = self.host + target
            answer = self.pool.request(method, url, body=data, headers=headers, timeout=TIMEOUT)
        if answer.status >= 400:
            raise ApiException(http_resp=answer)
        return answer

    def _send_direct(self, method: str, target: str, data: bytes | None, headers: dict[str, str]) -> Any:
        """_send_direct: the request on the server's pool, as the manager would send it (no
        redirects followed: the API server makes none); a pool the manager has closed (its
        ``clear``, when the client closes) is looked up again."""
        server = self._server
        if server is None or server.pool is None:
            server = self._server = self.pool.connection_from_url(self.host)
        return server.urlopen(method, target, body=data, headers=headers, timeout=TIMEOUT, redirect=False)


def _pod(namespace: str, name: str) -> str:
    """_pod: the path of one pod."""
    return f"/api/v1/namespaces/{namespace}/pods/{name}"
