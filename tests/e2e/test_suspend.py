"""spec.suspend on the real control plane (issue 27 item 3): a job created suspended has no
pods; resumed, it runs; suspended while running, its pods go and RestartCount stays; resumed
again, it runs again. Then the contract Kueue relies on, with this test acting as Kueue: a job
labelled with a queue is stored suspended by manifests/kueue's MutatingAdmissionPolicy, admitted
by injecting a node selector and a toleration into its templates and unsuspending it,
preempted by suspending it (its pods gone, ``active`` 0, the injection then taken back), and
admitted again. docs/kueue.md says what is and is not integrated."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from aitj.core import api
from aitj.devcluster.nodes import node_manifest, profile
from tests.clusters import KubeCluster
from tests.jobs import (
    Doc,
    conditions,
    create_job,
    events_for,
    get_job,
    job_pods,
    live,
    patch_job,
    running,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.seeds import REPO
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "suspended-seed"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POLICY = REPO / "manifests" / "kueue" / "suspend-queued-jobs.yaml"


def restarts(cluster: KubeCluster, namespace: str, name: str) -> Any:
    return (get_job(cluster, namespace, name).get("status") or {}).get("RestartCount")


def no_pods(cluster: KubeCluster, namespace: str, name: str) -> bool:
    return job_pods(cluster, namespace, name) == []


def active(cluster: KubeCluster, namespace: str, name: str) -> int:
    counts = (get_job(cluster, namespace, name).get("status") or {}).get("replicaStatuses") or {}
    return sum(int(c.get("active") or 0) for c in counts.values())


def suspend(cluster: KubeCluster, namespace: str, name: str, value: bool) -> None:
    patch_job(cluster, namespace, name, {"spec": {"suspend": value}})


def test_suspend_and_resume_keep_no_pods_and_the_restart_count(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    started = time.monotonic()
    create_job(cluster, namespace, seed_variant(NAME, suspend=set_path("spec.suspend", True)))
    job = wait_phase(cluster, namespace, NAME, "Suspended", 30)
    assert conditions(job)[-1]["reason"] == "TrainingJobSuspended"
    time.sleep(1)  # a pass or more: still no pod
    assert no_pods(cluster, namespace, NAME)

    suspend(cluster, namespace, NAME, False)
    wait_phase(cluster, namespace, NAME, "Running", 30)
    # A restart first: a RestartCount to keep (trainer 0 force-deleted, replaced by its rule).
    first = job_pods(cluster, namespace, NAME, "trainer")[0]
    cluster.core.delete_namespaced_pod(first.metadata.name, namespace, grace_period_seconds=0)
    wait_for(lambda: restarts(cluster, namespace, NAME) == {"launcher": 0, "trainer": 1}, 30, "one restart")
    wait_phase(cluster, namespace, NAME, "Running", 30)

    suspend(cluster, namespace, NAME, True)
    wait_for(lambda: no_pods(cluster, namespace, NAME), 30, "every pod gone")
    job = wait_phase(cluster, namespace, NAME, "Suspended", 10)
    assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 1}
    assert "startRunningTime" not in job["status"]
    wait_for(lambda: active(cluster, namespace, NAME) == 0, 10, "no active pod in the status")
    table = cluster.kubectl("get", "aitj", NAME, "-n", namespace).stdout
    assert table.splitlines()[1].split()[:3] == [NAME, "Suspended", "0"]

    suspend(cluster, namespace, NAME, False)
    job = wait_phase(cluster, namespace, NAME, "Running", 30)
    assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 1}
    assert len(running(job_pods(cluster, namespace, NAME, "trainer"))) == 3
    reasons = [e.reason for e in events_for(cluster, namespace, NAME)]
    assert reasons.count("TrainingJobSuspended") == 2 and reasons.count("TrainingJobResumed") == 2
    assert time.monotonic() - started < 30


# ---------------------------------------------------------------------------------------------
# Acting as Kueue


@pytest.fixture
def policy(cluster: KubeCluster) -> Iterator[None]:
    """policy: manifests/kueue's MutatingAdmissionPolicy applied, and in force."""
    cluster.kubectl("apply", "--server-side", "-f", str(POLICY))
    try:
        yield
    finally:
        cluster.kubectl("delete", "--ignore-not-found", "-f", str(POLICY))


@pytest.fixture
def flavor_node(cluster: KubeCluster) -> Iterator[tuple[str, str]]:
    """flavor_node: a node only a Kueue ResourceFlavor's node selector and toleration reach (a
    label value no other node has, a NoSchedule taint): (node, flavor)."""
    name, flavor = f"flavor-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:8]
    node = node_manifest(name, profile("cce"))
    node["metadata"]["labels"]["test.aitj.dev/flavor"] = flavor
    node["spec"] = {
        **(node.get("spec") or {}),
        "taints": [{"key": "test.aitj.dev/flavor", "effect": "NoSchedule"}],
    }
    cluster.core.create_node(node)
    yield name, flavor
    cluster.core.delete_node(name)


def created_suspended(cluster: KubeCluster, namespace: str, name: str) -> Doc:
    """created_suspended: the seed labelled for a queue, created without spec.suspend; the
    policy stores it suspended (the apiserver may take a moment to load a new policy: the
    create is dry-run until it does)."""
    doc = seed_variant(name)
    doc["metadata"]["labels"] = {QUEUE_LABEL: "team-a"}
    custom: Any = client.CustomObjectsApi(cluster.api)

    def loaded() -> bool:
        dry: Doc = custom.create_namespaced_custom_object(
            api.GROUP, api.VERSION, namespace, api.PLURAL, doc, dry_run="All"
        )
        return bool(dry["spec"].get("suspend"))

    wait_for(loaded, 30, "the MutatingAdmissionPolicy in force")
    return create_job(cluster, namespace, doc)


def admit(cluster: KubeCluster, namespace: str, name: str, flavor: str) -> None:
    """admit: what Kueue does to admit a job (jobframework's RunWithPodSetsInfo): each pod set's
    template gets the flavor's node selector and toleration, and the job is unsuspended, in one
    update."""
    job = get_job(cluster, namespace, name)
    for spec in job["spec"]["replicaSpecs"].values():
        pod = spec["template"].setdefault("spec", {})
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), "test.aitj.dev/flavor": flavor}
        toleration = {"key": "test.aitj.dev/flavor", "operator": "Exists", "effect": "NoSchedule"}
        pod["tolerations"] = [*(pod.get("tolerations") or []), toleration]
    job["spec"]["suspend"] = False
    client.CustomObjectsApi(cluster.api).replace_namespaced_custom_object(
        api.GROUP, api.VERSION, namespace, api.PLURAL, name, job
    )


def preempt(cluster: KubeCluster, namespace: str, name: str) -> None:
    """preempt: what Kueue does to evict a job: suspend it, wait until it is no longer active,
    then take back what admission injected (RestorePodSetsInfo)."""
    suspend(cluster, namespace, name, True)
    wait_for(lambda: no_pods(cluster, namespace, name), 30, "every pod gone")
    wait_for(lambda: active(cluster, namespace, name) == 0, 10, "the job no longer active")
    job = get_job(cluster, namespace, name)
    for spec in job["spec"]["replicaSpecs"].values():
        pod = spec["template"]["spec"]
        pod["nodeSelector"] = {
            k: v for k, v in pod["nodeSelector"].items() if k != "test.aitj.dev/flavor"
        } or None
        pod["tolerations"] = [t for t in pod["tolerations"] if t["key"] != "test.aitj.dev/flavor"] or None
    client.CustomObjectsApi(cluster.api).replace_namespaced_custom_object(
        api.GROUP, api.VERSION, namespace, api.PLURAL, name, job
    )


def test_a_kueue_like_admitter_admits_preempts_and_readmits_a_queued_job(
    cluster: KubeCluster,
    namespace: str,
    live_operator: OperatorProcess,
    policy: None,
    flavor_node: tuple[str, str],
) -> None:
    node, flavor = flavor_node
    name = "queued-seed"
    created = created_suspended(cluster, namespace, name)
    assert created["spec"]["suspend"] is True
    wait_phase(cluster, namespace, name, "Suspended", 30)
    assert no_pods(cluster, namespace, name)

    for admission in (1, 2):
        admit(cluster, namespace, name, flavor)
        job = wait_phase(cluster, namespace, name, "Running", 30)
        pods = live(job_pods(cluster, namespace, name))
        assert len(pods) == 4 and {p.spec.node_name for p in pods} == {node}, admission
        assert all(p.spec.node_selector.get("test.aitj.dev/flavor") == flavor for p in pods)
        assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 0}

        preempt(cluster, namespace, name)
        job = wait_phase(cluster, namespace, name, "Suspended", 10)
        assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 0}
        template = job["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]
        assert "test.aitj.dev/flavor" not in (template.get("nodeSelector") or {})

    # A job without the queue label is not touched by the policy.
    plain = create_job(cluster, namespace, seed_variant("not-queued"))
    assert plain["spec"]["suspend"] is False
