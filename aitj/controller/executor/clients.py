"""The clients a pass calls with (``Clients``), which client call makes or removes each kind of
object a job owns (``CREATE``, ``DELETE``), and Volcano's PodGroups dressed as a typed client so
the tables can name them like the rest."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from aitj.controller.executor.fanout import Fanout
from aitj.controller.executor.wire import Wire
from aitj.controller.gangapi import GangApi
from aitj.core.planner.types import ObjectKind
from aitj.core.render import gang as gang_render
from aitj.core.render import volcano

# Per kind: the client (``core``, ``policy``, ``rbac``, ...) and its method.
CREATE = {
    ObjectKind.SERVICE: ("core", "create_namespaced_service"),
    ObjectKind.SECRET: ("core", "create_namespaced_secret"),
    ObjectKind.CONFIGMAP: ("core", "create_namespaced_config_map"),
    ObjectKind.SERVICE_ACCOUNT: ("core", "create_namespaced_service_account"),
    ObjectKind.ROLE: ("rbac", "create_namespaced_role"),
    ObjectKind.ROLE_BINDING: ("rbac", "create_namespaced_role_binding"),
    ObjectKind.PDB: ("policy", "create_namespaced_pod_disruption_budget"),
    ObjectKind.VOLCANO_PODGROUP: ("volcano", "create_namespaced_pod_group"),
    ObjectKind.GANG_WORKLOAD: ("gang", "create_workload"),
    ObjectKind.GANG_POD_GROUP: ("gang", "create_pod_group"),
}
# Only what the planner removes (a finished job's Service, budgets no longer wanted): the
# ssh Secret and discovery ConfigMap go with the job, by the garbage collector, so the
# ClusterRole grants no delete on them (the audit test holds that every grant is used).
DELETE = {
    ObjectKind.SERVICE: ("core", "delete_namespaced_service"),
    ObjectKind.PDB: ("policy", "delete_namespaced_pod_disruption_budget"),
    ObjectKind.GANG_POD_GROUP: ("gang", "delete_pod_group"),  # a gang of an earlier epoch
}


class VolcanoPodGroups:
    """VolcanoPodGroups: Volcano's PodGroups (a custom resource) with the typed clients' call
    shape, so ``CREATE`` names them like the others. Never deleted by the operator: they go
    with their job (owner reference, garbage collector)."""

    def __init__(self, custom: Any) -> None:
        self.custom = custom
        self.where = (volcano.PODGROUP_GROUP, volcano.PODGROUP_VERSION)

    def create_namespaced_pod_group(self, namespace: str, body: Mapping[str, Any], **options: Any) -> Any:
        """create_namespaced_pod_group creates one PodGroup."""
        return self.custom.create_namespaced_custom_object(
            *self.where, namespace, volcano.PODGROUP_PLURAL, body, **options
        )

    def patch_namespaced_pod_group(
        self, name: str, namespace: str, body: Mapping[str, Any], **options: Any
    ) -> Any:
        """patch_namespaced_pod_group merge-patches one PodGroup."""
        return self.custom.patch_namespaced_custom_object(
            *self.where, namespace, volcano.PODGROUP_PLURAL, name, body, **options
        )


@dataclass(frozen=True)
class Clients:
    """Clients: the API clients the passes' calls go through, one set per operator, and the
    clock for Event timestamps and pod creation times (metrics). ``wire`` sends the calls of a
    recovery (pods, Events, the job's status: ``aitj.controller.executor.wire`` says why), with
    ``fanout`` for a pass's pod creates; the generated clients the rest, typed as Any: they
    want model objects, the calls send plain dicts."""

    api_client: Any  # for the raw metadata reads (``kubeclient.raw_get``)
    core: Any
    custom: Any
    policy: Any
    rbac: Any
    volcano: VolcanoPodGroups
    gang: GangApi
    wire: Wire
    fanout: Fanout
    clock: Callable[[], dt.datetime]

    @classmethod
    def of(
        cls,
        api_client: client.ApiClient,
        clock: Callable[[], dt.datetime],
        gang_version: str = gang_render.NEWEST,
    ) -> Clients:
        """of: the clients over ``api_client`` (the native gang kinds' in ``gang_version``)."""
        custom = client.CustomObjectsApi(api_client)
        return cls(
            api_client=api_client,
            core=client.CoreV1Api(api_client),
            custom=custom,
            policy=client.PolicyV1Api(api_client),
            rbac=client.RbacAuthorizationV1Api(api_client),
            volcano=VolcanoPodGroups(custom),
            gang=GangApi(api_client, gang_version),
            wire=Wire(api_client),
            fanout=Fanout(),
            clock=clock,
        )
