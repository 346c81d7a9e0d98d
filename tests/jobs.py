"""End-to-end helpers for AITrainingJobs: create variants of the seed, read them back, wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aitj.core import api
from tests.clusters import KubeCluster
from tests.seeds import seed_job
from tests.waiting import wait_for

Doc = dict[str, Any]


def seed_variant(name: str = "test-horovod-elastic", **changes: Callable[[Doc], None]) -> Doc:
    """seed_variant is the seed manifest renamed, with each change applied in order."""
    doc = seed_job()
    doc["metadata"]["name"] = name
    doc["metadata"].pop("namespace", None)
    for change in changes.values():
        change(doc)
    return doc


def set_path(path: str, value: Any) -> Callable[[Doc], None]:
    """set_path is a change for seed_variant: set a dotted path (list indices as numbers)."""

    def change(doc: Doc) -> None:
        node: Any = doc
        keys = path.split(".")
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[keys[-1]] = value

    return change


def create_job(cluster: KubeCluster, namespace: str, doc: Doc) -> Doc:
    custom = _custom(cluster)
    created: Doc = custom.create_namespaced_custom_object(api.GROUP, api.VERSION, namespace, api.PLURAL, doc)
    return created


def get_job(cluster: KubeCluster, namespace: str, name: str) -> Doc:
    job: Doc = _custom(cluster).get_namespaced_custom_object(
        api.GROUP, api.VERSION, namespace, api.PLURAL, name
    )
    return job


def patch_job(cluster: KubeCluster, namespace: str, name: str, patch: Doc) -> Doc:
    out: Doc = _custom(cluster).patch_namespaced_custom_object(
        api.GROUP, api.VERSION, namespace, api.PLURAL, name, patch
    )
    return out


def delete_job(cluster: KubeCluster, namespace: str, name: str) -> None:
    _custom(cluster).delete_namespaced_custom_object(api.GROUP, api.VERSION, namespace, api.PLURAL, name)


def job_pods(cluster: KubeCluster, namespace: str, job: str, replica: str | None = None) -> list[Any]:
    selector = f"{api.LABEL_JOB}={job}"
    if replica:
        selector += f",{api.LABEL_REPLICA}={replica}"
    pods = cluster.core.list_namespaced_pod(namespace, label_selector=selector).items
    return sorted(
        pods, key=lambda p: (p.metadata.labels[api.LABEL_REPLICA], int(p.metadata.labels[api.LABEL_INDEX]))
    )


def live(pods: list[Any]) -> list[Any]:
    """live drops pods that are being deleted."""
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def running(pods: list[Any]) -> list[Any]:
    return [p for p in live(pods) if p.status.phase == "Running"]


def phase(cluster: KubeCluster, namespace: str, name: str) -> str | None:
    status = get_job(cluster, namespace, name).get("status") or {}
    return status.get("phase")


def wait_phase(cluster: KubeCluster, namespace: str, name: str, want: str, timeout: float = 60) -> Doc:
    wait_for(lambda: phase(cluster, namespace, name) == want, timeout, f"job {name} phase {want}")
    return get_job(cluster, namespace, name)


def conditions(job: Doc) -> list[Doc]:
    return list((job.get("status") or {}).get("conditions") or [])


def condition_types(job: Doc) -> list[str]:
    return [c["type"] for c in conditions(job)]


def events_for(cluster: KubeCluster, namespace: str, name: str) -> list[Any]:
    items = cluster.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    return sorted(items, key=lambda e: e.metadata.creation_timestamp)


def _custom(cluster: KubeCluster) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(cluster.api)


def spread(name: str) -> Callable[[Doc], None]:
    """spread: a change to a seed variant named ``name``: one trainer per node (a required pod
    anti-affinity on the hostname among its trainers)."""

    def change(doc: Doc) -> None:
        spec = doc["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]
        selector = {"matchLabels": {api.LABEL_JOB: name, api.LABEL_REPLICA: "trainer"}}
        term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}

    return change


def running_trainers(cluster: KubeCluster, namespace: str, name: str) -> dict[int, Any]:
    """running_trainers: the job's Running trainer pods, by index."""
    return {
        int(p.metadata.labels[api.LABEL_INDEX]): p
        for p in running(job_pods(cluster, namespace, name, "trainer"))
    }
