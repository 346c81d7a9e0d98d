"""The peer: Kubernetes' Job controller, in the same run, on the same cluster.

Its jobs are Indexed Jobs with ``podReplacementPolicy: TerminatingOrFailed`` (a replacement is
created as soon as the old pod is terminating), each pod a completion index, so a force-deleted
pod is replaced under its index as ours are.

The Job controller holds a Job's replacements back by its pod failure backoff: 10 s after the
first failure, doubled after each next (a controller constant, not a Job field). So P1 strikes
each Job once: a second strike on the same Job would measure that backoff, doubled.
"""

from __future__ import annotations

from typing import Any

from aitj.controller.kubeclient import release
from aitj.tools.bench.workload import IMAGE, NS_PEER, pool_placement


def indexed_job(name: str, pods: int, pool: str | None = None) -> dict[str, Any]:
    """indexed_job: an Indexed Job of ``pods`` pods that run until deleted (on the nodes of
    ``pool`` if given)."""
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS_PEER},
        "spec": {
            "completionMode": "Indexed",
            "completions": pods,
            "parallelism": pods,
            "backoffLimit": 1_000_000,
            "podReplacementPolicy": "TerminatingOrFailed",
            "template": {
                "spec": {
                    "containers": [{"name": "trainer", "image": IMAGE, "command": ["sleep", "infinity"]}],
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                }
            },
        },
    }
    if pool is not None:
        body["spec"]["template"]["spec"].update(pool_placement(pool))
    return body


def create_jobs(batch: Any, names: list[str], pods: int, pool: str | None = None) -> None:
    """create_jobs creates an Indexed Job of ``pods`` pods for each name, one call after another
    (on the nodes of ``pool`` if given)."""
    for name in names:
        release(batch.create_namespaced_job(NS_PEER, indexed_job(name, pods, pool), _preload_content=False))


def delete_jobs(batch: Any) -> None:
    """delete_jobs deletes every Job of the peer's namespace, and their pods with them."""
    batch.delete_collection_namespaced_job(NS_PEER, propagation_policy="Background", grace_period_seconds=0)
