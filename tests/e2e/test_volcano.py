"""Volcano on the real control plane (issue 16, items 2 and 3).

Host files: with plugin.discovery the job's ConfigMap carries ``/etc/volcano/<replica>.host``,
kept in index order through a scale-out and a scale-in; they are read back as the kubelet
would lay them out (tests/kubelet_volumes.py: the ConfigMap's data through the pod's volume
and mount, as the API server holds them; kwok runs no kubelet).

PodGroup: the default test cluster has no Volcano, and a seed job (its pods ask for
``schedulerName: volcano``, which the local kube-scheduler serves with a profile of that name)
gets no PodGroup and no group annotation. With a minimal PodGroup CRD installed
(tests/e2e/volcano_crds.py) and the operator restarted (it looks once, at start), the job gets a
PodGroup with minMember the sum of minReplicas, owned by the job, rewritten when minReplicas is
edited, gone with the job. The module then
removes the CRD and restarts the operator again, so later tests run as before. A PodGroup
deleted by hand is made again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.served import served_kinds
from aitj.core import api, naming
from aitj.core.planner import ObjectKind
from aitj.core.render import volcano
from tests.clusters import KubeCluster
from tests.e2e import volcano_crds
from tests.jobs import create_job, delete_job, get_job, job_pods, patch_job, running, seed_variant, set_path
from tests.kubelet_volumes import container_env, container_files
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

HOSTS_JOB, GANG_JOB, PLAIN_JOB = "vc-hosts", "vc-gang", "vc-plain"


def pod_json(cluster: KubeCluster, namespace: str, name: str) -> dict[str, Any]:
    """pod_json: the pod as the API server holds it (JSON field names, as the kubelet reads it)."""
    body: dict[str, Any] = json.loads(
        cluster.core.read_namespaced_pod(name, namespace, _preload_content=False).data
    )
    return body


def configmap_data(cluster: KubeCluster, namespace: str, job: str) -> dict[str, str]:
    cm = cluster.core.read_namespaced_config_map(naming.discovery_configmap_name(job), namespace)
    return dict(cm.data or {})


def expected_files(cluster: KubeCluster, namespace: str, job: str) -> dict[str, str]:
    """expected_files: what /etc/volcano should hold now: each replica's Running pods, by index."""
    out = {}
    for replica in ("trainer", "launcher"):
        pods = running(job_pods(cluster, namespace, job, replica))  # sorted by index
        hosts = [naming.pod_host(job, p.metadata.name) for p in pods]
        out[f"{volcano.HOSTS_MOUNT_PATH}/{replica}.host"] = "\n".join(hosts)
    return out


def seen_files(cluster: KubeCluster, namespace: str, job: str, pod: str, container: str) -> dict[str, str]:
    """seen_files: the /etc/volcano files ``container`` of ``pod`` reads, as the kubelet lays them out."""
    configmaps = {naming.discovery_configmap_name(job): configmap_data(cluster, namespace, job)}
    files = container_files(pod_json(cluster, namespace, pod), container, configmaps)
    return {k: v for k, v in files.items() if k.startswith(volcano.HOSTS_MOUNT_PATH + "/")}


def started_env(cluster: KubeCluster, namespace: str, pod: str) -> dict[str, str]:
    """started_env: the environment the pod's aitj-0 container would start with now."""
    configmaps = {naming.discovery_configmap_name(HOSTS_JOB): configmap_data(cluster, namespace, HOSTS_JOB)}
    return container_env(pod_json(cluster, namespace, pod), "aitj-0", configmaps)


def files_agree(cluster: KubeCluster, namespace: str, trainers: int) -> dict[str, str] | None:
    """files_agree: the launcher's /etc/volcano files when they list ``trainers`` Running trainers
    and match the pods (None until then: the operator rewrites them as pods start and stop)."""
    expected = expected_files(cluster, namespace, HOSTS_JOB)
    if len(expected["/etc/volcano/trainer.host"].split("\n")) != trainers:
        return None
    (launcher,) = running(job_pods(cluster, namespace, HOSTS_JOB, "launcher")) or [None]
    if launcher is None:
        return None
    seen = seen_files(cluster, namespace, HOSTS_JOB, launcher.metadata.name, "aitj-0")
    return seen if seen == expected else None


def scale_to(cluster: KubeCluster, namespace: str, replicas: int) -> None:
    patch_job(cluster, namespace, HOSTS_JOB, {"spec": {"replicaSpecs": {"trainer": {"replicas": replicas}}}})


def test_a_volcano_scheduled_job_without_volcano_installed_gets_no_podgroup_and_no_group_annotation(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    assert not volcano_crds.served(cluster)
    assert ObjectKind.VOLCANO_PODGROUP not in served_kinds(cluster.api)  # as the operator asked at its start
    create_job(cluster, namespace, seed_variant(PLAIN_JOB))
    pods = wait_for(
        lambda: found if len(found := job_pods(cluster, namespace, PLAIN_JOB, "trainer")) == 3 else None,
        30,
        "3 trainers created",
    )
    assert all(p.spec.scheduler_name == "volcano" for p in pods)  # the seed's, passed through
    assert all(volcano.ANNOTATION_GROUP_NAME not in (p.metadata.annotations or {}) for p in pods)
    # No Volcano found at start (the native gang kinds, which this cluster serves, may be logged).
    assert str(ObjectKind.VOLCANO_PODGROUP) not in live_operator.logs()


def test_host_files_follow_a_scale_out_and_a_scale_in_in_index_order_as_the_kubelet_lays_them_out(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(HOSTS_JOB, grace=set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 3))
    create_job(cluster, namespace, doc)
    seen = wait_for(lambda: files_agree(cluster, namespace, 3), 60, "3 trainers in /etc/volcano/trainer.host")
    # The Volcano seed's launcher: WORKER_HOST=`cat /etc/volcano/worker.host | tr "\n" ","`
    hosts = seen["/etc/volcano/trainer.host"].replace("\n", ",").split(",")
    assert len(hosts) == 3 and all(h.endswith(f".{HOSTS_JOB}") for h in hosts)
    (launcher,) = running(job_pods(cluster, namespace, HOSTS_JOB, "launcher"))
    (volume,) = [
        v
        for v in pod_json(cluster, namespace, launcher.metadata.name)["spec"]["volumes"]
        if v["name"] == volcano.HOSTS_VOLUME
    ]
    assert volume["configMap"]["items"] == [
        {"key": "trainer.host", "path": "trainer.host"},
        {"key": "launcher.host", "path": "launcher.host"},
    ]
    env = started_env(cluster, namespace, launcher.metadata.name)
    assert env["VC_TRAINER_NUM"] == "3" and len(env["VC_TRAINER_HOSTS"].split(",")) == 3

    scale_to(cluster, namespace, 5)
    wait_for(lambda: files_agree(cluster, namespace, 5), 60, "5 trainers in the host file")
    status = get_job(cluster, namespace, HOSTS_JOB)["status"]
    assert status["discoveryHosts"] == [
        p.metadata.name for p in running(job_pods(cluster, namespace, HOSTS_JOB, "trainer"))
    ]
    assert status["hostFiles"] == {"launcher": [launcher.metadata.name]}
    # A container starting now reads 5 (one started before keeps what it read: docs/volcano.md).
    assert started_env(cluster, namespace, launcher.metadata.name)["VC_TRAINER_NUM"] == "5"

    scale_to(cluster, namespace, 2)
    wait_for(lambda: files_agree(cluster, namespace, 2), 60, "2 trainers in the host file")
    indices = [
        int(p.metadata.labels[api.LABEL_INDEX])
        for p in running(job_pods(cluster, namespace, HOSTS_JOB, "trainer"))
    ]
    assert indices == [0, 1]


# ---- with Volcano's PodGroup kind served --------------------------------------------------


@pytest.fixture(scope="module")
def volcano_served(cluster: KubeCluster, operator: OperatorProcess) -> Iterator[None]:
    """volcano_served: the minimal PodGroup CRD installed and the session's operator restarted,
    so it finds the kind served; afterwards the CRD removed and the operator restarted again."""
    volcano_crds.install(cluster)
    _restart(operator)
    wait_for(
        lambda: "optional kinds served" in operator.log_path.read_text(), 60, "the operator found PodGroups"
    )
    try:
        yield
    finally:
        operator.stop()
        volcano_crds.uninstall(cluster)
        operator.start()


def _restart(operator: OperatorProcess) -> None:
    operator.stop()
    operator.start()


def podgroup(cluster: KubeCluster, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        custom: Any = client.CustomObjectsApi(cluster.api)
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            volcano.PODGROUP_GROUP, volcano.PODGROUP_VERSION, namespace, volcano.PODGROUP_PLURAL, name
        )
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    return found


def remade(cluster: KubeCluster, namespace: str, uid: str) -> bool:
    again = podgroup(cluster, namespace, GANG_JOB)
    return again is not None and again["metadata"]["uid"] != uid


def test_a_volcano_job_gets_a_podgroup_with_min_member_and_owner_that_goes_with_the_job(
    cluster: KubeCluster, namespace: str, volcano_served: None, live_operator: OperatorProcess
) -> None:
    assert ObjectKind.VOLCANO_PODGROUP in served_kinds(cluster.api)
    job = create_job(cluster, namespace, seed_variant(GANG_JOB))
    group = wait_for(lambda: podgroup(cluster, namespace, GANG_JOB), 30, "the job's PodGroup")
    assert group["spec"]["minMember"] == 1  # the seed's trainer minReplicas (the launcher comes after)
    assert group["spec"]["queue"] == "default"
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        api.KIND,
        GANG_JOB,
        job["metadata"]["uid"],
        True,
    )
    pods = wait_for(
        lambda: found if len(found := job_pods(cluster, namespace, GANG_JOB)) == 4 else None, 60, "4 pods"
    )
    assert all((p.metadata.annotations or {}).get(volcano.ANNOTATION_GROUP_NAME) == GANG_JOB for p in pods)
    # Volcano is the scheduler behind the name: no native gang besides its PodGroup.
    assert all(p.spec.scheduling_group is None for p in pods)
    # An edit of minReplicas reaches the PodGroup (a merge patch of its spec).
    patch_job(cluster, namespace, GANG_JOB, {"spec": {"replicaSpecs": {"trainer": {"minReplicas": 2}}}})
    wait_for(
        lambda: (podgroup(cluster, namespace, GANG_JOB) or {}).get("spec", {}).get("minMember") == 2,
        30,
        "minMember 2 after minReplicas 2",
    )
    # Deleted by hand: the watch kicks the job and the next pass makes it again.
    custom: Any = client.CustomObjectsApi(cluster.api)
    custom.delete_namespaced_custom_object(
        volcano.PODGROUP_GROUP, volcano.PODGROUP_VERSION, namespace, volcano.PODGROUP_PLURAL, GANG_JOB
    )
    uid = group["metadata"]["uid"]
    wait_for(lambda: remade(cluster, namespace, uid), 30, "the PodGroup made again")
    delete_job(cluster, namespace, GANG_JOB)
    started = time.monotonic()
    wait_for(lambda: podgroup(cluster, namespace, GANG_JOB) is None, 60, "the PodGroup gone with its job")
    print(f"PodGroup collected {time.monotonic() - started:.1f}s after the job's deletion")
