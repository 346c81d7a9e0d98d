"""Node health signals on the real control plane (issue 15): a node the Node Problem Detector
reports KernelDeadlock=True on (the operator started with that condition), and a node an admin
taints out of service (no option needed), each lose their trainers to another node, as
nodeNotReady, and the replacements never go back to it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aitj.core import api
from aitj.core.nodesignals import OUT_OF_SERVICE_TAINT
from aitj.devcluster import faults
from tests.clusters import KubeCluster, free_port
from tests.e2e.pools import Pool
from tests.jobs import create_job, events_for, get_job, job_pods, running, seed_variant, set_path, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "ns-job"


@pytest.fixture(scope="module")
def told(
    cluster: KubeCluster,
    operator_kubeconfig: Path,
    operator: OperatorProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    """told: an operator started with ``--node-fault-condition KernelDeadlock=True``. The
    session operator is stopped meanwhile (two operators would both act) and started again
    afterwards."""
    operator.stop()
    folder = Path(tmp_path_factory.mktemp("told"))
    proc = OperatorProcess(
        operator_kubeconfig, folder, free_port(), ["--node-fault-condition", "KernelDeadlock=True"]
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()
        operator.start()


@pytest.fixture
def live_told(told: OperatorProcess, cluster: KubeCluster) -> Iterator[OperatorProcess]:
    """live_told: ``told``, checked alive before and after the test; its log is printed when
    the test fails."""
    told.assert_alive()
    mark = len(told.logs())
    yield told
    print(f"---- operator log during the test ----\n{told.logs()[mark:][-6000:]}")
    print(cluster.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout)
    told.assert_alive()


def kernel_deadlock(cluster: KubeCluster, node: str) -> None:
    message = "kernel: INFO: task docker:7 blocked for more than 120 seconds."
    faults.node_problem(cluster.api, node, "KernelDeadlock", "DockerHung", message)


def out_of_service(cluster: KubeCluster, node: str) -> None:
    taint = {"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}
    cluster.core.patch_node(node, {"spec": {"taints": [taint]}})


@pytest.mark.parametrize(
    ("fault", "signal"),
    [
        pytest.param(kernel_deadlock, "KernelDeadlock=True (DockerHung)", id="KernelDeadlock=True"),
        pytest.param(out_of_service, f"taint {OUT_OF_SERVICE_TAINT}:NoExecute", id="out-of-service taint"),
    ],
)
def test_a_node_showing_a_fault_signal_has_its_trainers_replaced_on_another_node(
    cluster: KubeCluster,
    namespace: str,
    live_told: OperatorProcess,
    pool: Pool,
    fault: Callable[[KubeCluster, str], None],
    signal: str,
) -> None:
    bad = pool.add()
    doc = seed_variant(NAME, pin=pool.pin(), two=set_path("spec.replicaSpecs.trainer.replicas", 2))
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, NAME, "Running")
    before = {p.metadata.name for p in job_pods(cluster, namespace, NAME, "trainer")}
    good = pool.add()
    signalled = time.monotonic()
    fault(cluster, bad)

    def replaced() -> list[Any] | None:
        pods = running(job_pods(cluster, namespace, NAME, "trainer"))
        ok = sorted(int(p.metadata.labels[api.LABEL_INDEX]) for p in pods) == [0, 1] and all(
            p.spec.node_name == good and p.metadata.name not in before for p in pods
        )
        return pods if ok else None

    after = wait_for(replaced, 60, "both trainers running again on the healthy node")
    print(f"{signal}: both trainers running on the healthy node {time.monotonic() - signalled:.1f} s later")
    for p in after:  # kept off the faulty node by name, whatever the scheduler would pick
        required = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        terms = required.node_selector_terms
        assert [(f.key, f.operator, f.values) for t in terms for f in t.match_fields] == [
            ("metadata.name", "NotIn", [bad])
        ]

    def restarts() -> int:
        return int(get_job(cluster, namespace, NAME)["status"]["RestartCount"]["trainer"])

    wait_for(lambda: restarts() == 2, 30, "two restarts counted")

    def told_in_events() -> set[str]:
        said = [e.message or "" for e in events_for(cluster, namespace, NAME)]
        said = [m for m in said if "nodeNotReady on pod" in m and signal in m]
        return {name for m in said for name in before if name in m}

    wait_for(lambda: told_in_events() == before, 30, f"a nodeNotReady event naming {signal} for each trainer")
    wait_phase(cluster, namespace, NAME, "Running")
