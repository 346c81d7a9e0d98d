"""``aitj logs`` on the real control plane: pod logs through the apiserver's pod log endpoint
(kwok serves every container's log from one file of the cluster's state folder), each line
prefixed with the pod's replica and index; ``--tail``, ``--replica``/``--index`` and ``-f``."""

from __future__ import annotations

import re
import select
import subprocess
import sys

import pytest

from aitj.devcluster.config import pod_log_file
from tests.clusters import KubeCluster
from tests.e2e.cli import aitj, one_error_line
from tests.jobs import create_job, seed_variant, wait_phase
from tests.operator_process import OperatorProcess

pytestmark = pytest.mark.e2e
NAME = "cli-logs"


@pytest.fixture
def running_job(cluster: KubeCluster, namespace: str, live_operator: OperatorProcess) -> str:
    if cluster.local is None:
        pytest.skip("the simulated pod logs are the local control plane's")
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    return namespace


def test_logs_of_every_pod_are_prefixed_with_replica_and_index(
    cluster: KubeCluster, running_job: str
) -> None:
    out = aitj(cluster.kubeconfig, "logs", NAME, "-n", running_job)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for who in ("[launcher 0] ", "[trainer 0] ", "[trainer 1] ", "[trainer 2] "):
        assert f"{who}simulated training log line 1" in lines, lines
    assert len(lines) == 4 * 3

    tail = aitj(
        cluster.kubeconfig,
        "logs",
        NAME,
        "-n",
        running_job,
        "--replica",
        "trainer",
        "--index",
        "1",
        "--tail",
        "1",
    )
    assert tail.stdout.splitlines() == ["[trainer 1] simulated training log line 3"], tail.stderr

    none = one_error_line(
        aitj(cluster.kubeconfig, "logs", NAME, "-n", running_job, "--replica", "trainer", "--index", "7")
    )
    assert none.startswith(f"error: job {running_job}/{NAME} has no pod replica trainer index 7 (its pods: ")


def test_follow_prints_new_lines_as_they_come(cluster: KubeCluster, running_job: str) -> None:
    assert cluster.local is not None
    command = [
        sys.executable,
        "-m",
        "aitj",
        "logs",
        NAME,
        "-n",
        running_job,
        "--replica",
        "launcher",
        "--tail",
        "0",
        "-f",
        f"--kubeconfig={cluster.kubeconfig}",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as follow:
        try:
            assert follow.stdout is not None
            # A line a second until one comes through: the stream opens once the command has
            # started and read the job, which takes a few seconds on a busy machine.
            for epoch in range(60):
                with pod_log_file(cluster.local.dir).open("a") as log:
                    log.write(f"2026-01-01T00:01:00.000000000Z stdout F epoch {epoch} loss 0.25\n")
                if select.select([follow.stdout], [], [], 1.0)[0]:
                    break
            line = follow.stdout.readline()
            assert re.fullmatch(r"\[launcher 0\] epoch [0-9]+ loss 0\.25\n", line), line
        finally:
            follow.terminate()
    assert follow.returncode is not None  # it stopped when told to
