"""Native gang scheduling on the local control plane (issue 16; docs/gang.md): the scheduler's
``volcano`` profile places a job's pods all or none, the operator makes the gang objects.

Each test pins its trainers to nodes of its own (tests/e2e/pools.py) with a known number of
GPUs, and asks one GPU per trainer, so "fits" and "does not fit" are exact. The gang API's
version is the one the cluster serves (v1beta1 on Kubernetes 1.37, v1alpha2 on 1.36); on a
cluster that serves neither (1.35: the local control plane then runs without gangs) every test
here is skipped.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from aitj.controller import gangapi
from aitj.controller.kubeclient import api_client
from aitj.controller.served import served_kinds
from aitj.core.render import gang
from aitj.devcluster.config import NATIVE_GANG
from aitj.devcluster.nodes import node_manifest, profile
from aitj.devcluster.versions import KUBERNETES, minor
from tests.clusters import KubeCluster
from tests.e2e.pools import POOL_LABEL, Pool
from tests.jobs import (
    Doc,
    create_job,
    delete_job,
    job_pods,
    live,
    running,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

GPU = "nvidia.com/gpu"
# The version each release's local control plane serves (aitj.devcluster.config.NATIVE_GANG).
SERVED_BY_RELEASE = {m: g.api_version.split("/")[1] for m, g in NATIVE_GANG.items()}


@pytest.fixture(scope="module")
def version(cluster: KubeCluster) -> str:
    """version: the gang API's version the cluster serves, as the operator finds it at start."""
    found = gangapi.served_version(cluster.api)
    if found is None:
        pytest.skip("the cluster serves no native gang API the operator uses (Kubernetes 1.35)")
    return found


@pytest.fixture(autouse=True)
def _served(version: str) -> None:
    """_served: every test here needs the gang API (``version`` skips them where it is not)."""


def gpu_node(cluster: KubeCluster, pool: Pool, gpus: int) -> str:
    """gpu_node: a node of ``pool`` with ``gpus`` GPUs (a cce node otherwise), once Ready."""
    name = f"gang-{uuid.uuid4().hex[:6]}"
    body = node_manifest(name, profile("cce"))
    body["metadata"]["labels"][POOL_LABEL] = pool.value
    capacity = {**body["status"]["capacity"], GPU: str(gpus)}
    body["status"] = {"capacity": capacity, "allocatable": capacity}
    cluster.core.create_node(body)
    pool.nodes.append(name)
    wait_for(lambda: _ready(cluster, name), 30, f"node {name} Ready")
    return name


def _ready(cluster: KubeCluster, name: str) -> bool:
    node = cluster.core.read_node(name)
    ready = [c for c in node.status.conditions or [] if c.type == "Ready"]
    return bool(ready and ready[0].status == "True" and not node.spec.taints)


def gang_job(name: str, pool: Pool, replicas: int, min_replicas: int, **changes: Any) -> Doc:
    """gang_job: the seed (on ``volcano``) with ``replicas`` trainers of one GPU each, pinned
    to ``pool``, ``min_replicas`` of them the minimum."""
    return seed_variant(
        name,
        pin=pool.pin(),
        replicas=set_path("spec.replicaSpecs.trainer.replicas", replicas),
        minimum=set_path("spec.replicaSpecs.trainer.minReplicas", min_replicas),
        maximum=set_path("spec.replicaSpecs.trainer.maxReplicas", max(replicas, 5)),
        gpus=set_path(
            "spec.replicaSpecs.trainer.template.spec.containers.0.resources",
            {"limits": {GPU: "1"}, "requests": {GPU: "1"}},
        ),
        **changes,
    )


def gang_objects(cluster: KubeCluster, namespace: str, plural: str) -> list[dict[str, Any]]:
    version = gangapi.served_version(cluster.api) or gang.NEWEST
    items: list[dict[str, Any]] = _custom(cluster).list_namespaced_custom_object(
        gang.GROUP, version, namespace, plural
    )["items"]
    return items


def _custom(cluster: KubeCluster) -> Any:
    return client.CustomObjectsApi(cluster.api)


def trainers(cluster: KubeCluster, namespace: str, name: str) -> list[Any]:
    return live(job_pods(cluster, namespace, name, "trainer"))


def bound(pods: list[Any]) -> list[Any]:
    return [p for p in pods if p.spec.node_name]


def test_a_gang_that_fits_only_in_part_binds_no_pod_until_a_node_with_room_comes(
    cluster: KubeCluster, namespace: str, operator: OperatorProcess, pool: Pool, version: str
) -> None:
    gpu_node(cluster, pool, 3)
    name = "gang-partial"
    create_job(cluster, namespace, gang_job(name, pool, replicas=4, min_replicas=4))
    wait_for(lambda: len(trainers(cluster, namespace, name)) == 4, 30, "4 trainers created")
    # The operator's objects: the Workload and the first PodGroup, owned by the job.
    (pg,) = gang_objects(cluster, namespace, gang.POD_GROUP_PLURAL)
    assert pg["metadata"]["name"] == f"{name}-gang-0"
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert pg["metadata"]["ownerReferences"][0]["name"] == name
    # Made, so written in a version the cluster serves (it serves only ``version``: the last
    # test), and read in it the PodGroup names its Workload's template as that version does.
    if version == "v1alpha2":
        template = {"workloadName": name, "podGroupTemplateName": gang.TEMPLATE}
        assert pg["spec"]["podGroupTemplateRef"] == {"workload": template}
    else:
        assert pg["spec"]["workloadRef"] == {"workloadName": name, "templateName": gang.TEMPLATE}
    (wl,) = gang_objects(cluster, namespace, gang.WORKLOAD_PLURAL)
    assert wl["metadata"]["name"] == name
    pods = trainers(cluster, namespace, name)
    assert {p.spec.scheduling_group.pod_group_name for p in pods} == {f"{name}-gang-0"}
    # 3 GPUs for 4 trainers: the scheduler says it waits for the gang, and binds none. The
    # trainers that would fit carry the gang's message; the one that does not fit carries
    # its own ("Insufficient nvidia.com/gpu"), and which trainer that is varies per run.
    wait_for(
        lambda: all(_unschedulable(p) for p in trainers(cluster, namespace, name)),
        30,
        "every trainer unschedulable",
    )
    messages = [_unschedulable(p) for p in trainers(cluster, namespace, name)]
    assert any("pod group" in m and "minCount" in m for m in messages), messages
    time.sleep(3)
    assert bound(trainers(cluster, namespace, name)) == []
    # Room comes: all four start.
    gpu_node(cluster, pool, 8)
    wait_for(lambda: len(running(trainers(cluster, namespace, name))) == 4, 60, "4 trainers running")
    wait_phase(cluster, namespace, name, "Running", 60)


def test_an_elastic_gang_starts_once_its_minimum_fits(
    cluster: KubeCluster, namespace: str, operator: OperatorProcess, pool: Pool
) -> None:
    gpu_node(cluster, pool, 3)
    name = "gang-elastic"
    create_job(cluster, namespace, gang_job(name, pool, replicas=4, min_replicas=2))
    wait_for(lambda: len(running(trainers(cluster, namespace, name))) == 3, 60, "3 trainers running")
    assert len(bound(trainers(cluster, namespace, name))) == 3  # the fourth waits for room


def test_the_seed_runs_under_the_gang_profile_and_a_lost_trainer_is_replaced_in_its_gang(
    cluster: KubeCluster, namespace: str, operator: OperatorProcess, pool: Pool
) -> None:
    for _ in range(2):
        pool.add()
    name = "gang-seed"
    create_job(cluster, namespace, seed_variant(name, pin=pool.pin()))
    wait_phase(cluster, namespace, name, "Running", 60)
    wait_for(lambda: len(running(trainers(cluster, namespace, name))) == 3, 30, "3 trainers running")
    group = f"{name}-gang-0"
    pods = job_pods(cluster, namespace, name)
    assert {p.spec.scheduling_group.pod_group_name for p in pods} == {group}  # the launcher too
    old = trainers(cluster, namespace, name)[0]
    cluster.core.delete_namespaced_pod(old.metadata.name, namespace, grace_period_seconds=0)
    started = time.monotonic()
    wait_for(
        lambda: (
            len(running(trainers(cluster, namespace, name))) == 3
            and old.metadata.name not in {p.metadata.name for p in trainers(cluster, namespace, name)}
        ),
        30,
        "trainer 0 replaced and running",
    )
    print(f"replacement running {time.monotonic() - started:.2f}s after the force-delete")
    assert {p.spec.scheduling_group.pod_group_name for p in trainers(cluster, namespace, name)} == {group}
    assert [p["metadata"]["name"] for p in gang_objects(cluster, namespace, gang.POD_GROUP_PLURAL)] == [group]


def test_a_restart_of_scope_all_forms_a_new_gang_and_the_job_takes_its_gang_away(
    cluster: KubeCluster, namespace: str, operator: OperatorProcess, pool: Pool
) -> None:
    gpu_node(cluster, pool, 8)
    name = "gang-all"
    doc = gang_job(
        name,
        pool,
        replicas=3,
        min_replicas=3,
        scope=set_path("spec.replicaSpecs.trainer.faultTolerantPolicy.0.restartScope", "All"),
    )
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, name, "Running", 60)
    old = trainers(cluster, namespace, name)[1]
    cluster.core.delete_namespaced_pod(old.metadata.name, namespace, grace_period_seconds=0)
    new = f"{name}-gang-1"
    wait_for(
        lambda: (
            len(running(trainers(cluster, namespace, name))) == 3
            and {p.spec.scheduling_group.pod_group_name for p in trainers(cluster, namespace, name)} == {new}
        ),
        60,
        "3 trainers running in the new gang",
    )
    wait_for(
        lambda: (
            [p["metadata"]["name"] for p in gang_objects(cluster, namespace, gang.POD_GROUP_PLURAL)] == [new]
        ),
        60,
        "the old PodGroup gone",
    )
    wait_phase(cluster, namespace, name, "Running", 60)
    # Deleted with the job (garbage collector).
    delete_job(cluster, namespace, name)
    wait_for(
        lambda: (
            not gang_objects(cluster, namespace, gang.POD_GROUP_PLURAL)
            and not gang_objects(cluster, namespace, gang.WORKLOAD_PLURAL)
        ),
        90,
        "the Workload and PodGroup gone with the job",
    )


def _unschedulable(pod: Any) -> str:
    for c in pod.status.conditions or []:
        if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
            return str(c.message or "")
    return ""


def test_the_operator_plans_gangs_only_where_it_serves_them_and_it_may_list_them(
    cluster: KubeCluster, operator_kubeconfig: Path, version: str
) -> None:
    # The local control plane serves the version of its release, and only that one.
    assert version == SERVED_BY_RELEASE[minor(KUBERNETES)]
    assert set(gangapi.KINDS) <= served_kinds(cluster.api, version)
    others = [v for v in gang.VERSIONS if v != version]
    assert all(not set(gangapi.KINDS) & served_kinds(cluster.api, v) for v in others)
    operator_api = api_client(operator_kubeconfig)
    assert gangapi.gang_schedulers(operator_api, ["volcano"], (), version) == {"volcano"}
    assert gangapi.gang_schedulers(operator_api, ["volcano"], ["default"], version) == {"volcano"}
    # A role that predates the gang kinds: nothing about gangs, rather than informers refused forever.
    nobody: Any = cluster.new_api()  # the client's header setter is untyped
    nobody.set_default_header("Impersonate-User", "nobody-in-particular")
    assert gangapi.gang_schedulers(nobody, ["volcano"], (), version) == frozenset()
