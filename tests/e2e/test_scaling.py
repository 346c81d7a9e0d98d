"""Elastic scaling on the real control plane (issue 6): replicas edits, `kubectl scale` and the
`aitj scaleout` / `aitj scalein` commands, with the discovery host list watched against the pods."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from aitj.core import api, naming
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.e2e.pools import Pool
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
NAME = "scale-job"
SEED_SCALING = (
    "trainingJob {ns}/{job} {op} Operation {op} scale num {n} scale pods [{pods}], "
    "replicas name trainer job version {v}"
)


def trainers(cluster: KubeCluster, namespace: str) -> dict[int, Any]:
    """trainers: the live trainer pods by index."""
    return {
        int(p.metadata.labels[api.LABEL_INDEX]): p
        for p in live(job_pods(cluster, namespace, NAME, "trainer"))
    }


def hosts(cluster: KubeCluster, namespace: str) -> list[str]:
    """hosts: the pods in the discovery host list (the ConfigMap's ``hosts`` file), in order."""
    cm = cluster.core.read_namespaced_config_map(naming.discovery_configmap_name(NAME), namespace)
    return [line.split(".", 1)[0] for line in (cm.data or {}).get("hosts", "").splitlines()]


def start(cluster: KubeCluster, namespace: str, doc: Doc, count: int) -> dict[int, Any]:
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, NAME, "Running", timeout=60)
    wait_for(lambda: len(hosts(cluster, namespace)) == count, 30, f"{count} hosts in the list")
    return trainers(cluster, namespace)


def replicas(n: int) -> Callable[[Doc], None]:
    return set_path("spec.replicaSpecs.trainer.replicas", n)


def scale_to(cluster: KubeCluster, namespace: str, n: int) -> None:
    patch_job(cluster, namespace, NAME, {"spec": {"replicaSpecs": {"trainer": {"replicas": n}}}})


def history(cluster: KubeCluster, namespace: str) -> list[dict[str, Any]]:
    return list(get_job(cluster, namespace, NAME).get("status", {}).get("scaleHistory") or [])


def aitj(cluster: KubeCluster, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """aitj runs the command line as a user would, against the test cluster."""
    return subprocess.run(
        [sys.executable, "-m", "aitj", *args, f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )


# ---------------------------------------------------------------------------------------------


def test_the_seeds_scale_out_adds_trainer_3_to_the_host_list_only_once_it_runs(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    node = pool.add_ready()
    before = start(cluster, namespace, seed_variant(NAME, pin=pool.pin()), 3)
    pool.label(node, on=False)  # the new trainer finds no node: it stays Pending
    scale_to(cluster, namespace, 4)
    new = wait_for(lambda: trainers(cluster, namespace).get(3), 30, "trainer 3 created")
    name = new.metadata.name
    assert name.startswith(f"{NAME}-trainer-") and name.endswith("-3")
    job = wait_phase(cluster, namespace, NAME, "Scaling")
    scaling = conditions(job)[-1]
    assert (scaling["reason"], scaling["message"]) == (
        "TrainingJobScaling",
        SEED_SCALING.format(ns=namespace, job=NAME, op="scaleout", n=1, pods=name, v=1),
    )
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:  # Pending for a while, and never in the list meanwhile
        listed = hosts(cluster, namespace)
        pod = cluster.core.read_namespaced_pod(name, namespace)
        assert pod.status.phase == "Pending" and name not in listed
        time.sleep(0.2)
    assert listed == [before[i].metadata.name for i in range(3)]

    pool.add_ready()  # room for it
    order: list[tuple[bool, str]] = []

    def joined() -> bool:
        listed = hosts(cluster, namespace)  # first the list, then the pod: a pod never un-runs
        pod = trainers(cluster, namespace).get(3)
        if pod is None:
            return False
        order.append((pod.metadata.name in listed, pod.status.phase))
        return pod.metadata.name in listed

    wait_for(joined, 60, "trainer 3 in the host list", interval=0.05)
    assert all(phase == "Running" for listed, phase in order if listed)  # never listed before it ran
    # The first sample may already see it Running (a ready node takes it within a second), but
    # never already listed: it joins the list after it runs.
    assert order[0][0] is False
    name = trainers(cluster, namespace)[3].metadata.name
    job = wait_phase(cluster, namespace, NAME, "Running")
    last = conditions(job)[-2:]
    assert [(c["type"], c["status"]) for c in last] == [("Scaling", "False"), ("Running", "True")]
    assert last[-1]["message"] == "all pods are running"
    assert hosts(cluster, namespace) == [*(before[i].metadata.name for i in range(3)), name]
    assert job["status"]["currentReplicas"]["trainer"] == 4 and "scaling" not in job["status"]
    assert [(h["operation"], h["reason"], h["from"], h["to"]) for h in history(cluster, namespace)] == [
        ("scaleout", "ScaleSucceeded", 3, 4)
    ]
    wait_for(
        lambda: (
            {e.reason for e in events_for(cluster, namespace, NAME)}
            >= {"TrainingJobScaling", "TrainingJobScaled"}
        ),
        30,
        "the scale events",
    )
    kinds = {e.reason: e.type for e in events_for(cluster, namespace, NAME)}
    assert (kinds["TrainingJobScaling"], kinds["TrainingJobScaled"]) == ("Normal", "Normal")


def test_scale_in_4_to_2_drops_indices_3_and_2_from_the_host_list_before_deleting_them(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(
        NAME, four=replicas(4), grace=set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 3)
    )
    before = start(cluster, namespace, doc, 4)
    leaving = {before[2].metadata.name, before[3].metadata.name}
    scale_to(cluster, namespace, 2)
    t0 = time.monotonic()
    left_list = deleted = None
    while deleted is None and time.monotonic() - t0 < 60:
        listed = set(hosts(cluster, namespace))
        pods = {p.metadata.name: p for p in job_pods(cluster, namespace, NAME, "trainer")}
        now = time.monotonic() - t0
        if left_list is None and not (leaving & listed):
            left_list = now
        if any(n not in pods or pods[n].metadata.deletion_timestamp for n in leaving):
            deleted = now
            assert left_list is not None, "a leaving pod was deleted while still in the host list"
        time.sleep(0.05)
    assert left_list is not None and deleted is not None
    assert deleted - left_list >= 2  # the grace period (3 s) between the two
    wait_for(lambda: sorted(trainers(cluster, namespace)) == [0, 1], 60, "two trainers left")
    job = wait_phase(cluster, namespace, NAME, "Running")
    scaling = [c for c in conditions(job) if c["type"] == "Scaling"][-1]
    leaving_pods = " ".join(sorted(leaving, key=lambda n: n[-1]))
    assert scaling["message"] == SEED_SCALING.format(
        ns=namespace, job=NAME, op="scalein", n=2, pods=leaving_pods, v=1
    )
    assert hosts(cluster, namespace) == [before[0].metadata.name, before[1].metadata.name]
    assert job["status"]["trainerReplicas"] == 2


@pytest.mark.parametrize(
    ("change", "edit", "words"),
    [
        pytest.param(
            {}, 6, "replicas must not be greater than maxReplicas", id="above maxReplicas is refused"
        ),
        pytest.param(
            {"low": set_path("spec.replicaSpecs.trainer.minReplicas", 2)},
            1,
            "replicas must not be less than minReplicas",
            id="below minReplicas is refused",
        ),
        pytest.param(
            {"off": set_path("spec.faultTolerant", False)},
            4,
            "replicas cannot change after creation unless spec.faultTolerant is true",
            id="without faultTolerant any edit is refused with a clear message",
        ),
    ],
)
def test_edits_outside_the_rules_are_refused_at_admission_by_every_path(
    cluster: KubeCluster, crd: None, namespace: str, change: dict[str, Any], edit: int, words: str
) -> None:
    create_job(cluster, namespace, seed_variant(NAME, **change))
    patch = {"spec": {"replicaSpecs": {"trainer": {"replicas": edit}}}}
    edited = cluster.kubectl(
        "patch", "aitj", NAME, "-n", namespace, "--type=merge", "-p", json.dumps(patch), check=False
    )
    assert edited.returncode != 0 and words in edited.stderr
    scaled = cluster.kubectl("scale", f"aitj/{NAME}", f"--replicas={edit}", "-n", namespace, check=False)
    assert scaled.returncode != 0 and words in scaled.stderr
    verb, count = ("scaleout", edit - 3) if edit > 3 else ("scalein", 3 - edit)
    proc = aitj(cluster, verb, NAME, "-n", namespace, f"--count={count}")
    assert proc.returncode == 1 and words in proc.stderr, proc.stderr
    assert get_job(cluster, namespace, NAME)["spec"]["replicaSpecs"]["trainer"]["replicas"] == 3


def test_a_scale_out_beyond_the_clusters_capacity_is_rolled_back_after_scale_timeout(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    pool.add_ready()  # the trainers may use this node only; each takes half of its 8 cGPUs
    cgpu = {
        "baidu.com/v100_32g_cgpu": "4",
        "baidu.com/v100_32g_cgpu_core": "20",
        "baidu.com/v100_32g_cgpu_memory": "4",
    }
    doc = seed_variant(
        NAME,
        pin=pool.pin(),
        two=replicas(2),
        big=set_path(
            "spec.replicaSpecs.trainer.template.spec.containers.0.resources",
            {"limits": cgpu, "requests": cgpu},
        ),
        timeout=set_path("spec.replicaSpecs.trainer.scaleTimeout", 5),
    )
    before = start(cluster, namespace, doc, 2)
    proc = aitj(cluster, "scaleout", NAME, "-n", namespace, "--count=1")
    assert proc.returncode == 1, proc.stderr
    assert "rolled back" in proc.stderr and "were not Running within scaleTimeout 5s" in proc.stderr
    wait_for(
        lambda: get_job(cluster, namespace, NAME)["spec"]["replicaSpecs"]["trainer"]["replicas"] == 2,
        30,
        "replicas set back to 2",
    )
    wait_for(lambda: sorted(trainers(cluster, namespace)) == [0, 1], 30, "the new trainer removed")
    job = wait_phase(cluster, namespace, NAME, "Running")
    assert {i: p.metadata.name for i, p in trainers(cluster, namespace).items()} == {
        i: p.metadata.name for i, p in before.items()
    }
    rollback = [c for c in conditions(job) if c["type"] == "Scaling"][-1]
    assert rollback["reason"] == "TrainingJobScaleRollback" and "scaleTimeout 5s" in rollback["message"]
    last = history(cluster, namespace)[-1]
    assert (last["operation"], last["reason"], last["from"], last["to"]) == ("rollback", "ScaleTimeout", 2, 3)
    warnings = wait_for(
        lambda: [e for e in events_for(cluster, namespace, NAME) if e.reason == "TrainingJobScaleRollback"],
        30,
        "the rollback event",
    )
    assert warnings[0].type == "Warning" and "scaleTimeout 5s" in warnings[0].message
    assert hosts(cluster, namespace) == [before[0].metadata.name, before[1].metadata.name]


def test_kubectl_scale_drives_the_same_path_and_the_scale_subresource_reports_the_trainers(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace, seed_variant(NAME), 3)
    cluster.kubectl("scale", f"aitj/{NAME}", "--replicas=4", "-n", namespace)
    wait_for(lambda: len(hosts(cluster, namespace)) == 4, 60, "four hosts")
    wait_phase(cluster, namespace, NAME, "Running")
    assert [h["operation"] for h in history(cluster, namespace)] == ["scaleout"]
    raw = cluster.kubectl(
        "get", "--raw", f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.PLURAL}/{NAME}/scale"
    ).stdout
    scale = json.loads(raw)
    assert scale["spec"]["replicas"] == 4 and scale["status"]["replicas"] == 4
    selected = cluster.core.list_namespaced_pod(namespace, label_selector=scale["status"]["selector"]).items
    assert sorted(p.metadata.name for p in selected) == sorted(
        p.metadata.name for p in trainers(cluster, namespace).values()
    )


def test_the_cli_scales_out_and_in_with_progress_and_honest_exit_codes(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(NAME, grace=set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 2))
    before = start(cluster, namespace, doc, 3)
    out = aitj(cluster, "scaleout", NAME, "-n", namespace, "--count=2", "--timeout=2m")
    assert out.returncode == 0, out.stderr
    assert "scaleout from 3 to 5" in out.stdout and "running and in the host list" in out.stdout
    assert f"{namespace}/{NAME}: trainer 3 -> 5 (scaleTimeout 120s)" in out.stderr
    assert get_job(cluster, namespace, NAME)["spec"]["replicaSpecs"]["trainer"]["scaleTimeout"] == 120
    assert len(hosts(cluster, namespace)) == 5

    victim = before[1].metadata.name
    out = aitj(cluster, "scalein", NAME, "-n", namespace, f"--pods={victim}")
    assert out.returncode == 0, out.stderr
    assert "scalein from 5 to 4" in out.stdout and victim in out.stdout
    assert "left the host list" in out.stderr  # progress while it drains
    wait_for(lambda: sorted(trainers(cluster, namespace)) == [0, 2, 3, 4], 30, "index 1 gone")
    status = get_job(cluster, namespace, NAME)["status"]
    assert status["vacantIndices"] == {"trainer": [1]} and victim not in hosts(cluster, namespace)

    out = aitj(cluster, "scalein", NAME, "-n", namespace, "--count=1")
    assert out.returncode == 0 and "scalein from 4 to 3" in out.stdout, out.stderr
    wait_for(lambda: sorted(trainers(cluster, namespace)) == [0, 2, 3], 30, "the highest index gone")

    wrong = aitj(cluster, "scalein", NAME, "-n", namespace, "--pods=no-such-pod")
    assert wrong.returncode == 1 and "no-such-pod is not a pod of replica trainer" in wrong.stderr
    missing = aitj(cluster, "scaleout", "no-such-job", "-n", namespace, "--count=1")
    said = f"no AITrainingJob 'no-such-job' in namespace '{namespace}'"
    assert missing.returncode == 1 and said in missing.stderr


def test_a_scale_out_during_a_restart_ends_with_every_index_running_and_one_restart(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace, seed_variant(NAME), 3)
    faults.force_delete(cluster.api, namespace, before[1].metadata.name)
    scale_to(cluster, namespace, 4)

    def settled() -> bool:
        pods = running(job_pods(cluster, namespace, NAME, "trainer"))
        return len(pods) == 4 and len(job_pods(cluster, namespace, NAME, "trainer")) == 4

    wait_for(settled, 60, "four trainers running, nothing else")
    job = wait_phase(cluster, namespace, NAME, "Running")
    wait_for(lambda: len(hosts(cluster, namespace)) == 4, 30, "four hosts")
    now = trainers(cluster, namespace)
    assert sorted(now) == [0, 1, 2, 3] and now[1].metadata.name != before[1].metadata.name
    assert job["status"]["RestartCount"]["trainer"] == 1
    assert [h["operation"] for h in history(cluster, namespace)] == ["scaleout"]
