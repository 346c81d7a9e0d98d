"""The Settings the operator plans with, derived once at start from its options and the cluster;
and the objects a job owns, read as the operator's cache holds them. ``aitj explain`` derives
both the same way, so it plans exactly as the operator would.

What is served decides part of the Settings (``aitj.controller.served``): Volcano's PodGroup
kind, and the native gang API in the newest version served (``gangapi.served_version``),
used where Volcano's PodGroup is not served (one gang per job, and Volcano reads its own).
The gang API is planned only where it may also be listed (an install whose role predates it:
``gangapi.listable``), for the schedulerNames ``gangapi.DEFAULT_SCHEDULERS``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from kubernetes import client

from aitj.controller import gangapi
from aitj.controller.cache import OPTIONAL, OWNED_COLLECTIONS, owned_kind
from aitj.controller.informer import METADATA_ONLY
from aitj.controller.kubeclient import raw_get
from aitj.controller.options import OperatorOptions
from aitj.controller.served import served_kinds
from aitj.core import api
from aitj.core.planner import objects
from aitj.core.planner.types import ObjectKind, ObjectRef, ObjectState, Owned, Settings
from aitj.core.render import gang as gang_render
from aitj.core.wire import mapping


def planner_settings(
    api_client: client.ApiClient, options: OperatorOptions
) -> tuple[Settings, frozenset[ObjectKind]]:
    """planner_settings: the Settings the operator plans with, and the optional kinds it
    watches (those served, less the gang kinds when no gang is planned). The listability of
    the gang kinds is asked where ``options.namespaces`` say (the first, or the cluster)."""
    version = gangapi.served_version(api_client) or gang_render.NEWEST
    served = set(served_kinds(api_client, version))
    native = set(gangapi.KINDS) <= served and ObjectKind.VOLCANO_PODGROUP not in served
    gang: frozenset[str] = frozenset()
    if native:
        gang = gangapi.gang_schedulers(api_client, gangapi.DEFAULT_SCHEDULERS, options.namespaces, version)
    if not gang:
        served -= set(gangapi.KINDS)
    settings = Settings(
        dict(options.priority_classes),
        options.node_signals,
        volcano_podgroups=ObjectKind.VOLCANO_PODGROUP in served,
        gang_schedulers=gang,
        gang_version=version,
    )
    return settings, frozenset(served)


class Unlisted(RuntimeError):
    """Unlisted: a LIST of the job's objects was refused (say, a user not allowed to list
    Secrets): what the job owns cannot be told."""


def owned_objects(
    api_client: client.ApiClient,
    namespace: str,
    job: str,
    served: Collection[ObjectKind],
    gang_version: str = gang_render.NEWEST,
) -> Owned:
    """owned_objects: the objects other than pods the job label picks, each with its state
    (``cache.OWNED_COLLECTIONS``; of the optional kinds only those ``served``), as the
    operator's cache holds them: the planner counts as the job's only those it controls
    (``objects.split``). One metadata-only LIST per kind (a Secret's data is never read: the
    caller's own right to list Secrets, which the operator does not hold); raises Unlisted
    when one is refused. The native gang kinds are listed in ``gang_version``."""
    selector = f"{api.LABEL_JOB}={job}"
    found: dict[ObjectRef, ObjectState] = {}
    for kind in OWNED_COLLECTIONS:
        if kind in OPTIONAL and kind not in served:
            continue
        where = owned_kind(kind, gang_version)
        for meta in _listed(api_client, where.path(namespace), selector):
            found[ObjectRef(kind, str(meta.get("name")))] = objects.state_of(meta)
    return found


def _listed(api_client: client.ApiClient, path: str, selector: str) -> list[Mapping[str, Any]]:
    """_listed: the metadata of the objects of the collection at ``path`` ``selector`` picks."""
    status, data = raw_get(api_client, path, query=[("labelSelector", selector)], accept=METADATA_ONLY)
    if status != 200:
        raise Unlisted(f"listing {path}: HTTP {status}")
    items = json.loads(data).get("items") or []
    return [mapping(item.get("metadata")) for item in items if isinstance(item, dict)]
