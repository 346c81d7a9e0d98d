"""``aitj explain`` on the real control plane: a fault caused while the operator is stopped is
explained (the pod, the cause, the rule or why none fires) and nothing in the cluster changes."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.invalid_manifests import MODEL_ONLY
from tests.jobs import conditions, create_job, get_job, job_pods, seed_variant, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "explain-job"


def aitj_explain(cluster: KubeCluster, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "aitj",
            "explain",
            *args,
            "-n",
            namespace,
            f"--kubeconfig={cluster.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def snapshot(cluster: KubeCluster, namespace: str) -> dict[str, Any]:
    """snapshot: the resourceVersion of the job and of each pod, and the Events in the namespace."""
    pods = cluster.core.list_namespaced_pod(namespace).items
    events = cluster.core.list_namespaced_event(namespace).items
    return {
        "job": get_job(cluster, namespace, NAME)["metadata"]["resourceVersion"],
        "pods": {p.metadata.name: p.metadata.resource_version for p in pods},
        "events": sorted(e.metadata.name for e in events),
    }


def settled(cluster: KubeCluster, namespace: str, quiet: float = 3.0) -> dict[str, Any]:
    """settled: a snapshot that stayed the same for ``quiet`` seconds (the simulated kubelet and
    kube-controller-manager have finished reacting to the fault)."""
    last, since = snapshot(cluster, namespace), time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = snapshot(cluster, namespace)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    raise AssertionError(f"the cluster did not settle: {last}")


@pytest.fixture
def stopped_operator(live_operator: OperatorProcess) -> Iterator[OperatorProcess]:
    """stopped_operator: the session operator, to be killed by the test and always started
    again afterwards (other tests share it)."""
    try:
        yield live_operator
    finally:
        if live_operator.proc is None:
            live_operator.start()


@contextlib.contextmanager
def not_ready(cluster: KubeCluster, node: str) -> Iterator[None]:
    """not_ready: the node reports NotReady, as a kubelet whose runtime broke keeps doing, until
    the block ends; then it is handed back to the simulated kubelet, Ready.

    The simulated kubelet's own status heartbeats would write Ready=True back within a second,
    so it is taken off the node (``node_silent``) and the NotReady status is posted here
    instead, often enough that kube-controller-manager never finds it stale (Unknown)."""
    api = cluster.new_api()
    stop = threading.Event()

    def post() -> None:
        while not stop.wait(2.0):
            faults.node_not_ready(api, node)

    faults.node_silent(cluster.api, node)
    faults.node_not_ready(cluster.api, node)
    poster = threading.Thread(target=post, daemon=True)
    poster.start()
    try:
        wait_for(lambda: ready(cluster, node) == "False", 10, f"node {node} NotReady")
        yield
    finally:
        stop.set()
        poster.join()
        faults.node_revive(cluster.api, node)


def ready(cluster: KubeCluster, node: str) -> str:
    conditions = cluster.core.read_node(node).status.conditions or []
    return next((c.status for c in conditions if c.type == "Ready"), "Unknown")


def start(cluster: KubeCluster, namespace: str) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")


def pod_named(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in data["pods"] if p["name"] == name)


def test_a_launcher_exit_code_no_rule_names_is_explained_without_touching_the_cluster(
    cluster: KubeCluster, namespace: str, stopped_operator: OperatorProcess
) -> None:
    start(cluster, namespace)
    trainers = [p.metadata.name for p in job_pods(cluster, namespace, NAME, "trainer")]
    launcher = job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name
    stopped_operator.kill()
    faults.pod_exit(cluster.api, namespace, launcher, 1)
    wait_for(
        lambda: cluster.core.read_namespaced_pod(launcher, namespace).status.phase == "Failed",
        30,
        "the launcher Failed",
    )
    before = settled(cluster, namespace)

    text = aitj_explain(cluster, namespace, NAME)
    assert text.returncode == 0, text.stderr
    assert "note:" not in text.stderr  # the job's objects were read, as the operator's cache holds them
    out = text.stdout
    assert "(missing)" not in out  # all there: the operator would create none of them
    assert f"pod {launcher} (launcher 0, generation 0)" in out
    assert "exit code 1 (container aitj-0)" in out
    assert "rule 1 exitCodes 129,101 (scope Pod): no match: does not name exit code 1" in out
    assert (
        "=> fails (NoMatchingRule): exitCode 1 matches no faultTolerantPolicy rule of replica launcher" in out
    )
    assert "failPolicy Any of replica launcher: the job fails in the next pass (TrainingJobFailed)" in out
    assert "the job ends: Failed (TrainingJobFailed)" in out

    as_json = aitj_explain(cluster, namespace, NAME, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["phase"] == "Running"
    entry = pod_named(data, launcher)
    assert (entry["verdict"], entry["failure"], entry["exit_code"]) == ("fails", "exitCode", 1)
    assert [pod_named(data, t)["verdict"] for t in trainers] == ["healthy"] * 3

    one = aitj_explain(cluster, namespace, NAME, launcher, "-o", "json")
    assert one.returncode == 0, one.stderr
    assert [p["name"] for p in json.loads(one.stdout)["pods"]] == [launcher]

    missing_pod = aitj_explain(cluster, namespace, NAME, "no-such-pod")
    assert missing_pod.returncode == 1
    assert "pod no-such-pod not found" in missing_pod.stderr and launcher in missing_pod.stderr
    missing_job = aitj_explain(cluster, namespace, "no-such-job")
    assert missing_job.returncode == 1
    assert f"no AITrainingJob 'no-such-job' in namespace {namespace!r}" in missing_job.stderr

    assert snapshot(cluster, namespace) == before  # a dry run: nothing written

    stopped_operator.start()
    job = wait_phase(cluster, namespace, NAME, "Failed")  # what explain said the next pass does
    assert "exitCode 1 matches no faultTolerantPolicy rule" in conditions(job)[-1]["message"]


def test_a_trainer_on_a_not_ready_node_is_explained_with_the_rule_that_fires(
    cluster: KubeCluster, namespace: str, stopped_operator: OperatorProcess
) -> None:
    start(cluster, namespace)
    trainer = job_pods(cluster, namespace, NAME, "trainer")[0]
    name, node = trainer.metadata.name, trainer.spec.node_name
    stopped_operator.kill()
    with not_ready(cluster, node):
        before = settled(cluster, namespace)
        text = aitj_explain(cluster, namespace, NAME, name)
        assert text.returncode == 0, text.stderr
        out = text.stdout
        assert f"pod {name} (trainer 0, generation 0)" in out
        assert f"node {node} (Ready=False)" in out
        assert f"failure: nodeNotReady: node {node} is not ready (Ready=False)" in out
        assert (
            "rule 1 exceptionalEvent nodeNotReady,PodForceDeleted (scope Pod): fires: names nodeNotReady"
            in out
        )
        assert "=> restart: rule exceptionalEvent nodeNotReady,PodForceDeleted restarts scope Pod" in out
        assert "RestartCount.trainer after the next pass: 1 (restartLimit 100)" in out
        assert snapshot(cluster, namespace) == before
        assert int(get_job(cluster, namespace, NAME)["status"]["RestartCount"]["trainer"]) == 0
    stopped_operator.start()
    wait_phase(cluster, namespace, NAME, "Running", timeout=90)


def test_an_invalid_spec_shows_its_field_errors(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    case = next(c for c in MODEL_ONLY if c.fragment == "[unknown volume]")
    doc = case.manifest(NAME)
    doc["metadata"].pop("namespace", None)
    create_job(cluster, namespace, doc)  # the apiserver does not check volume mounts of templates
    result = aitj_explain(cluster, namespace, NAME)
    assert result.returncode == 1
    assert "the spec is invalid" in result.stdout
    assert f"{case.path}: [unknown volume]" in result.stdout
    as_json = aitj_explain(cluster, namespace, NAME, "-o", "json")
    assert as_json.returncode == 1
    assert [e["path"] for e in json.loads(as_json.stdout)["invalid"]] == [case.path]
    assert job_pods(cluster, namespace, NAME) == []
