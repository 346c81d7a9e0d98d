"""The peer: Kubernetes' Job controller, in the same run, on the same cluster.

Its jobs are Indexed Jobs with ``podReplacementPolicy: TerminatingOrFailed`` (a replacement is
created as soon as the old pod is terminating), each pod a completion index, so a force-deleted
pod is replaced under its index as ours are.

The Job controller holds a Job's replacements back by its pod failure backoff: 10 s after the
first failure, doubled after each next (a controller constant, not a Job field). So P1 strikes
each Job once: a second strike on the same Job would measure that backoff, doubled.

A Job made ``with_service`` has the contract an AITrainingJob's pods have, stable DNS names per
index: a headless Service selecting its pods (``publishNotReadyAddresses``, as the operator's)
and the pods' ``subdomain`` naming it (the Kubernetes docs' pattern for Indexed Jobs, and
JobSet's). The Service makes kube-controller-manager keep EndpointSlices of every pod, as the
operator's does.
"""

from __future__ import annotations

from typing import Any

from aitj.controller.kubeclient import release
from aitj.tools.bench.workload import IMAGE, NS_PEER, PEER_JOB, pool_placement


def indexed_job(
    name: str, pods: int, pool: str | None = None, *, with_service: bool = False
) -> dict[str, Any]:
    """indexed_job: an Indexed Job of ``pods`` pods that run until deleted (on the nodes of
    ``pool`` if given; ``with_service``: its pods in the subdomain of ``headless_service``)."""
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
    if with_service:
        body["spec"]["template"]["spec"]["subdomain"] = name
    return body


def headless_service(name: str) -> dict[str, Any]:
    """headless_service: the headless Service of Job ``name``'s pods (their DNS names)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS_PEER},
        "spec": {"clusterIP": "None", "selector": {PEER_JOB: name}, "publishNotReadyAddresses": True},
    }


def create_jobs(
    batch: Any, names: list[str], pods: int, pool: str | None = None, *, core: Any = None
) -> None:
    """create_jobs creates an Indexed Job of ``pods`` pods for each name, one call after another
    (on the nodes of ``pool`` if given); given ``core`` (a CoreV1Api), each with its headless
    Service, made before it."""
    for name in names:
        if core is not None:
            release(core.create_namespaced_service(NS_PEER, headless_service(name), _preload_content=False))
        body = indexed_job(name, pods, pool, with_service=core is not None)
        release(batch.create_namespaced_job(NS_PEER, body, _preload_content=False))


def delete_jobs(batch: Any, core: Any = None) -> None:
    """delete_jobs deletes every Job of the peer's namespace, and their pods with them; given
    ``core``, its Services too."""
    batch.delete_collection_namespaced_job(NS_PEER, propagation_policy="Background", grace_period_seconds=0)
    if core is not None:
        core.delete_collection_namespaced_service(NS_PEER)
