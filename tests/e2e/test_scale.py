"""A restarted operator at scale, on the real control plane: with 1,000 pods (125 jobs of 8
trainers on extra kwok nodes), an operator stopped with SIGTERM exits without a traceback, and
once started again it replaces a pod force-deleted while it was down. It proves the restart
works at all; how fast it is, at 10,000 pods, is hack/perf_scale.py's and ``make bench``'s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client

from aitj.core import api
from aitj.devcluster.faults import force_delete
from aitj.devcluster.nodes import node_manifest, profile
from tests.clusters import KubeCluster
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
JOBS, TRAINERS, EXTRA_NODES = 125, 8, 10


def small_job(name: str) -> dict[str, Any]:
    """small_job: ``TRAINERS`` trainers that run forever, no plugins (no Service, no Secret)."""
    return {
        "apiVersion": f"{api.GROUP}/{api.VERSION}",
        "kind": api.KIND,
        "metadata": {"name": name},
        "spec": {
            "faultTolerant": True,
            "replicaSpecs": {
                "trainer": {
                    "replicas": TRAINERS,
                    "restartPolicy": "OnNodeFailWithExitCode",
                    "restartScope": "Pod",
                    "faultTolerantPolicy": [
                        {
                            "exceptionalEvent": "PodForceDeleted",
                            "restartPolicy": "OnNodeFail",
                            "restartScope": "Pod",
                        }
                    ],
                    "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                }
            },
        },
    }


@pytest.fixture
def extra_nodes(cluster: KubeCluster) -> Iterator[list[str]]:
    """extra_nodes: kwok nodes enough for the pods (110 each), deleted afterwards."""
    names = [f"scale-{i:02d}" for i in range(EXTRA_NODES)]
    for name in names:
        cluster.core.create_node(node_manifest(name, profile("cpu")))
    try:
        yield names
    finally:
        for name in names:
            cluster.core.delete_node(name)


def running_pods(cluster: KubeCluster, namespace: str) -> list[Any]:
    """running_pods: the namespace's pods Running and not being deleted."""
    pods = cluster.core.list_namespaced_pod(namespace, _preload_content=False)
    return [
        p
        for p in _items(pods)
        if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


def _items(response: Any) -> list[dict[str, Any]]:
    """_items: the items of a list call made with ``_preload_content=False``."""
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def test_a_restarted_operator_replaces_a_pod_deleted_while_it_was_down_at_1000_pods(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, extra_nodes: list[str]
) -> None:
    custom: Any = client.CustomObjectsApi(cluster.api)
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda i: custom.create_namespaced_custom_object(
                    api.GROUP,
                    api.VERSION,
                    namespace,
                    api.PLURAL,
                    small_job(f"j-{i:03d}"),
                    _preload_content=False,
                ),
                range(JOBS),
            )
        )
    wait_for(lambda: len(running_pods(cluster, namespace)) == JOBS * TRAINERS, 300, "every pod Running")

    mark = len(live_operator.logs())
    live_operator.stop()  # SIGTERM
    assert "Traceback" not in live_operator.logs()[mark:]
    victim = running_pods(cluster, namespace)[0]["metadata"]
    force_delete(cluster.api, namespace, victim["name"])
    live_operator.start()

    def replaced() -> bool:
        return any(
            p["metadata"]["labels"].get(api.LABEL_JOB) == victim["labels"][api.LABEL_JOB]
            and p["metadata"]["labels"].get(api.LABEL_INDEX) == victim["labels"][api.LABEL_INDEX]
            and p["metadata"]["name"] != victim["name"]
            for p in _items(cluster.core.list_namespaced_pod(namespace, _preload_content=False))
        )

    wait_for(replaced, 120, "the pod deleted while the operator was down replaced")
