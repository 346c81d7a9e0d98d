"""The test bed ``make chaos`` and the end-to-end test use: a local control plane (started
if it is not running), the CRD, a namespace, and ``n`` elastic jobs of 4 to 8 trainers on kwok
nodes, labelled so ``--selector`` finds them. Their policies restart every fault kind the
command causes (exit code 137, nodeNotReady, PodForceDeleted, PodEvicted), scope Pod.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.kubeclient import api_client
from aitj.core import api
from aitj.devcluster.cluster import ClusterConfig, ClusterError, LocalCluster, free_base
from aitj.devcluster.versions import state_dir
from aitj.tools.demo import install_crd

BED_LABEL = "chaos.aitj.dev/bed"
SELECTOR = f"{BED_LABEL}=true"
IMAGE = "chaos.aitj.dev/trainer:none"  # kwok runs no image


def bed_job(name: str, namespace: str, trainers: int) -> dict[str, Any]:
    """bed_job: an elastic job of ``trainers`` trainers (2 to trainers + 2)."""
    pod_spec = {
        "containers": [{"name": "trainer", "image": IMAGE, "command": ["sleep", "infinity"]}],
        "terminationGracePeriodSeconds": 1,
    }
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": {BED_LABEL: "true"}},
        "spec": {
            "faultTolerant": True,
            "completePolicy": "None",
            "failPolicy": "None",
            "replicaSpecs": {
                "trainer": {
                    "replicaType": "worker",
                    "replicas": trainers,
                    "minReplicas": 2,
                    "maxReplicas": trainers + 2,
                    "restartPolicy": "OnNodeFailWithExitCode",
                    "restartScope": "Pod",
                    "scaleInGracePeriod": 0,
                    "faultTolerantPolicy": [
                        {"exitCodes": "137,143", "restartPolicy": "ExitCode", "restartScope": "Pod"},
                        {
                            "exceptionalEvent": "nodeNotReady,PodForceDeleted,PodEvicted",
                            "restartPolicy": "OnNodeFail",
                            "restartScope": "Pod",
                        },
                    ],
                    "template": {"spec": pod_spec},
                }
            },
        },
    }


def up(name: str, nodes: int, say: Callable[[str], None]) -> LocalCluster:
    """up: the local cluster ``name``, started unless it runs healthy (one left half-stopped,
    say by an interrupted apiserver restart, is stopped first); with the CRD installed."""
    cluster = LocalCluster(name)
    if cluster.is_running() and cluster.unhealthy():
        say(f"cluster {name!r} is not healthy ({', '.join(cluster.unhealthy())}): restarting it")
        cluster.down()
    if not cluster.is_running():
        cluster.up(
            ClusterConfig(
                nodes=nodes,
                node_profile="cpu",
                base_port=free_base(17643),
                node_grace_seconds=16,
                node_lease_seconds=8,
            ),
            say=say,
        )
    install_crd(cluster)
    return cluster


def create_jobs(cluster: LocalCluster, namespace: str, n: int, seed: int) -> list[str]:
    """create_jobs: ``n`` bed jobs ``chaos-<i>`` (replacing any of the same name) in ``namespace``."""
    rng = random.Random(seed)
    api_ = api_client(cluster.kubeconfig)
    core: Any = client.CoreV1Api(api_)
    custom: Any = client.CustomObjectsApi(api_)
    try:
        core.create_namespace({"metadata": {"name": namespace}})
    except ApiException as e:
        if e.status != 409:
            raise
    names = [f"chaos-{i}" for i in range(n)]
    for name in names:
        cluster.kubectl("delete", "aitj", name, "-n", namespace, "--ignore-not-found", "--wait=true")
    # The old jobs' pods go after their jobs (garbage collection). A job created under the same
    # name before they are gone would be judged with them (the operator finds pods by the job
    # name label), so wait.
    deadline = time.monotonic() + 120
    while core.list_namespaced_pod(namespace, label_selector=api.LABEL_JOB).items:
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods of earlier jobs in {namespace} were not gone within 120s")
        time.sleep(0.5)
    for name in names:
        body = bed_job(name, namespace, rng.randint(4, 8))
        custom.create_namespaced_custom_object(api.GROUP, api.VERSION, namespace, api.PLURAL, body)
    return names


def find_local(server: str) -> LocalCluster | None:
    """find_local: the running local cluster whose apiserver is ``server`` (a kubeconfig's
    server URL), if any: how ``aitj chaos`` detects the local control plane."""
    clusters = state_dir("x").parent
    if not clusters.is_dir():
        return None
    for d in sorted(clusters.iterdir()):
        cluster = LocalCluster(d.name)
        try:
            if cluster.is_running() and cluster.server.rstrip("/") == server.rstrip("/"):
                return cluster
        except (ClusterError, OSError, KeyError, ValueError):
            continue
    return None
