"""What the apiserver's answers say, for the executor's calls (``aitj.controller.executor.calls``):
the object a call returned, whether a refused status write was only stale, and the metadata of
an object met by AlreadyExists."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as TransportError

from aitj.controller.cache import UNWATCHED, owned_kind
from aitj.controller.executor.contract import StepFailed
from aitj.controller.informer import METADATA_ONLY as METADATA_ONLY_LIST
from aitj.controller.informer import METADATA_ONLY_WATCH as METADATA_ONLY_ONE
from aitj.controller.kubeclient import raw_get
from aitj.core.planner.types import ObjectKind
from aitj.core.render import gang
from aitj.core.wire import mapping


def body_of(response: Any) -> Mapping[str, Any] | None:
    """body_of: the JSON object a call returned (None when there is none to read)."""
    data = getattr(response, "data", None)
    if not isinstance(data, bytes) or not data:
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and "metadata" in value else None


def version_test_failed(e: ApiException) -> bool:
    """version_test_failed: a 422 answer to the status write's JSON patch is its version test
    failing, not a refusal of the patched object. Measured on the apiserver (v1.36): a failed
    ``test`` op cannot be applied, so no object is validated and the Status's ``details`` are
    empty ({}); a schema rule or a ValidatingAdmissionPolicy refuses the patched object and
    ``details`` name it (``name``, ``kind``, ``causes``). Text matching is avoided: the
    failed test's message is a generic one ("the server rejected our request due to an error
    in our request"). An answer that cannot be read counts as a refusal (backed off, never a
    loop)."""
    try:
        answer = json.loads(e.body or "")
    except (TypeError, ValueError):
        return False
    return isinstance(answer, dict) and answer.get("reason") == "Invalid" and not answer.get("details")


def read_metadata(
    api_client: client.ApiClient, namespace: str, kind: ObjectKind, name: str, gang_version: str = gang.NEWEST
) -> Mapping[str, Any] | None:
    """read_metadata: the metadata of one object (None: there is none), read with the verb
    the operator already holds on its kind: ``list`` by name (fieldSelector) for each kind
    it watches, so no ``get`` is granted on them; ``get`` for a Secret, the one kind it
    may not list (a list of Secrets is a read of every one). The native gang kinds are read
    in ``gang_version``."""
    path = owned_kind(kind, gang_version).path(namespace)
    try:
        if kind in UNWATCHED:
            status, data = raw_get(api_client, f"{path}/{name}", accept=METADATA_ONLY_ONE)
        else:
            query = [("fieldSelector", f"metadata.name={name}")]
            status, data = raw_get(api_client, path, query=query, accept=METADATA_ONLY_LIST)
    except (TransportError, OSError) as e:
        raise StepFailed(f"reading {kind} {name}: {e}") from e
    if status == 404:
        return None
    if status != 200:
        raise StepFailed(f"reading {kind} {name}: HTTP {status}")
    found = json.loads(data)
    if kind in UNWATCHED:
        return mapping(found)
    items = [item for item in found.get("items") or () if isinstance(item, Mapping)]
    return items[0] if items else None
