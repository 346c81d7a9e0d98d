"""What the bench runs: its namespaces, node pools, AITrainingJobs, and how it reads pods.

A scale of P pods is P/8 jobs of 8 trainers. Ten of the jobs (``f3-*``) are pinned one to a
node of their own (tainted, so nothing else lands there): F3 takes those nodes NotReady. One
(``f4``) may grow to 108 trainers. The rest (``job-*``) are where F1 and F2 strike. The other
nodes carry no taint and no pool: the scheduler spreads the jobs, the floor's pods and the
Job controller's over them. F12 and F13's large jobs (``large-<trainers>``, namespace
``bench-large``) and the Job controller's Indexed Job of as many pods run on a pool of their own
(``bench-large-*``, tainted), added for them and removed after.
"""

from __future__ import annotations

import time
from typing import Any

from aitj.core import api
from aitj.devcluster import nodes as nodes_mod
from aitj.devcluster.apiclient import node_ready, tainted_not_ready
from aitj.devcluster.cluster import LocalCluster
from aitj.devcluster.config import GANG_SCHEDULER

NS_OURS, NS_FLOOR, NS_PEER = "bench", "bench-floor", "bench-peer"
NS_GANG = "bench-gang"  # F1g's gang-scheduled jobs: a namespace of their own, kept to the end
NS_LARGE = "bench-large"  # F12, F13: one large job at a time, on the large pool
NAMESPACES = (NS_OURS, NS_FLOOR, NS_PEER, NS_GANG, NS_LARGE)
LARGE_POOL = "large"
TRAINERS = 8
F3_NODES = 10
F4_TO = 108
GANG_JOBS = 4  # F1g: jobs of 8 trainers on the gang-scheduling profile, made for it alone
EXIT_CODE = 137  # F2: the code the rule restarts on
POOL_LABEL = "bench.aitj.dev/pool"
FLOOR_SLOT = "bench.aitj.dev/slot"
BURST = "bench.aitj.dev/burst"  # the floor's F4 pods: created in a row, never replaced
PEER_JOB = "batch.kubernetes.io/job-name"
PEER_INDEX = "batch.kubernetes.io/job-completion-index"
IMAGE = "bench.aitj.dev/trainer:none"  # kwok runs no image


def f3_node(i: int) -> str:
    """f3_node: the name of the i-th node of the F3 pool."""
    return f"bench-f3-{i}"


def large_node(i: int) -> str:
    """large_node: the name of the i-th node of the large pool (F12, F13)."""
    return f"bench-large-{i}"


def pool_placement(pool: str) -> dict[str, Any]:
    """pool_placement: the pod spec fields that put a pod on the nodes of ``pool`` (its label
    as the node selector, its taint tolerated)."""
    return {
        "nodeSelector": {POOL_LABEL: pool},
        "tolerations": [{"key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}],
    }


def job_names(pods: int, f3_nodes: int = F3_NODES) -> list[str]:
    """job_names: the jobs of a scale of ``pods`` pods: the F3 jobs, the F4 job, then job-*."""
    jobs = pods // TRAINERS
    if jobs < f3_nodes + 2:
        raise ValueError(
            f"{pods} pods is too few: at least {(f3_nodes + 2) * TRAINERS} (F3, F4 and one more job)"
        )
    return (
        [f"f3-{i}" for i in range(f3_nodes)] + ["f4"] + [f"job-{i:04d}" for i in range(jobs - f3_nodes - 1)]
    )


def training_job(name: str, f4_to: int = F4_TO, *, gang: bool = False) -> dict[str, Any]:
    """training_job: the bench's AITrainingJob: 8 trainers, restarted on exit code 137, on a
    NotReady node and on a force delete; no plugins (no ssh keys, no host list). ``gang``:
    its pods go to the gang-scheduling profile, all 8 the minimum (F1g; docs/gang.md)."""
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "trainer", "image": IMAGE, "command": ["sleep", "infinity"]}],
        "terminationGracePeriodSeconds": 0,
    }
    if gang:
        pod_spec["schedulerName"] = GANG_SCHEDULER
    if name.startswith("f3-"):
        node = f3_node(int(name.removeprefix("f3-")))
        pod_spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        pod_spec["tolerations"] = [
            {"key": POOL_LABEL, "operator": "Equal", "value": "f3", "effect": "NoSchedule"}
        ]
    return {
        "apiVersion": f"{api.GROUP}/{api.VERSION}",
        "kind": api.KIND,
        "metadata": {"name": name, "namespace": NS_GANG if gang else NS_OURS},
        "spec": {
            "faultTolerant": True,
            "completePolicy": "None",
            "failPolicy": "None",
            "replicaSpecs": {
                "trainer": {
                    "replicaType": "worker",
                    "replicas": TRAINERS,
                    "minReplicas": TRAINERS if gang else 1,
                    "maxReplicas": f4_to if name == "f4" else TRAINERS,
                    "restartPolicy": "OnNodeFailWithExitCode",
                    "restartScope": "Pod",
                    "scaleInGracePeriod": 0,
                    "faultTolerantPolicy": [
                        {"exitCodes": str(EXIT_CODE), "restartPolicy": "ExitCode", "restartScope": "Pod"},
                        {
                            "exceptionalEvent": "nodeNotReady,PodForceDeleted",
                            "restartPolicy": "OnNodeFail",
                            "restartScope": "Pod",
                        },
                    ],
                    "template": {"spec": pod_spec},
                }
            },
        },
    }


def large_job(trainers: int) -> dict[str, Any]:
    """large_job: F12's and F13's job ``large-<trainers>`` in NS_LARGE: the bench's job with
    ``trainers`` trainers (no more, no fewer), on the large pool."""
    body = training_job(f"large-{trainers}")
    body["metadata"]["namespace"] = NS_LARGE
    trainer = body["spec"]["replicaSpecs"]["trainer"]
    trainer["replicas"] = trainer["maxReplicas"] = trainers
    trainer["template"]["spec"].update(pool_placement(LARGE_POOL))
    return body


def slot(pod: dict[str, Any]) -> tuple[str, ...] | None:
    """slot: what a replacement of the pod has in common with it: (namespace, job, replica,
    index) for ours, (namespace, Job, completion index) for the Job controller's, (namespace,
    slot label) for the floor's; None for any other pod."""
    meta = pod.get("metadata") or {}
    labels, ns = meta.get("labels") or {}, meta.get("namespace", "")
    if api.LABEL_JOB in labels:
        return ns, labels[api.LABEL_JOB], labels.get(api.LABEL_REPLICA, ""), labels.get(api.LABEL_INDEX, "")
    if PEER_JOB in labels:
        return ns, labels[PEER_JOB], labels.get(PEER_INDEX, "")
    if FLOOR_SLOT in labels:
        return ns, labels[FLOOR_SLOT]
    return None


def pod_classes(pod: dict[str, Any]) -> tuple[str, ...]:
    """pod_classes: "<ns>/all", and for a pod not being deleted "<ns>/live" and "<ns>/<phase>"."""
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace", "")
    if meta.get("deletionTimestamp"):
        return (f"{ns}/all",)
    return f"{ns}/all", f"{ns}/live", f"{ns}/{(pod.get('status') or {}).get('phase', '')}"


def job_classes(job: dict[str, Any]) -> tuple[str, ...]:
    """job_classes: "phase/<phase>", and "current" when the status describes the job's spec as
    it is (observedGeneration is the generation)."""
    status = job.get("status") or {}
    out = [f"phase/{status.get('phase', '')}"]
    if status.get("observedGeneration") == (job.get("metadata") or {}).get("generation"):
        out.append("current")
    return tuple(out)


def running(pod: dict[str, Any]) -> bool:
    """running: the pod is Running and not being deleted."""
    return (pod.get("status") or {}).get("phase") == "Running" and not (pod.get("metadata") or {}).get(
        "deletionTimestamp"
    )


def add_nodes(cluster: LocalCluster, names: list[str], *, pool: str | None = None) -> None:
    """add_nodes registers kwok nodes (profile ``cpu``); a ``pool`` labels them and taints
    them so only pods that tolerate it land there."""
    prof = nodes_mod.profile("cpu")
    for name in names:
        body = nodes_mod.node_manifest(name, prof)
        if pool is not None:
            body["metadata"]["labels"][POOL_LABEL] = pool
            body["spec"]["taints"].append({"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"})
        cluster.apiserver.request("POST", "/api/v1/nodes", body)


def delete_nodes(cluster: LocalCluster, names: list[str]) -> None:
    """delete_nodes removes the nodes from the cluster (kwok stops tending them)."""
    for name in names:
        cluster.apiserver.request("DELETE", f"/api/v1/nodes/{name}")


def wait_nodes_ready(cluster: LocalCluster, count: int, timeout: float = 120) -> None:
    """wait_nodes_ready waits until ``count`` nodes are Ready and untainted by not-ready."""
    deadline = time.monotonic() + timeout
    while True:
        nodes = cluster.apiserver.nodes()
        ready = sum(1 for n in nodes if node_ready(n) == "True" and not tainted_not_ready(n))
        if ready >= count:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {ready}/{count} nodes Ready after {timeout:.0f}s")
        time.sleep(0.5)
