"""The job's objects other than pods on the real control plane: one deleted by hand while the
operator runs is made again (the cache sees it gone and the planner plans it). Not the ssh
Secret: Secrets are not watched (aitj.controller.cache, UNWATCHED)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from aitj.core import naming
from tests.clusters import KubeCluster
from tests.jobs import create_job, seed_variant, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "test-horovod-elastic"


def _exists(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        pytest.param("service", naming.service_name(NAME), id="the Service"),
        pytest.param("config_map", naming.discovery_configmap_name(NAME), id="the discovery ConfigMap"),
    ],
)
def test_an_object_deleted_by_hand_is_made_again(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, kind: str, name: str
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    read = getattr(cluster.core, f"read_namespaced_{kind}")
    old = read(name, namespace).metadata.uid
    getattr(cluster.core, f"delete_namespaced_{kind}")(name, namespace)
    wait_for(
        lambda: _exists(lambda: read(name, namespace)) and read(name, namespace).metadata.uid != old,
        30,
        f"{kind} {name} made again",
    )
