"""Namespace teardown on the real control plane (issue 24, section 2): deleting a namespace with
running jobs is no job failure, and leaves none of that namespace's series on /metrics.

The namespace controller deletes the jobs and their pods in no set order: the operator may see
pods go while the job is still there, and a create in the namespace is then refused
(NamespaceTerminating). A deleted job is not a failed one: nothing is counted in
``aitj_jobs_finished_total``, and every ``aitj_`` series labelled with the namespace leaves
/metrics within 30 s (the acceptance of issue 24), that of a job that had finished before
included."""

from __future__ import annotations

import uuid
from functools import partial

import pytest

from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.e2e.scrape import Samples, samples, value
from tests.jobs import create_job, job_pods, running, seed_variant, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
JOBS = ("teardown-a", "teardown-b")
DONE = "teardown-done"  # succeeded before the namespace is deleted
FINISHED = "aitj_jobs_finished_total"


def of_namespace(found: Samples, namespace: str) -> list[tuple[str, frozenset[tuple[str, str]]]]:
    """of_namespace: the aitj_ samples labelled with ``namespace``."""
    return sorted(k for k in found if k[0].startswith("aitj_") and ("namespace", namespace) in k[1])


def all_running(cluster: KubeCluster, namespace: str, job: str) -> bool:
    """all_running: the seed's four pods of ``job`` are Running."""
    return len(running(job_pods(cluster, namespace, job))) == 4


def test_deleting_a_namespace_with_running_jobs_counts_no_failure_and_leaves_no_series(
    cluster: KubeCluster, live_operator: OperatorProcess
) -> None:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    wait_for(
        lambda: any(
            sa.metadata.name == "default"
            for sa in cluster.core.list_namespaced_service_account(namespace).items
        ),
        30,
        "the namespace's default service account",
    )
    for name in (*JOBS, DONE):
        create_job(cluster, namespace, seed_variant(name))
    for name in (*JOBS, DONE):
        wait_phase(cluster, namespace, name, "Running")
        wait_for(partial(all_running, cluster, namespace, name), 60, f"every pod of {name} Running")
    launcher = job_pods(cluster, namespace, DONE, "launcher")[0].metadata.name
    faults.pod_exit(cluster.api, namespace, launcher, 0)
    wait_phase(cluster, namespace, DONE, "Succeeded")

    # The pass counts the end once its status write is answered: the phase can be read a moment
    # before the count (a busy loop: CI of 2026-11-27 read 0 right after the phase).
    def counted() -> Samples | None:
        found = samples(live_operator)
        return found if value(found, FINISHED, namespace=namespace) else None

    before = wait_for(counted, 10, "the job's end counted")
    assert (
        value(before, FINISHED, namespace=namespace)
        == value(before, FINISHED, namespace=namespace, phase="Succeeded")
        == 1
    )
    log_mark = len(live_operator.logs())

    cluster.core.delete_namespace(namespace)
    seen: list[Samples] = []

    def gone() -> bool:
        """gone: no series of the namespace left (every scrape is kept, to look for a failure)."""
        found = samples(live_operator)
        seen.append(found)
        return not of_namespace(found, namespace)

    try:
        wait_for(gone, 30, "no aitj_ series of the deleted namespace")
    except AssertionError:
        print("left:", of_namespace(seen[-1], namespace))
        raise
    finished = {
        (k, v)
        for found in seen
        for k, v in found.items()
        if k[0] == FINISHED and ("namespace", namespace) in k[1]
    }
    # Only the job that succeeded before, once, until its series left: no deleted job ended (the
    # namespace's other (phase, reason) series exist at 0 from its jobs' first passes, and stay 0).
    assert {(dict(k[1])["phase"], v) for k, v in finished if v} <= {("Succeeded", 1.0)}, finished
    ended = [
        line
        for line in live_operator.logs()[log_mark:].splitlines()
        if "job finished" in line and namespace in line
    ]
    assert ended == [], ended
    wait_for(
        lambda: namespace not in {n.metadata.name for n in cluster.core.list_namespace().items},
        120,
        "the namespace gone",
    )
    after = samples(live_operator)
    assert of_namespace(after, namespace) == []
