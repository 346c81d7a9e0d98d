"""The API client as every part of aitj makes it, and what is read off the client side.

One way to load credentials (a kubeconfig, else the pod's service account), one way to turn
an API error into the apiserver's own sentence, one way to find the namespace a kubeconfig
context names, so ``aitj run`` and every command agree on all three; one way to make a raw GET
(``raw_request``, ``raw_get``); one way to finish a raw response so its connection is reused;
and the one read the informers' cache cannot answer (``job_exists``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from aitj import CLIENT_AGENT, __version__
from aitj.core import api
from aitj.core.wire import mapping

# Who the apiserver is told makes a call (the User-Agent, before its first "/"): the name of the
# field manager in the managedFields of what it writes (``kubectl get -o yaml
# --show-managed-fields``), and the client in audit logs. The generated client's default says
# "OpenAPI-Generator", which tells a user nothing; the operator and the commands are told apart.
OPERATOR_AGENT = f"aitj-operator/{__version__}"


def api_client(kubeconfig: Path | None, *, user_agent: str = CLIENT_AGENT) -> client.ApiClient:
    """api_client: a client for ``kubeconfig``, else $KUBECONFIG or ~/.kube/config, else
    in-cluster, that names itself ``user_agent`` (OPERATOR_AGENT for the operator's own)."""
    cfg = client.Configuration()
    if (
        kubeconfig is not None
        or os.environ.get("KUBECONFIG")
        or Path.home().joinpath(".kube/config").exists()
    ):
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None, client_configuration=cfg
        )
    else:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    # A pass may send many calls at once (a whole replica's pods): allow that many connections.
    cfg.connection_pool_maxsize = 32
    made = client.ApiClient(cfg)
    made.user_agent = user_agent
    return made


def bearer_token(header: str | None) -> str | None:
    """bearer_token: the token of an Authorization header value, whatever the case of its
    scheme: the client's in-cluster config writes ``bearer <token>``, a kubeconfig
    ``Bearer <token>`` (an operator in its own image once sent ``Bearer bearer <token>`` and
    was refused)."""
    if not header or not header.strip():
        return None
    scheme, _, rest = header.strip().partition(" ")
    if rest and scheme.lower() == "bearer":
        return rest.strip() or None
    return header.strip()


def raw_request(
    api_client: client.ApiClient,
    path: str,
    *,
    query: Sequence[tuple[str, str]] = (),
    accept: str = "application/json",
    timeout: tuple[float, float] = (10.0, 30.0),
) -> Any:
    """raw_request: urllib3's response to a GET of ``path`` with the client's credentials, its
    body unread (the caller reads or streams it, then hands the connection back): no model
    objects are built, and a watch can be read line by line."""
    method, url, headers, body, post = api_client.param_serialize(
        "GET", path, query_params=list(query), header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    return api_client.call_api(method, url, headers, body, post, _request_timeout=timeout).response


def raw_get(
    api_client: client.ApiClient,
    path: str,
    *,
    query: Sequence[tuple[str, str]] = (),
    accept: str = "application/json",
    timeout: tuple[float, float] = (10.0, 30.0),
) -> tuple[int, bytes]:
    """raw_get: the status and body of a GET of ``path`` (``raw_request``), its connection
    handed back to the pool."""
    response = raw_request(api_client, path, query=query, accept=accept, timeout=timeout)
    try:
        return response.status, response.data
    finally:
        response.release_conn()


def release(response: object) -> None:
    """release reads a raw response to its end, which hands its connection back to the pool.

    Calls made with ``_preload_content=False`` (no model objects) return urllib3's response, and
    urllib3 returns the connection to the pool only once the body is read. One left unread costs
    the next call a new TCP and TLS handshake: measured with py-spy during recoveries, those
    handshakes were a tenth of the operator's CPU (docs/operator.md, "Connections")."""
    drain = getattr(response, "drain_conn", None)
    if drain is not None:
        drain()


def job_exists(api_client: client.ApiClient, namespace: str, name: str) -> bool:
    """job_exists reads the job from the API server (the cache may only be late)."""
    try:
        release(
            client.CustomObjectsApi(api_client).get_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, api.PLURAL, name, _preload_content=False
            )
        )
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def error_text(e: Exception) -> str:
    """error_text: the apiserver's message for a failed call (it names the field and the rule),
    else the HTTP status and reason."""
    body = getattr(e, "body", None)
    try:
        message = json.loads(body or "").get("message")
    except (TypeError, ValueError, AttributeError):
        message = None
    return str(message or f"{getattr(e, 'status', '')} {getattr(e, 'reason', '')}".strip())


def error_fields(e: Exception) -> tuple[str, ...]:
    """error_fields: the fields the causes of a refusal name (``spec.containers[0].image``)."""
    try:
        causes = json.loads(getattr(e, "body", None) or "").get("details", {}).get("causes") or []
        return tuple(str(c["field"]) for c in causes if isinstance(c, dict) and c.get("field"))
    except (TypeError, ValueError, AttributeError):
        return ()


def context_namespace(kubeconfig: Path | None) -> str:
    """context_namespace: the current kubeconfig context's namespace, as kubectl uses it
    ("default" when the context names none, or there is no kubeconfig: in-cluster)."""
    try:
        _, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None
        )
    except Exception:  # no kubeconfig (in-cluster) or an unreadable one: kubectl's default
        return "default"
    value = mapping(mapping(active).get("context")).get("namespace")
    return value if isinstance(value, str) and value else "default"
