"""Hostile input with the operator running (issue 14, part 4): drawn AITrainingJobs
(tests/manifest_strategies.py, ``hostile_manifests``) created on the real apiserver.

What admission refuses must be refused naming the field. What it lets through must end as
docs/semantics.md ("Input the operator cannot run") says: the job goes on, or ends Failed with a
condition naming the field, or stays Pending with a condition saying why the scheduler cannot
place it. And never: a dead operator, a traceback in its log, a hot loop (passes and writes
while nothing changes), or a status that grows without bound.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core import api
from tests.clusters import KubeCluster
from tests.invalid_manifests import apiserver_path
from tests.jobs import get_job, job_pods, live
from tests.manifest_strategies import (
    FAILED,
    GOES_ON,
    REPLICA,
    UNSCHEDULABLE,
    Hostile,
    hostile_base,
    hostile_manifests,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

# A small job's status (one or two pods, a few conditions) is a few kB; this bounds it with
# room to spare, and far below what etcd would refuse.
STATUS_BYTES = 16 * 1024
# The quiet window: with every drawn job settled, nothing changes, so the operator should not
# write and should barely plan. The resync plans each job once every 5 minutes; the bound allows
# one pass per job per minute, and a single job retrying every 2 s already breaks it.
QUIET_SECONDS = 20.0
SLICES = 4
PASSES_PER_JOB_PER_MINUTE = 1.0
CREATED: list[str] = []  # the jobs this module made, for the quiet window


@pytest.fixture(scope="module")
def ns(cluster: KubeCluster, crd: None) -> Iterator[str]:
    """ns: one namespace for the module (hypothesis refuses function-scoped fixtures), with its
    default service account (pods are refused until it exists)."""
    name = f"hostile-{uuid.uuid4().hex[:6]}"
    cluster.core.create_namespace({"metadata": {"name": name}})
    wait_for(
        lambda: any(
            sa.metadata.name == "default" for sa in cluster.core.list_namespaced_service_account(name).items
        ),
        30,
        "the default service account",
    )
    try:
        yield name
    finally:
        cluster.core.delete_namespace(name)


def unique(doc: dict[str, Any]) -> str:
    """unique: give the job a name no other example used, of the same length (the length is
    what the example is about): its first characters become a fresh token."""
    name: str = doc["metadata"]["name"]
    token = "h" + uuid.uuid4().hex[:7]
    doc["metadata"]["name"] = (token + name[len(token) :])[: max(len(name), len(token))]
    return str(doc["metadata"]["name"])


def create(cluster: KubeCluster, ns: str, doc: dict[str, Any]) -> tuple[bool, str]:
    """create: (admitted, what the apiserver said when it refused)."""
    custom = client.CustomObjectsApi(cluster.api)
    try:
        custom.create_namespaced_custom_object(api.GROUP, api.VERSION, ns, api.PLURAL, doc)
    except ApiException as e:
        if e.status not in (400, 422):
            raise
        return False, str(json.loads(e.body or "{}").get("message") or e.body)
    return True, ""


def current(job: dict[str, Any]) -> dict[str, Any]:
    conditions = (job.get("status") or {}).get("conditions") or [{}]
    last: dict[str, Any] = conditions[-1]
    return last


def settled(cluster: KubeCluster, ns: str, name: str, h: Hostile) -> dict[str, Any] | None:
    """settled: the job once it is where ``h.expect`` says it must end up, else None."""
    job = get_job(cluster, ns, name)
    phase, said = (job.get("status") or {}).get("phase"), str(current(job).get("message", ""))
    if h.expect == FAILED:
        return job if phase == "Failed" else None
    if h.expect == UNSCHEDULABLE:
        return job if phase == "Pending" and "the scheduler cannot place pod" in said else None
    return job if phase == "Running" else None


@settings(
    max_examples=36,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(h=hostile_manifests())
def test_hostile_jobs_are_refused_naming_the_field_or_end_as_users_expect(
    cluster: KubeCluster, ns: str, live_operator: OperatorProcess, h: Hostile
) -> None:
    name = unique(h.manifest)
    admitted, said = create(cluster, ns, h.manifest)
    drawn = "; ".join(h.what)
    event("refused at admission" if h.refused else h.expect)
    if h.refused:
        assert not admitted, f"admitted, but {sorted(h.refused)} is wrong ({drawn})"
        named = said + apiserver_path(said)  # "[trainer]" paths made dotted, the raw text too
        assert any(path in named for path in h.refused), (
            f"none of {sorted(h.refused)} named ({drawn}): {said}"
        )
        return
    assert admitted, f"refused ({drawn}): {said}"
    CREATED.append(name)
    job = wait_for(lambda: settled(cluster, ns, name, h), 60, f"job {name} to end {h.expect} ({drawn})")
    last = current(job)
    if h.expect == FAILED:
        assert last["reason"] == "InvalidSpec", last
        assert any(f in last["message"] for f in h.fields), f"{sorted(h.fields)} not named: {last['message']}"
    elif h.expect == UNSCHEDULABLE:
        assert last["reason"] == "TrainingJobPending", last
    else:
        assert h.expect == GOES_ON and last["reason"] == "TrainingJobRunning", last
    status = job.get("status") or {}
    assert len(json.dumps(status)) < STATUS_BYTES, f"a status of {len(json.dumps(status))} bytes"
    assert len(status.get("conditions") or []) <= api.MAX_STATUS_CONDITIONS
    live_operator.assert_alive()
    assert "Traceback" not in live_operator.logs(), live_operator.logs()[-4000:]


def test_a_launcher_the_apiserver_refuses_fails_the_job_once_its_trainers_run_and_cleans_them_up(
    cluster: KubeCluster, ns: str, live_operator: OperatorProcess
) -> None:
    """The trainers are made and run; the launcher (created once they run) has no image: the
    job fails naming the launcher's image field, and its running trainers are deleted
    (cleanPodPolicy All), not left behind."""
    doc = hostile_base()
    trainer = doc["spec"]["replicaSpecs"][REPLICA]
    launcher = {**copy.deepcopy(trainer), "replicaType": "master", "replicas": 1, "maxReplicas": 1}
    launcher["template"]["spec"]["containers"][0].pop("image")
    doc["spec"]["replicaSpecs"]["launcher"] = launcher
    doc["spec"]["cleanPodPolicy"] = "All"
    name = unique(doc)
    admitted, said = create(cluster, ns, doc)
    assert admitted, said
    job = wait_for(lambda: settled(cluster, ns, name, Hostile(doc, expect=FAILED)), 60, "the job Failed")
    assert "spec.replicaSpecs.launcher.template.spec.containers[0].image" in current(job)["message"]
    # A pass made the trainers before (the launcher waits for them to run) and wrote its phase.
    assert [c["type"] for c in job["status"]["conditions"]][-1] == "Failed"
    assert len(job["status"]["conditions"]) >= 2, job["status"]["conditions"]
    wait_for(lambda: not live(job_pods(cluster, ns, name)), 60, "the trainers deleted")
    live_operator.assert_alive()


def metric(operator: OperatorProcess, sample: str) -> float:
    """metric: one sample of the operator's /metrics (0 when it has none yet)."""
    found = re.search(rf"^{re.escape(sample)} (\S+)$", operator.metrics(), re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def passes(operator: OperatorProcess) -> float:
    """passes: the operator's reconcile passes so far, and the stale ones among them."""
    return metric(operator, "aitj_reconcile_seconds_count")


def versions(cluster: KubeCluster, ns: str | None) -> dict[str, str]:
    """versions: each job's resourceVersion (any write, status included, changes it), in ``ns``
    or, for None, in every namespace (the operator plans them all)."""
    custom = client.CustomObjectsApi(cluster.api)
    if ns is None:
        listed: Any = custom.list_cluster_custom_object(api.GROUP, api.VERSION, api.PLURAL)
    else:
        listed = custom.list_namespaced_custom_object(api.GROUP, api.VERSION, ns, api.PLURAL)
    jobs: list[dict[str, Any]] = listed["items"]
    return {
        f"{j['metadata']['namespace']}/{j['metadata']['name']}": j["metadata"]["resourceVersion"]
        for j in jobs
    }


def quiet(cluster: KubeCluster, operator: OperatorProcess, timeout: float = 30) -> None:
    """quiet: wait until what other tests left behind has been handled: for up to 60 s, until no
    namespace is being deleted (its pods' and jobs' deletions kick passes), then (up to
    ``timeout``) until no pass ran for 3 s. A guard that costs nothing in the usual run: the
    ``namespace`` fixture deletes its pods with grace 0 with the namespace, which then goes in
    5 to 11 s. Before it did, the pods of a test that had deleted its pool's nodes first waited
    for the pod garbage collector's orphan sweep, and the namespace controller came back only
    151 s later: such a namespace's teardown fell in the window (two of its four slices in one
    CI run). A namespace still being deleted after 60 s is left to the median slice's bound. A
    job in a loop never lets the passes stop; the window that follows then fails on its bound."""
    deadline = time.monotonic() + 60
    while terminating(cluster) and time.monotonic() < deadline:
        time.sleep(1)
    deadline, last, still = time.monotonic() + timeout, passes(operator), 0
    while still < 3 and time.monotonic() < deadline:
        time.sleep(1)
        now = passes(operator)
        still, last = (still + 1 if now == last else 0), now


def terminating(cluster: KubeCluster) -> list[str]:
    """terminating: the namespaces being deleted."""
    return [n.metadata.name for n in cluster.core.list_namespace().items if n.status.phase == "Terminating"]


def pod_versions(cluster: KubeCluster, ns: str) -> dict[str, str]:
    return {p.metadata.name: p.metadata.resource_version for p in cluster.core.list_namespaced_pod(ns).items}


def event_count(cluster: KubeCluster, ns: str) -> int:
    """event_count: the operator's Events on jobs in ``ns`` (the scheduler's are its own business)."""
    events = cluster.core.list_namespaced_event(ns).items
    return sum(e.count or 1 for e in events if e.involved_object.kind == api.KIND)


def test_once_the_hostile_jobs_settle_the_operator_neither_writes_nor_loops(
    cluster: KubeCluster, ns: str, live_operator: OperatorProcess
) -> None:
    """Runs after the drawn jobs (file order). Nothing changes in their namespace, so any write
    there (a job, a pod, an Event), a failed call or a stale plan is a loop. Passes are counted
    for the whole operator (the metric has no job label) in slices of the window: a namespace
    another test is deleting may kick every job in it at once, so the median slice is bounded,
    which a job planned again and again exceeds in every slice."""
    if not CREATED:
        pytest.skip("no drawn job was admitted (run the whole file)")
    quiet(cluster, live_operator)
    stale = 'aitj_reconcile_errors_total{stage="stale"}'
    jobs, pods, events = versions(cluster, ns), pod_versions(cluster, ns), event_count(cluster, ns)
    stale_before, mark = metric(live_operator, stale), len(live_operator.logs())
    counts = [passes(live_operator)]
    for _ in range(SLICES):
        time.sleep(QUIET_SECONDS / SLICES)
        counts.append(passes(live_operator))
    slices = sorted(b - a for a, b in itertools.pairwise(counts))
    changed = sorted(n for n in jobs if versions(cluster, ns).get(n) != jobs[n])
    assert not changed, f"jobs written while nothing changed: {changed}"
    assert pod_versions(cluster, ns) == pods, "pods written while nothing changed"
    assert event_count(cluster, ns) == events, "Events posted while nothing changed"
    assert metric(live_operator, stale) == stale_before, "passes planned from a stale job, again and again"
    log = live_operator.logs()[mark:]
    assert f"namespace={ns}" not in log, f"the operator acted or failed in {ns}:\n{log[-3000:]}"
    everyone = len(versions(cluster, None))  # the operator plans (and resyncs) every job it sees
    bound = everyone * PASSES_PER_JOB_PER_MINUTE * QUIET_SECONDS / SLICES / 60 + 1
    print(
        f"passes per {QUIET_SECONDS / SLICES:.0f}s slice: {slices} with {everyone} jobs (bound {bound:.1f})"
    )
    assert slices[len(slices) // 2] <= bound, f"passes per slice {slices} with {everyone} jobs"
    assert "Traceback" not in live_operator.logs()
    for name in CREATED:
        status = get_job(cluster, ns, name).get("status") or {}
        assert len(json.dumps(status)) < STATUS_BYTES, f"{name}: a status of {len(json.dumps(status))} bytes"
