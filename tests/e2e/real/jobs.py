"""The seed job for real nodes: the seed manifest with a small image, or as it is.

``box_job`` keeps the seed's rules, replicas, grace periods and plugins, and changes only what
a test on two small nodes must: every container runs the busybox image (sh, sleep, nslookup),
the launcher without the barrier, each command a sleep unless the test gives one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aitj.core import api
from aitj.devcluster.images.specs import BUSYBOX
from tests.clusters import KubeCluster
from tests.jobs import Doc, job_pods, live, running, seed_variant, set_path
from tests.waiting import wait_for

BOX = BUSYBOX.ref
SLEEP = "sleep 100000"


def box_job(
    name: str, *, launcher: str = SLEEP, trainer: str = SLEEP, **changes: Callable[[Doc], None]
) -> Doc:
    """box_job: the seed named ``name`` on the busybox image, its launcher and trainers running
    the shell commands ``launcher`` and ``trainer``, then ``changes``."""

    def boxed(doc: Doc) -> None:
        for replica, command in (("launcher", launcher), ("trainer", trainer)):
            pod = doc["spec"]["replicaSpecs"][replica]["template"]["spec"]
            pod.pop("initContainers", None)
            (container,) = pod["containers"]
            container.update(image=BOX, command=["sh", "-c", command])

    return seed_variant(name, boxed=boxed, **changes)


def restart_time_limit(replica: str, seconds: int) -> Callable[[Doc], None]:
    return set_path(f"spec.replicaSpecs.{replica}.restartTimeLimit", seconds)


def grace(replica: str, seconds: int) -> Callable[[Doc], None]:
    return set_path(f"spec.replicaSpecs.{replica}.template.spec.terminationGracePeriodSeconds", seconds)


def pods_by_index(cluster: KubeCluster, namespace: str, job: str, replica: str) -> dict[int, Any]:
    """pods_by_index: the replica's Running pods not being deleted, by index."""
    return {
        int(p.metadata.labels[api.LABEL_INDEX]): p
        for p in running(job_pods(cluster, namespace, job, replica))
    }


def wait_running(cluster: KubeCluster, namespace: str, job: str, trainers: int, timeout: float = 120) -> None:
    """wait_running waits until ``trainers`` trainers and the launcher run."""

    def ready() -> bool:
        return (
            len(pods_by_index(cluster, namespace, job, "trainer")) == trainers
            and len(pods_by_index(cluster, namespace, job, "launcher")) == 1
        )

    wait_for(ready, timeout, f"{trainers} trainers and the launcher of {job} Running")


def wait_replaced(
    cluster: KubeCluster, namespace: str, job: str, replica: str, index: int, old: str
) -> tuple[Any, float]:
    """wait_replaced: the pod that replaced ``old`` at ``index`` once it runs, and when it was
    seen Running (time.monotonic)."""

    def replaced() -> Any:
        pod = pods_by_index(cluster, namespace, job, replica).get(index)
        return pod if pod is not None and pod.metadata.name != old else None

    pod = wait_for(replaced, 180, f"{replica} {index} of {job} replaced and Running", interval=0.1)
    return pod, time.monotonic()


def live_pods(cluster: KubeCluster, namespace: str, job: str) -> list[Any]:
    return live(job_pods(cluster, namespace, job))
