"""Job lifecycle on the real control plane: pods, gating, phases, outcome, cleanup (issue 4)."""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aitj.core import api, naming
from aitj.devcluster import faults
from aitj.devcluster.nodes import node_manifest, profile
from tests.clusters import KubeCluster
from tests.invalid_manifests import MODEL_ONLY, Case
from tests.jobs import (
    condition_types,
    conditions,
    create_job,
    delete_job,
    events_for,
    get_job,
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
NAME = "test-horovod-elastic"


@pytest.fixture
def pool_node(cluster: KubeCluster) -> Iterator[tuple[str, str]]:
    """pool_node is a spare node and a label value no node has yet: (node, pool)."""
    name, pool = f"pool-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:8]
    cluster.core.create_node(node_manifest(name, profile("cce")))
    yield name, pool
    cluster.core.delete_node(name)


def test_the_seed_runs_trainers_first_then_the_launcher_and_tells_the_story(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool_node: tuple[str, str]
) -> None:
    node, pool = pool_node
    doc = seed_variant(
        NAME,
        pin=set_path("spec.replicaSpecs.trainer.template.spec.nodeSelector", {"test.aitj.dev/pool": pool}),
    )
    create_job(cluster, namespace, doc)

    trainers = wait_for(
        lambda: (
            len(job_pods(cluster, namespace, NAME, "trainer")) == 3
            and job_pods(cluster, namespace, NAME, "trainer")
        ),
        30,
        "three trainer pods",
    )
    names = [p.metadata.name for p in trainers]
    for index, pod_name in enumerate(names):
        assert re.fullmatch(rf"{NAME}-trainer-[bcdfghjklmnpqrstvwxz2456789]{{5}}-{index}", pod_name)
    job = wait_for(
        lambda: (
            "Pending" in condition_types(get_job(cluster, namespace, NAME))
            and get_job(cluster, namespace, NAME)
        ),
        30,
        "a Pending condition",
    )
    pending = conditions(job)[-1]
    assert (pending["type"], pending["reason"]) == ("Pending", "TrainingJobPending")
    # The seed's message; once the scheduler has tried, it goes on with why it cannot place them.
    assert pending["message"].startswith("all pods are waiting for scheduling"), pending
    # The trainers cannot be scheduled: no launcher yet (the gate), checked twice over a pass.
    assert job_pods(cluster, namespace, NAME, "launcher") == []

    cluster.core.patch_node(node, {"metadata": {"labels": {"test.aitj.dev/pool": pool}}})
    launcher = wait_for(lambda: job_pods(cluster, namespace, NAME, "launcher"), 30, "the launcher pod")[0]
    trainers = job_pods(cluster, namespace, NAME, "trainer")
    assert len(running(trainers)) == 3
    started = [p.status.start_time for p in trainers]
    assert launcher.metadata.creation_timestamp >= max(started)
    assert re.fullmatch(rf"{NAME}-launcher-[a-z0-9]{{5}}-0", launcher.metadata.name)

    job = wait_phase(cluster, namespace, NAME, "Running")
    history = conditions(job)
    assert history[0]["type"] == "Pending"
    assert history[-1] == {
        **history[-1],
        "type": "Running",
        "reason": "TrainingJobRunning",
        "message": "all pods are running",
        "status": "True",
    }
    assert all(c["status"] == "False" for c in history[:-1])
    assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 0}

    table = cluster.kubectl("get", "aitj", NAME, "-n", namespace).stdout
    header, row = table.splitlines()[:2]
    assert header.split()[:4] == ["NAME", "PHASE", "TRAINERS", "DESIRED"]
    assert row.split()[:4] == [NAME, "Running", "3", "3"]

    # The operator names itself: what it writes is managed by "aitj-operator" (kubectl get -o
    # yaml --show-managed-fields), not by the generated client's "OpenAPI-Generator".
    for pod in [launcher, *trainers]:
        writers = {f.manager for f in pod.metadata.managed_fields if f.operation == "Update"}
        assert "aitj-operator" in writers and "OpenAPI-Generator" not in writers, (pod.metadata.name, writers)
    status_writers = {
        f["manager"] for f in job["metadata"]["managedFields"] if f.get("subresource") == "status"
    }
    assert status_writers == {"aitj-operator"}, job["metadata"]["managedFields"]


def test_every_container_gets_the_job_environment_and_pods_their_own_dns_names(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    launcher = job_pods(cluster, namespace, NAME, "launcher")[0]
    init_env = {e.name: e.value for e in launcher.spec.init_containers[-1].env or []}
    assert init_env["TRAININGJOB_NAME"] == NAME
    assert init_env["TRAININGJOB_NAMESPACE"] == namespace
    assert launcher.spec.restart_policy == "Never"
    assert launcher.spec.scheduler_name == "volcano"
    assert launcher.spec.subdomain == naming.service_name(NAME)
    service = cluster.core.read_namespaced_service(naming.service_name(NAME), namespace)
    assert service.spec.cluster_ip == "None"
    for trainer in job_pods(cluster, namespace, NAME, "trainer"):
        env = {e.name: e.value for e in trainer.spec.containers[0].env}
        assert env["TRAININGJOB_REPLICA_NAME"] == "trainer"
        assert env["TRAININGJOB_REPLICA_INDEX"] == trainer.metadata.labels[api.LABEL_INDEX]
        assert env["TRAININGJOB_REPLICA_RESTARTCOUNT"] == "0"
        assert trainer.spec.hostname == trainer.metadata.name


def test_the_launcher_exiting_zero_makes_the_job_succeed(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    launcher = job_pods(cluster, namespace, NAME, "launcher")[0]
    faults.pod_exit(cluster.api, namespace, launcher.metadata.name, 0)
    job = wait_phase(cluster, namespace, NAME, "Succeeded")
    assert conditions(job)[-1]["type"] == "Succeeded"
    assert job["status"].get("completionTime")
    # The seed's cleanPodPolicy is None: every pod stays.
    assert len(live(job_pods(cluster, namespace, NAME))) == 4


def test_the_launcher_exiting_with_a_code_no_rule_covers_fails_the_job_naming_pod_and_code(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    launcher = job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name
    faults.pod_exit(cluster.api, namespace, launcher, 1)
    job = wait_phase(cluster, namespace, NAME, "Failed")
    last = conditions(job)[-1]
    assert last["type"] == "Failed"
    assert launcher in last["message"]
    assert re.search(r"\b1\b", last["message"]), last["message"]
    # The Event is the pass's last step (after the finalizers are released): wait for it.
    wait_for(
        lambda: any(
            e.type == "Warning" and e.reason == last["reason"] and launcher in (e.message or "")
            for e in events_for(cluster, namespace, NAME)
        ),
        10,
        f"a Warning Event {last['reason']} naming {launcher}",
    )


@pytest.mark.parametrize(
    ("policy", "kept"),
    [
        pytest.param("All", set(), id="All deletes every pod and the service"),
        pytest.param("Running", {"launcher"}, id="Running deletes only the pods still running"),
        pytest.param("None", {"launcher", "trainer"}, id="None keeps every pod"),
    ],
)
def test_clean_pod_policy_leaves_exactly_what_it_promises(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, policy: str, kept: set[str]
) -> None:
    # Trainers run on (sshd); the launcher finishes. Job completePolicy Any + launcher All -> Succeeded.
    create_job(cluster, namespace, seed_variant(NAME, clean=set_path("spec.cleanPodPolicy", policy)))
    wait_phase(cluster, namespace, NAME, "Running")

    def services() -> list[str]:
        return [s.metadata.name for s in cluster.core.list_namespaced_service(namespace).items]

    assert services() == [naming.service_name(NAME)]  # there is a service for the policy to delete
    faults.pod_exit(
        cluster.api, namespace, job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name, 0
    )
    wait_phase(cluster, namespace, NAME, "Succeeded")

    def replicas_left() -> set[str]:
        return {p.metadata.labels[api.LABEL_REPLICA] for p in job_pods(cluster, namespace, NAME)}

    wait_for(lambda: replicas_left() == kept, 30, f"pods of {sorted(kept)} only")
    if policy == "All":
        wait_for(lambda: services() == [], 30, "the service deleted")
    else:
        assert services() == [naming.service_name(NAME)]
    assert replicas_left() == kept  # and it stays so on later passes


def test_deleting_a_job_leaves_nothing_behind(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    # No finalizer on the job: it can be deleted even while the operator is down.
    assert get_job(cluster, namespace, NAME)["metadata"].get("finalizers") in (None, [])

    def leftovers() -> list[str]:
        left = [p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items]
        left += [s.metadata.name for s in cluster.core.list_namespaced_service(namespace).items]
        left += [
            s.metadata.name
            for s in cluster.core.list_namespaced_secret(namespace).items
            if s.metadata.name.startswith(NAME)
        ]
        left += [
            c.metadata.name
            for c in cluster.core.list_namespaced_config_map(namespace).items
            if c.metadata.name.startswith(NAME)
        ]
        return left

    # What the job made is there to be left behind: its service, ssh secret and host list.
    made = {naming.service_name(NAME), naming.ssh_secret_name(NAME), naming.discovery_configmap_name(NAME)}
    assert made <= set(leftovers())
    delete_job(cluster, namespace, NAME)
    wait_for(lambda: leftovers() == [], 60, "every object of the job gone", interval=0.5)
    restarts = [
        e.message for e in events_for(cluster, namespace, NAME) if e.reason == "TrainingJobRestarting"
    ]
    assert restarts == [], "pods removed with their job were taken for lost ones"


def test_discover_hosts_prints_exactly_the_running_trainers(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, tmp_path: Path
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    trainers = running(job_pods(cluster, namespace, NAME, "trainer"))
    want = sorted(f"{naming.pod_host(NAME, p.metadata.name)}:1" for p in trainers)

    def printed() -> list[str]:
        cm = cluster.core.read_namespaced_config_map(naming.discovery_configmap_name(NAME), namespace)
        for key, value in cm.data.items():
            (tmp_path / key).write_text(value)
        out = subprocess.run(
            ["/bin/sh", str(tmp_path / "discover_hosts.sh")], capture_output=True, text=True, check=True
        ).stdout
        return sorted(out.split())

    assert (
        wait_for(lambda: printed() == want and printed(), 30, "the host list of the running trainers") == want
    )


def test_an_operator_killed_while_creating_pods_ends_with_one_pod_per_index(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(NAME, wide=set_path("spec.replicaSpecs.trainer.replicas", 5))
    create_job(cluster, namespace, doc)
    # Kill it as soon as the first pod exists, in the middle of the pass creating the others.
    wait_for(lambda: job_pods(cluster, namespace, NAME), 30, "the first pod", interval=0.01)
    live_operator.kill()
    live_operator.start()
    wait_phase(cluster, namespace, NAME, "Running")
    pods = live(job_pods(cluster, namespace, NAME))
    indices = sorted(
        (p.metadata.labels[api.LABEL_REPLICA], int(p.metadata.labels[api.LABEL_INDEX])) for p in pods
    )
    assert indices == [("launcher", 0)] + [("trainer", i) for i in range(5)]
    assert get_job(cluster, namespace, NAME)["status"]["RestartCount"] == {"launcher": 0, "trainer": 0}


def test_a_job_deleted_in_the_foreground_is_not_replanned_and_its_pods_go(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    before = {p.metadata.name for p in job_pods(cluster, namespace, NAME)}
    from kubernetes import client

    client.CustomObjectsApi(cluster.api).delete_namespaced_custom_object(
        api.GROUP, api.VERSION, namespace, api.PLURAL, NAME, propagation_policy="Foreground"
    )

    def state() -> tuple[set[str], bool]:
        names = {p.metadata.name for p in job_pods(cluster, namespace, NAME)}
        listed: Any = client.CustomObjectsApi(cluster.api).list_namespaced_custom_object(
            api.GROUP, api.VERSION, namespace, api.PLURAL
        )
        jobs = listed["items"]
        return names, bool(jobs)

    wait_for(lambda: state() == (set(), False), 60, "the pods and then the job gone", interval=0.1)
    created = {e.message for e in events_for(cluster, namespace, NAME) if e.reason == "TrainingJobRestarting"}
    assert created == set(), "garbage-collected pods were taken for lost ones"
    assert before  # there were pods to lose


@pytest.mark.parametrize("case", MODEL_ONLY, ids=lambda c: c.id)
def test_a_job_admission_cannot_refuse_fails_at_once_with_the_field_and_creates_nothing(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, case: Case
) -> None:
    doc = case.manifest(name=NAME)
    doc["metadata"].pop("namespace", None)
    create_job(cluster, namespace, doc)
    job = wait_phase(cluster, namespace, NAME, "Failed")
    last = conditions(job)[-1]
    assert last["reason"] == "InvalidSpec"
    assert case.path in last["message"]
    assert case.fragment in last["message"]
    assert job_pods(cluster, namespace, NAME) == []
    warnings = wait_for(
        lambda: [e for e in events_for(cluster, namespace, NAME) if e.reason == "InvalidSpec"],
        30,
        "an InvalidSpec event",
    )
    assert case.path in warnings[0].message


def test_deleting_the_namespace_of_a_running_job_completes(
    cluster: KubeCluster, live_operator: OperatorProcess
) -> None:
    from kubernetes.client.exceptions import ApiException

    ns = f"gone-{uuid.uuid4().hex[:6]}"
    cluster.core.create_namespace({"metadata": {"name": ns}})
    wait_for(
        lambda: any(
            sa.metadata.name == "default" for sa in cluster.core.list_namespaced_service_account(ns).items
        ),
        30,
        "the default service account",
    )
    create_job(cluster, ns, seed_variant(NAME))
    wait_phase(cluster, ns, NAME, "Running")
    cluster.core.delete_namespace(ns)

    def gone() -> bool:
        try:
            cluster.core.read_namespace(ns)
        except ApiException as e:
            return bool(e.status == 404)
        return False

    # Namespace deletion removes pods first; the operator must not hold them with its finalizer.
    wait_for(gone, 90, "the namespace deleted", interval=0.5)
