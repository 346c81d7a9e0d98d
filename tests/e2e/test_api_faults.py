"""API faults (issue 14, part 3), each caused by a fault-injecting proxy in front of the real
apiserver (``aitj.devcluster.faultproxy``): the operator under test talks to the cluster only
through the proxy; the test's own calls go to the apiserver directly.

- an expired watch (410 Gone): the informer lists again and misses nothing;
- a create whose answer is lost with its connection, and an apiserver restart in the middle of
  a recovery: the recovery completes, one replacement per index, RestartCount exact;
- 429 and 5xx on creates, status writes, Events and lists: the operator backs off (the proxy
  counts its attempts) and does nothing twice;
- a status write that conflicts with another writer: retried on the fresh job, whose newer
  data survives.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from aitj.core import api
from aitj.devcluster import faults
from aitj.devcluster.faultproxy import FaultProxy
from aitj.devcluster.faultrules import Fault, Rule
from tests.clusters import KubeCluster, free_port
from tests.jobs import (
    Doc,
    conditions,
    create_job,
    events_for,
    get_job,
    job_pods,
    live,
    seed_variant,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "faulty"
PODS = "/api/v1/pods"  # the operator's pods watch (cluster-wide)


def job_status(namespace: str) -> str:
    """job_status: the path of the job's status subresource."""
    return f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.PLURAL}/{NAME}/status"


def trainers_only(doc: Doc) -> None:
    """trainers_only: a change for seed_variant: no launcher, no ssh or discovery plugin."""
    doc["spec"].pop("plugin", None)
    doc["spec"]["replicaSpecs"].pop("launcher")


@pytest.fixture(scope="module")
def proxy(cluster: KubeCluster) -> Iterator[FaultProxy]:
    """proxy: the fault proxy in front of the local apiserver."""
    if cluster.local is None:
        pytest.skip("the fault proxy needs the local control plane's certificates")
    p = FaultProxy(cluster.local.server, cluster.local.pki, seed=14).start()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def proxied(
    cluster: KubeCluster,
    crd: None,
    proxy: FaultProxy,
    operator: OperatorProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    """proxied: an operator whose kubeconfig names the proxy. The session operator is stopped
    meanwhile (two operators would both act) and started again afterwards."""
    operator.stop()
    folder = Path(tmp_path_factory.mktemp("proxied"))
    kubeconfig = proxy.write_kubeconfig(cluster.kubeconfig, folder / "kubeconfig")
    proc = OperatorProcess(kubeconfig, folder, free_port())
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()
        operator.start()


@pytest.fixture
def faulty(proxied: OperatorProcess, proxy: FaultProxy, cluster: KubeCluster) -> Iterator[FaultProxy]:
    """faulty: the proxy without rules, for one test; the operator's log is printed when it fails."""
    proxy.clear()
    proxied.assert_alive()
    mark = len(proxied.logs())
    yield proxy
    proxy.clear()
    print(f"---- operator log during the test ----\n{proxied.logs()[mark:][-8000:]}")
    print(cluster.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout)
    proxied.assert_alive()


def by_index(cluster: KubeCluster, namespace: str) -> dict[int, str]:
    """by_index: the job's live trainers by index."""
    pods = live(job_pods(cluster, namespace, NAME, "trainer"))
    return {int(p.metadata.labels[api.LABEL_INDEX]): p.metadata.name for p in pods}


def start(cluster: KubeCluster, namespace: str) -> dict[int, str]:
    """start: the job created and Running; its trainers by index."""
    create_job(cluster, namespace, seed_variant(NAME, trainers_only=trainers_only))
    wait_phase(cluster, namespace, NAME, "Running", timeout=90)
    return by_index(cluster, namespace)


def restart_count(cluster: KubeCluster, namespace: str) -> int:
    """restart_count: the job's RestartCount.trainer (0 before any)."""
    return int(
        ((get_job(cluster, namespace, NAME).get("status") or {}).get("RestartCount") or {}).get("trainer", 0)
    )


def restart_events(cluster: KubeCluster, namespace: str) -> list[Any]:
    """restart_events: the Events about the force-deleted trainer's restart."""
    return [e for e in events_for(cluster, namespace, NAME) if "PodForceDeleted" in (e.message or "")]


def replaced(cluster: KubeCluster, namespace: str, before: dict[int, str], index: int) -> dict[int, str]:
    """replaced waits until trainer ``index`` runs under a new name, the others untouched, the
    restart counted once; it returns the trainers by index."""
    after = wait_for(
        lambda: (
            (m := by_index(cluster, namespace)).get(index) not in (None, before[index]) and len(m) == 3 and m
        ),
        60,
        f"trainer {index} replaced",
    )
    assert {i: n for i, n in after.items() if i != index} == {i: n for i, n in before.items() if i != index}
    wait_for(lambda: restart_count(cluster, namespace) == 1, 60, "RestartCount.trainer 1")
    wait_for(lambda: len(job_pods(cluster, namespace, NAME)) == 3, 60, "the old pod gone")
    return after


def settled(cluster: KubeCluster, namespace: str) -> None:
    """settled: a few seconds on, still one pod per index, one restart counted, one Event."""
    time.sleep(3)
    pods = job_pods(cluster, namespace, NAME)
    indexes = [p.metadata.labels[api.LABEL_INDEX] for p in pods]
    assert sorted(indexes) == ["0", "1", "2"], [p.metadata.name for p in pods]
    job = get_job(cluster, namespace, NAME)
    assert job["status"]["RestartCount"] == {"trainer": 1}
    assert len(job["status"].get("restarts") or []) == 1
    assert len(restart_events(cluster, namespace)) == 1


def test_a_pod_deleted_while_the_watch_was_expired_is_replaced_after_the_relist(
    cluster: KubeCluster, namespace: str, faulty: FaultProxy
) -> None:
    before = start(cluster, namespace)
    # The pods watch goes quiet (forwarded, but no event reaches the operator) ...
    stall = faulty.add(Rule(Fault.STALL, "GET", PODS, watch=True))
    faulty.end_watches(PODS)
    wait_for(lambda: stall.hits >= 1, 30, "the pods watch stalled")
    # ... while a trainer is force-deleted ...
    faults.force_delete(cluster.api, namespace, before[0])
    deleted = wait_for(
        lambda: next(
            (
                meta
                for e in list(faulty.withheld)
                if (meta := (e.get("object") or {}).get("metadata") or {}).get("name") == before[0]
                and meta.get("deletionTimestamp")
            ),
            None,
        ),
        30,
        "the deletion withheld from the operator",
    )
    # ... and then every version before the deletion is compacted away: the watch the
    # operator resumes is answered 410 Gone, as the apiserver answers a too-old version.
    faulty.clear()
    gone = faulty.add(Rule(Fault.GONE, "GET", PODS, watch=True, below=int(deleted["resourceVersion"])))
    faulty.end_watches(PODS)
    replaced(cluster, namespace, before, 0)
    assert gone.hits >= 1
    settled(cluster, namespace)


def test_a_create_whose_answer_was_lost_with_its_connection_is_not_made_twice(
    cluster: KubeCluster, namespace: str, faulty: FaultProxy
) -> None:
    before = start(cluster, namespace)
    gate = threading.Event()
    creates = f"/api/v1/namespaces/{namespace}/pods"
    dropped = faulty.add(Rule(Fault.DROP_AFTER, "POST", creates, gate=gate, times=1))
    faults.force_delete(cluster.api, namespace, before[0])
    wait_for(lambda: dropped.hits == 1, 30, "the replacement's create at the proxy")
    # The operator must not learn from its watch that the create happened: only a retry that
    # meets AlreadyExists tells it.
    stall = faulty.add(Rule(Fault.STALL, "GET", PODS, watch=True))
    faulty.end_watches(PODS)
    wait_for(lambda: stall.hits >= 1, 30, "the pods watch stalled")
    gate.set()  # the pod is created; the connection closes before its answer
    wait_for(lambda: restart_count(cluster, namespace) == 1, 60, "RestartCount.trainer 1 (recorded blind)")
    statuses = [s.status for s in faulty.requests("POST", creates)]
    lost = statuses.index(None)
    # The lost answer, then AlreadyExists for each pass that planned the create again (the
    # cache learns of the pod only from the watch, which is stalled).
    assert statuses[lost + 1 :] and set(statuses[lost + 1 :]) == {409}, statuses
    faulty.clear()
    faulty.end_watches(PODS)
    replaced(cluster, namespace, before, 0)
    settled(cluster, namespace)


def test_a_recovery_interrupted_by_an_apiserver_restart_completes_once(
    cluster: KubeCluster, namespace: str, faulty: FaultProxy
) -> None:
    assert cluster.local is not None
    before = start(cluster, namespace)
    gate = threading.Event()
    creates = f"/api/v1/namespaces/{namespace}/pods"
    held = faulty.add(Rule(Fault.PASS, "POST", creates, gate=gate, times=1))
    faults.force_delete(cluster.api, namespace, before[1])
    wait_for(lambda: held.hits == 1, 30, "the replacement's create under way")
    # Killed, as a crash: a graceful stop takes 15 s here, and with the restart the nodes'
    # leases would lapse past their grace (16 s): they would go NotReady and have their pods
    # replaced, which is another fault.
    cluster.local.stop("kube-apiserver", timeout=1)
    try:
        since = time.monotonic()
        gate.set()  # the create reaches a stopped apiserver: the operator's connection closes
        wait_for(lambda: faulty.requests("POST", creates, since=since), 30, "the create answered by nothing")
        time.sleep(2)  # the operator's retries meet the outage too
    finally:
        cluster.local.start("kube-apiserver")
    replaced(cluster, namespace, before, 1)
    settled(cluster, namespace)


def test_throttled_and_failing_writes_are_retried_with_backoff_and_never_doubled(
    cluster: KubeCluster, namespace: str, faulty: FaultProxy
) -> None:
    before = start(cluster, namespace)
    creates = f"/api/v1/namespaces/{namespace}/pods"
    since = time.monotonic()
    faulty.add(Rule(Fault.STATUS, "POST", creates, status=429, retry_after=2, times=2))
    faulty.add(Rule(Fault.LOST, "POST", creates, status=500, times=1))  # made, answered 500
    faulty.add(Rule(Fault.LOST, "POST", f"/api/v1/namespaces/{namespace}/events", status=503, times=1))
    faulty.add(Rule(Fault.STATUS, "PATCH", job_status(namespace), status=503, times=2))
    faults.force_delete(cluster.api, namespace, before[2])
    replaced(cluster, namespace, before, 2)
    settled(cluster, namespace)
    attempts = faulty.requests("POST", creates, since=since)
    assert [s.status for s in attempts][:3] == [429, 429, 500]
    # Retry-After is honoured, kicks or not; a 5xx waits the backoff, doubled per failure.
    gaps = [b.at - a.at for a, b in itertools.pairwise(attempts)]
    assert gaps[0] >= 1.9 and gaps[1] >= 1.9, gaps
    writes = faulty.requests("PATCH", job_status(namespace), since=since)
    assert [s.status for s in writes][:2] == [503, 503]
    assert writes[1].at - writes[0].at >= 0.9


def test_a_failing_listing_is_retried_with_backoff_and_misses_nothing(
    cluster: KubeCluster, namespace: str, faulty: FaultProxy
) -> None:
    before = start(cluster, namespace)
    since = time.monotonic()
    lists = faulty.add(Rule(Fault.STATUS, "GET", PODS, watch=False, status=500, times=4))
    faulty.cut_watches(PODS)  # the watch breaks; the listing after it fails four times
    wait_for(lambda: lists.hits >= 1, 30, "the first failed listing")
    faults.force_delete(cluster.api, namespace, before[0])
    replaced(cluster, namespace, before, 0)
    settled(cluster, namespace)
    failed = [s for s in faulty.requests("GET", PODS, since=since) if s.status == 500]
    gaps = [b.at - a.at for a, b in itertools.pairwise(failed)]
    assert len(failed) == 4 and all(g >= 0.4 for g in gaps) and gaps == sorted(gaps), gaps


def test_a_status_write_that_conflicts_with_another_writer_is_made_again_on_the_fresh_job(
    cluster: KubeCluster, namespace: str, faulty: FaultProxy
) -> None:
    before = start(cluster, namespace)
    gate = threading.Event()
    since = time.monotonic()
    held = faulty.add(Rule(Fault.PASS, "PATCH", job_status(namespace), gate=gate, times=1))
    faults.force_delete(cluster.api, namespace, before[0])
    wait_for(lambda: held.hits == 1, 30, "the restart's status write under way")
    # Another writer changes the status between the operator's read and its write.
    audit = {
        "type": "Running",
        "status": "False",
        "reason": "AuditedElsewhere",
        "message": "written by another writer",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    client.CustomObjectsApi(cluster.api).patch_namespaced_custom_object_status(
        api.GROUP,
        api.VERSION,
        namespace,
        api.PLURAL,
        NAME,
        [{"op": "add", "path": "/status/conditions/-", "value": audit}],
        _content_type="application/json-patch+json",
    )
    gate.set()
    replaced(cluster, namespace, before, 0)
    settled(cluster, namespace)
    writes = faulty.requests("PATCH", job_status(namespace), since=since)
    assert writes[0].status == 422  # the stale write refused ...
    job = get_job(cluster, namespace, NAME)
    assert "AuditedElsewhere" in [c.get("reason") for c in conditions(job)]  # ... the newer data kept
