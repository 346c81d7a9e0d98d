"""Kubernetes' native gang API (scheduling.k8s.io: Workload, PodGroup) seen from the
controller: which version the cluster serves, whether the operator may read it, and the calls
that create and delete its objects.

Asked once at start-up, like Volcano's kind (``aitj.controller.served``): the version first
(``served_version``: v1beta1 on Kubernetes 1.37, v1alpha2 on 1.36, the newest when both are
served), then ``listable``. The API is off unless the cluster enables it (the GenericWorkload
feature gate and ``--runtime-config``), and an install whose role predates it may not read
it. Where it is not served, the operator watches none of it and plans no gang
(``Settings.gang_schedulers`` stays empty): nothing changes. docs/gang.md says more.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.kubeclient import raw_get, release
from aitj.controller.logs import log
from aitj.core.planner.types import ObjectKind
from aitj.core.render import gang

KINDS: dict[ObjectKind, str] = {
    ObjectKind.GANG_WORKLOAD: gang.WORKLOAD_PLURAL,
    ObjectKind.GANG_POD_GROUP: gang.POD_GROUP_PLURAL,
}
# Where the operator's option names none: the scheduler name CCE manifests use, which the
# local control plane's gang-scheduling profile answers to (aitj.devcluster.config).
DEFAULT_SCHEDULERS = ("volcano",)


def group_path(version: str = gang.NEWEST) -> str:
    """group_path: the API path of the gang kinds in ``version``."""
    return f"/apis/{gang.api_version(version)}"


def served_version(api_client: client.ApiClient) -> str | None:
    """served_version: the newest version of the gang API whose discovery lists both kinds
    (``gang.served_version`` of what each of ``gang.VERSIONS`` lists), None when none does.
    Discovery is open to every authenticated user: no grant is needed. A failure to ask
    counts as not served, with a warning, as for the other optional kinds."""
    listed: dict[str, list[str]] = {}
    for version in gang.VERSIONS:
        path = group_path(version)
        try:
            status, data = raw_get(api_client, path)
            if status == 200:
                resources = json.loads(data).get("resources") or []
                listed[version] = [str(r.get("name")) for r in resources if isinstance(r, dict)]
            elif status != 404:
                log.warning(
                    "API discovery failed: the version is taken as not served", path=path, status=status
                )
        except Exception as e:  # any failure to ask is "not served", said once
            log.warning("API discovery failed: the version is taken as not served", path=path, error=str(e))
    return gang.served_version(listed)


def listable(api_client: client.ApiClient, namespaces: Sequence[str], version: str = gang.NEWEST) -> bool:
    """listable: the operator may list both gang kinds (in ``version``) where it watches (the
    first of its ``namespaces``, or the cluster): an install whose role predates them must not
    start informers that would be refused forever (the cache would never be synced)."""
    custom: Any = client.CustomObjectsApi(api_client)
    for plural in KINDS.values():
        try:
            if namespaces:
                response = custom.list_namespaced_custom_object(
                    gang.GROUP, version, namespaces[0], plural, limit=1, _preload_content=False
                )
            else:
                response = custom.list_cluster_custom_object(
                    gang.GROUP, version, plural, limit=1, _preload_content=False
                )
        except ApiException as e:
            if e.status == 403:
                return False
            raise
        release(response)
    return True


def gang_schedulers(
    api_client: client.ApiClient,
    names: Collection[str],
    namespaces: Sequence[str] = (),
    version: str = gang.NEWEST,
) -> frozenset[str]:
    """gang_schedulers: ``names`` when the operator may list the native gang API in
    ``version`` (which the caller found served: ``served_version``), else none."""
    usable = names and listable(api_client, namespaces, version)
    return frozenset(names) if usable else frozenset()


def gang_refused(error: BaseException | None) -> bool:
    """gang_refused: ``error`` is the apiserver refusing a PodGroup whose Workload is missing
    or being deleted (403, "PodGroup rejected: Workload ... not found"). Kubernetes 1.36's
    admission refuses so; 1.37's does not (it only adds the PodGroup's protection finalizer)."""
    return (
        isinstance(error, ApiException)
        and error.status == 403
        and "PodGroup rejected" in str(error.body or error.reason or "")
    )


class GangApi:
    """GangApi: create and delete calls for the gang kinds in ``version`` (the one served), in
    the shape the executor calls the typed clients in (``create(namespace, body, **options)``,
    ``delete(name, namespace, ...)``)."""

    def __init__(self, api_client: client.ApiClient, version: str = gang.NEWEST) -> None:
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.version = version

    def create_workload(self, namespace: str, body: Any, **options: Any) -> Any:
        return self._create(gang.WORKLOAD_PLURAL, namespace, body, options)

    def create_pod_group(self, namespace: str, body: Any, **options: Any) -> Any:
        return self._create(gang.POD_GROUP_PLURAL, namespace, body, options)

    def delete_pod_group(self, name: str, namespace: str, **options: Any) -> Any:
        return self.custom.delete_namespaced_custom_object(
            gang.GROUP, self.version, namespace, gang.POD_GROUP_PLURAL, name, **options
        )

    def _create(self, plural: str, namespace: str, body: Any, options: dict[str, Any]) -> Any:
        return self.custom.create_namespaced_custom_object(
            gang.GROUP, self.version, namespace, plural, body, **options
        )
