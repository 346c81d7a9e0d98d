"""Which of the optional kinds (``cache.OPTIONAL``: another project's CRD, such as Volcano's
PodGroup) the API server serves, asked once at start through API discovery.

Once at start, not watched: the operator's informers and its ``Settings`` are fixed for its
life, so a CRD installed later is used after the operator's next restart (docs/volcano.md).
Discovery (``GET /apis/<group>/<version>``) is open to every authenticated user, so it needs
no grant of the ClusterRole. An answer other than 200 or 404 (the server unreachable) counts
as not served, with a warning: the operator then runs as on a cluster without it.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from aitj.controller.cache import OPTIONAL, owned_kind
from aitj.controller.informer import Kind
from aitj.controller.kubeclient import raw_get
from aitj.controller.logs import log
from aitj.core.planner.types import ObjectKind
from aitj.core.render import gang


def served_kinds(api_client: client.ApiClient, gang_version: str = gang.NEWEST) -> frozenset[ObjectKind]:
    """served_kinds: the optional kinds the API server serves now (the native gang kinds in
    ``gang_version``: ``gangapi.served_version`` says which the server serves)."""
    return frozenset(kind for kind in OPTIONAL if _served(api_client, owned_kind(kind, gang_version)))


def _served(api_client: client.ApiClient, kind: Kind[Any]) -> bool:
    """_served: the group version of ``kind`` lists its resource."""
    group_path, plural = kind.group_path, kind.plural
    try:
        status, data = raw_get(api_client, group_path)
    except Exception as e:  # any failure to ask is "not served", said once
        log.warning("API discovery failed: the kind is taken as not served", path=group_path, error=str(e))
        return False
    if status == 404:
        return False
    if status != 200:
        log.warning("API discovery failed: the kind is taken as not served", path=group_path, status=status)
        return False
    try:
        resources = json.loads(data).get("resources") or []
    except (ValueError, AttributeError):
        return False
    return any(isinstance(r, dict) and r.get("name") == plural for r in resources)
