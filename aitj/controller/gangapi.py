"""Kubernetes' native gang API (scheduling.k8s.io/v1alpha2: Workload, PodGroup) seen from the
controller: whether the cluster serves it, and the calls that create and delete its objects.

Asked once at start-up (``aitj.controller.served``, then ``listable``): the API is alpha,
off unless the cluster enables it (the GenericWorkload feature gate and ``--runtime-config``),
and an install whose role predates it may not read it. Where it is not served, the operator
watches none of it and plans no gang (``Settings.gang_schedulers`` stays empty): nothing
changes. docs/gang.md says more.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.kubeclient import release
from aitj.core.planner.types import ObjectKind
from aitj.core.render import gang

KINDS: dict[ObjectKind, str] = {
    ObjectKind.GANG_WORKLOAD: gang.WORKLOAD_PLURAL,
    ObjectKind.GANG_POD_GROUP: gang.POD_GROUP_PLURAL,
}
GROUP_PATH = f"/apis/{gang.API_VERSION}"
# Where the operator's option names none: the scheduler name CCE manifests use, which the
# local control plane's gang-scheduling profile answers to (aitj.devcluster.config).
DEFAULT_SCHEDULERS = ("volcano",)


def listable(api_client: client.ApiClient, namespaces: Sequence[str]) -> bool:
    """listable: the operator may list both gang kinds where it watches (the first of its
    ``namespaces``, or the cluster): an install whose role predates them must not start
    informers that would be refused forever (the cache would never be synced)."""
    custom: Any = client.CustomObjectsApi(api_client)
    for plural in KINDS.values():
        try:
            if namespaces:
                response = custom.list_namespaced_custom_object(
                    gang.GROUP, gang.VERSION, namespaces[0], plural, limit=1, _preload_content=False
                )
            else:
                response = custom.list_cluster_custom_object(
                    gang.GROUP, gang.VERSION, plural, limit=1, _preload_content=False
                )
        except ApiException as e:
            if e.status == 403:
                return False
            raise
        release(response)
    return True


def gang_schedulers(
    api_client: client.ApiClient, names: Collection[str], namespaces: Sequence[str] = ()
) -> frozenset[str]:
    """gang_schedulers: ``names`` when the operator may list the native gang API (which the
    caller found served: ``aitj.controller.served``), else none."""
    usable = names and listable(api_client, namespaces)
    return frozenset(names) if usable else frozenset()


def gang_refused(error: BaseException | None) -> bool:
    """gang_refused: ``error`` is the apiserver refusing a PodGroup whose Workload is missing
    or being deleted (403, "PodGroup rejected: Workload ... not found")."""
    return (
        isinstance(error, ApiException)
        and error.status == 403
        and "PodGroup rejected" in str(error.body or error.reason or "")
    )


class GangApi:
    """GangApi: create and delete calls for the gang kinds, in the shape the executor calls the
    typed clients in (``create(namespace, body, **options)``, ``delete(name, namespace, ...)``)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.custom: Any = client.CustomObjectsApi(api_client)

    def create_workload(self, namespace: str, body: Any, **options: Any) -> Any:
        return self._create(gang.WORKLOAD_PLURAL, namespace, body, options)

    def create_pod_group(self, namespace: str, body: Any, **options: Any) -> Any:
        return self._create(gang.POD_GROUP_PLURAL, namespace, body, options)

    def delete_pod_group(self, name: str, namespace: str, **options: Any) -> Any:
        return self.custom.delete_namespaced_custom_object(
            gang.GROUP, gang.VERSION, namespace, gang.POD_GROUP_PLURAL, name, **options
        )

    def _create(self, plural: str, namespace: str, body: Any, options: dict[str, Any]) -> Any:
        return self.custom.create_namespaced_custom_object(
            gang.GROUP, gang.VERSION, namespace, plural, body, **options
        )
