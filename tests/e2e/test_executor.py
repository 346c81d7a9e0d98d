"""The executor against the real apiserver: what each step's answers mean (AlreadyExists,
NotFound, a failed version test, a namespace being deleted), with the operator stopped so that
only the executor writes. The order of the steps is the pure ``walk`` over ``STEPS``
(tests/unit/test_executor.py); here every call goes to a real server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import REGISTRY

from aitj.controller.executor import (
    ForeignObject,
    KubeExecutor,
    NamespaceTerminating,
    Sent,
    StaleJob,
    StepFailed,
)
from aitj.core import api
from aitj.core.api import JobStatus, Phase, RestartScope
from aitj.core.observed import TRACKING_FINALIZER
from aitj.core.planner.lifecycle import JobRef
from aitj.core.planner.types import (
    DeleteReason,
    Event,
    Manifest,
    ObjectKind,
    ObjectRef,
    Plan,
    PodCreate,
    PodDelete,
    RestartRecord,
)
from aitj.core.policy import Failure, FailureKind
from tests.clusters import KubeCluster
from tests.jobs import create_job, get_job, seed_variant
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

NAME = "exec"


@pytest.fixture
def quiet(live_operator: OperatorProcess) -> Iterator[None]:
    """quiet: the session operator stopped for the test (only the executor under test writes),
    started again afterwards for the tests that share it."""
    live_operator.stop()
    try:
        yield
    finally:
        live_operator.start()


def target(cluster: KubeCluster, namespace: str) -> JobRef:
    """target: a job created for the test, as the executor names it (with its version)."""
    job = create_job(cluster, namespace, seed_variant(NAME))
    meta = job["metadata"]
    return JobRef(namespace, NAME, meta["uid"], meta["resourceVersion"])


def pod(name: str, finalizer: bool = False) -> dict[str, Any]:
    """pod: a minimal real pod manifest."""
    meta: dict[str, Any] = {"name": name, "labels": {api.LABEL_JOB: NAME}}
    if finalizer:
        meta["finalizers"] = [TRACKING_FINALIZER]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def owner(job: JobRef) -> list[dict[str, Any]]:
    """owner: the ownerReferences that make an object the job's (its controller)."""
    ref = {"apiVersion": f"{api.GROUP}/{api.VERSION}", "kind": api.KIND, "name": NAME, "uid": job.uid}
    return [{**ref, "controller": True}]


def configmap(job: JobRef, name: str, data: str, version: str = "") -> Manifest:
    """configmap: the job's ConfigMap ``name``; ``version``: the one observed, which a
    rewrite names ("": none observed, a create)."""
    meta = {"name": name, "ownerReferences": owner(job)}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"hosts": data}}
    return Manifest(ObjectKind.CONFIGMAP, name, body, version)


def budget(job: JobRef, name: str, min_available: int, uid: str = "") -> Manifest:
    """budget: the job's budget ``name``; ``uid``: the one observed, which a rewrite names
    ("": none observed, a create)."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "ownerReferences": owner(job)},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {api.LABEL_JOB: NAME}}},
    }
    return Manifest(ObjectKind.PDB, name, body, uid=uid)


def written(sent: Sent, kind: ObjectKind, name: str) -> dict[str, Any]:
    """written: the metadata the executor handed the cache for ``kind`` ``name`` (the last)."""
    found = [b["metadata"] for k, b in sent.written.owned if k is kind and b["metadata"]["name"] == name]
    assert found, f"nothing written of {kind} {name}: {sent.written.owned}"
    return dict(found[-1])


def test_a_plan_sent_twice_is_carried_out_once_and_the_second_time_is_no_error(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    job = target(cluster, namespace)
    plan = Plan(
        creates=(PodCreate("exec-trainer-abcde-0", "trainer", 0, 0, pod("exec-trainer-abcde-0")),),
        discovery=configmap(job, "exec-discovery", "a"),
        budgets=(budget(job, "exec-trainer", 1),),
        events=(Event("Normal", "Tested", "once", f"{NAME}.{uuid.uuid4().hex[:8]}"),),
    )
    executor = KubeExecutor(cluster.new_api())
    first = executor.execute(job, plan)
    again = executor.execute(job, plan)  # AlreadyExists, a named Event already there: both fine
    assert first.stopped is None and again.stopped is None
    assert [c.index for c in first.created] == [0] and again.created == []  # made once
    core = cluster.core
    assert core.read_namespaced_pod("exec-trainer-abcde-0", namespace).metadata.name
    assert core.read_namespaced_config_map("exec-discovery", namespace).data == {"hosts": "a"}
    pdb: Any = client.PolicyV1Api(cluster.api).read_namespaced_pod_disruption_budget(
        "exec-trainer", namespace
    )
    assert pdb.spec.min_available == 1
    tested = [e for e in core.list_namespaced_event(namespace).items if e.reason == "Tested"]
    assert len(tested) == 1


def connections_opened(api_client: client.ApiClient) -> int:
    """connections_opened: how many connections the client's pools have opened so far."""
    pools = api_client.rest_client.pool_manager.pools
    # urllib3's RecentlyUsedContainer refuses plain iteration; keys() is its way.
    return sum(pools[key].num_connections for key in pools.keys())  # noqa: SIM118


def test_calls_in_a_row_reuse_one_connection(cluster: KubeCluster, namespace: str, quiet: None) -> None:
    # Each answer is read to its end, so its connection goes back to the pool: sequential
    # calls need one connection, not a TLS handshake each (an unread answer keeps its own).
    job = target(cluster, namespace)
    api_client = cluster.new_api()
    executor = KubeExecutor(api_client)
    for i in range(5):
        sent = executor.execute(
            job,
            Plan(
                discovery=configmap(job, f"exec-discovery-{i}", str(i)),
                events=(Event("Normal", "Tested", f"call {i}"),),
                budgets=(budget(job, f"exec-b{i}", 1),),
                removes=(ObjectRef(ObjectKind.PDB, f"exec-b{i - 1}"),),
            ),
        )
        assert sent.stopped is None
    assert connections_opened(api_client) == 1


def test_a_missing_discovery_configmap_or_budget_is_created_and_an_existing_one_rewritten(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    job = target(cluster, namespace)
    executor = KubeExecutor(cluster.new_api())
    cm, pdb_uid = "", ""
    for data, count in (("a", 1), ("b", 2)):
        plan = Plan(
            discovery=configmap(job, "exec-discovery", data, cm),
            budgets=(budget(job, "exec-b", count, pdb_uid),),
        )
        sent = executor.execute(job, plan)
        assert sent.stopped is None
        cm = written(sent, ObjectKind.CONFIGMAP, "exec-discovery")["resourceVersion"]
        pdb_uid = written(sent, ObjectKind.PDB, "exec-b")["uid"]
    assert cluster.core.read_namespaced_config_map("exec-discovery", namespace).data == {"hosts": "b"}
    pdb: Any = client.PolicyV1Api(cluster.api).read_namespaced_pod_disruption_budget("exec-b", namespace)
    assert pdb.spec.min_available == 2


def test_a_configmap_rewrite_from_a_version_not_the_object_s_fails_and_changes_nothing(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    # The ConfigMap changed since the version the pass observed (a write it has not seen): the
    # replace is refused (Conflict), and the next pass plans from what is there now.
    job = target(cluster, namespace)
    executor = KubeExecutor(cluster.new_api())
    sent = executor.execute(job, Plan(discovery=configmap(job, "exec-x", "a")))
    observed = written(sent, ObjectKind.CONFIGMAP, "exec-x")["resourceVersion"]
    cluster.core.patch_namespaced_config_map(
        "exec-x", namespace, {"metadata": {"labels": {"someone": "else"}}}
    )
    before = cluster.core.read_namespaced_config_map("exec-x", namespace)
    stale = executor.execute(job, Plan(discovery=configmap(job, "exec-x", "b", observed)))
    assert isinstance(stale.stopped, StepFailed) and not isinstance(stale.stopped, ForeignObject)
    now = cluster.core.read_namespaced_config_map("exec-x", namespace)
    assert now.metadata.resource_version == before.metadata.resource_version and now.data == {"hosts": "a"}


def test_a_budget_rewrite_names_the_uid_observed_and_spares_another_budget_made_since(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    # Not the version: the disruption controller writes the budget's status at every pod
    # change. The uid: a budget made since under the name (a user's) is not rewritten.
    job = target(cluster, namespace)
    policy: Any = client.PolicyV1Api(cluster.api)
    executor = KubeExecutor(cluster.new_api())
    sent = executor.execute(job, Plan(budgets=(budget(job, "exec-x", 1),)))
    observed = written(sent, ObjectKind.PDB, "exec-x")["uid"]
    policy.patch_namespaced_pod_disruption_budget("exec-x", namespace, {"metadata": {"labels": {"s": "e"}}})
    assert executor.execute(job, Plan(budgets=(budget(job, "exec-x", 2, observed),))).stopped is None
    assert policy.read_namespaced_pod_disruption_budget("exec-x", namespace).spec.min_available == 2
    policy.delete_namespaced_pod_disruption_budget("exec-x", namespace)
    theirs = policy.create_namespaced_pod_disruption_budget(namespace, budget(job, "exec-x", 9).body)
    stale = executor.execute(job, Plan(budgets=(budget(job, "exec-x", 3, observed),)))
    assert isinstance(stale.stopped, StepFailed)
    now = policy.read_namespaced_pod_disruption_budget("exec-x", namespace)
    assert now.metadata.uid == theirs.metadata.uid and now.spec.min_available == 9


@pytest.mark.parametrize("kind", [ObjectKind.CONFIGMAP, ObjectKind.SECRET, ObjectKind.SERVICE])
def test_a_create_that_meets_an_object_the_job_does_not_control_stops_and_writes_nothing(
    cluster: KubeCluster, namespace: str, quiet: None, kind: ObjectKind
) -> None:
    # The read after AlreadyExists: a list by name on a kind the operator watches, a get of a
    # Secret's metadata (never its data); the object is the cache's to hold, untouched.
    job = target(cluster, namespace)
    core = cluster.core
    theirs: dict[ObjectKind, Any] = {
        ObjectKind.CONFIGMAP: ("config_map", {"metadata": {"name": "exec-x"}, "data": {"k": "theirs"}}),
        ObjectKind.SECRET: ("secret", {"metadata": {"name": "exec-x"}, "stringData": {"k": "theirs"}}),
        ObjectKind.SERVICE: ("service", {"metadata": {"name": "exec-x"}, "spec": {"clusterIP": "None"}}),
    }
    plural, body = theirs[kind]
    made = getattr(core, f"create_namespaced_{plural}")(namespace, body)
    ours = {**body, "metadata": {"name": "exec-x", "ownerReferences": owner(job)}}
    sent = KubeExecutor(cluster.new_api()).execute(job, Plan(ensure=(Manifest(kind, "exec-x", ours),)))
    assert isinstance(sent.stopped, ForeignObject)
    assert f"{kind} exec-x" in str(sent.stopped)
    seen = written(sent, kind, "exec-x")
    assert seen["uid"] == made.metadata.uid and not seen.get("ownerReferences")
    assert all("data" not in b and "stringData" not in b for _, b in sent.written.owned)  # metadata only
    now = getattr(core, f"read_namespaced_{plural}")("exec-x", namespace)
    assert now.metadata.resource_version == made.metadata.resource_version


def test_a_delete_names_the_uid_observed_and_spares_an_object_made_since(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    job = target(cluster, namespace)
    policy: Any = client.PolicyV1Api(cluster.api)
    old = policy.create_namespaced_pod_disruption_budget(namespace, budget(job, "exec-x", 1).body)
    policy.delete_namespaced_pod_disruption_budget("exec-x", namespace)
    new = policy.create_namespaced_pod_disruption_budget(namespace, budget(job, "exec-x", 1).body)
    executor = KubeExecutor(cluster.new_api())
    # Observed before the replacement: the delete's precondition is the old uid.
    sent = executor.execute(job, Plan(removes=(ObjectRef(ObjectKind.PDB, "exec-x", old.metadata.uid),)))
    assert sent.stopped is None
    assert policy.read_namespaced_pod_disruption_budget("exec-x", namespace).metadata.uid == new.metadata.uid
    sent = executor.execute(job, Plan(removes=(ObjectRef(ObjectKind.PDB, "exec-x", new.metadata.uid),)))
    assert sent.stopped is None
    with pytest.raises(ApiException) as gone:
        policy.read_namespaced_pod_disruption_budget("exec-x", namespace)
    assert gone.value.status == 404


def test_a_status_write_from_a_stale_version_raises_and_changes_nothing(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    job = target(cluster, namespace)
    executor = KubeExecutor(cluster.new_api())
    sent = executor.execute(job, Plan(status=JobStatus(phase=Phase.RUNNING)))
    assert get_job(cluster, namespace, NAME)["status"]["phase"] == "Running"
    assert sent.status_written and sent.stopped is None
    assert [j["status"]["phase"] for j in sent.written.jobs] == ["Running"]  # what the cache is told
    # planned from the version before the write above
    stale = executor.execute(job, Plan(status=JobStatus(phase=Phase.FAILED)))
    assert isinstance(stale.stopped, StaleJob) and not stale.status_written
    assert get_job(cluster, namespace, NAME)["status"]["phase"] == "Running"


def test_a_stale_status_write_has_posted_the_restart_event_and_says_it_wrote_no_status(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    job = target(cluster, namespace)
    executor = KubeExecutor(cluster.new_api())
    executor.execute(job, Plan(status=JobStatus(phase=Phase.RUNNING)))
    at = datetime.now(UTC)
    record = RestartRecord(
        "trainer",
        0,
        0,
        "exec-trainer-abcde-0",
        Failure(FailureKind.POD_FAILED, "x", at=at),
        "r",
        RestartScope.POD,
        at,
    )
    event = Event("Warning", "TrainingJobRestarting", "p failed", f"{NAME}.restart-trainer-0-0")
    plan = Plan(restart_events=(event,), status=JobStatus(phase=Phase.RESTARTING), restarts=(record,))
    sent = executor.execute(job, plan)
    assert isinstance(sent.stopped, StaleJob)
    reasons = [e.reason for e in cluster.core.list_namespaced_event(namespace).items]
    assert reasons.count("TrainingJobRestarting") == 1
    # The reconciler counts the restarts a status write recorded only once it went through.
    assert not sent.status_written
    assert restarts_counted(namespace) == 0
    assert get_job(cluster, namespace, NAME)["status"]["phase"] == "Running"


def restarts_counted(namespace: str) -> float:
    """restarts_counted: this process's aitj_restarts_total for the test's restart."""
    labels = {
        "namespace": namespace,
        "job_name": NAME,
        "replica": "trainer",
        "cause": "PodFailed",
        "scope": "Pod",
        "class": "application",
    }
    return REGISTRY.get_sample_value("aitj_restarts_total", labels) or 0.0


def test_gone_pods_are_neither_deleted_nor_released_in_error(
    cluster: KubeCluster, namespace: str, quiet: None
) -> None:
    job = target(cluster, namespace)
    executor = KubeExecutor(cluster.new_api())
    sent = executor.execute(
        job,
        Plan(deletes=(PodDelete("nobody", "u-1", None, DeleteReason.UNWANTED, "gone"),), release=("nobody",)),
    )
    assert sent.stopped is None
    assert set(sent.written.gone_pods) == {"nobody"}  # the cache is told it is gone


def test_a_create_in_a_namespace_being_deleted_says_so(cluster: KubeCluster, quiet: None) -> None:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    core = cluster.core
    core.create_namespace({"metadata": {"name": namespace}})
    wait_for(
        lambda: any(
            sa.metadata.name == "default" for sa in core.list_namespaced_service_account(namespace).items
        ),
        30,
        "the default service account",
    )
    job = target(cluster, namespace)
    core.create_namespaced_pod(namespace, pod("held", finalizer=True))  # keeps it Terminating
    core.delete_namespace(namespace)
    try:
        sent = KubeExecutor(cluster.new_api()).execute(
            job,
            Plan(creates=(PodCreate("exec-trainer-abcde-1", "trainer", 1, 0, pod("exec-trainer-abcde-1")),)),
        )
        assert isinstance(sent.stopped, NamespaceTerminating) and sent.created == []
    finally:
        core.patch_namespaced_pod("held", namespace, {"metadata": {"finalizers": None}})

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except ApiException as e:
            return bool(e.status == 404)
        return False

    wait_for(gone, 60, f"namespace {namespace} gone")
