"""``aitj submit`` on the real control plane: the dry run's YAML applies with kubectl's strict
validation, a submitted job runs under the operator, and bad counts are refused in one line."""

from __future__ import annotations

import pytest

from tests.clusters import KubeCluster
from tests.e2e.cli import aitj, one_error_line
from tests.jobs import get_job, job_pods, wait_phase
from tests.operator_process import OperatorProcess

pytestmark = pytest.mark.e2e

FLAGS = (
    "--image",
    "registry.example/horovod:0.28.1",
    "--workers",
    "2",
    "--min-workers",
    "1",
    "--max-workers",
    "4",
    "--gpus",
    "1",
    "--cpu",
    "1",
    "--memory",
    "1Gi",
    "--retry-exit-codes",
    "129,101",
    "--scheduler-name",
    "volcano",
    "--command",
    "horovodrun -np 2 --host-discovery-script /etc/edl/discover_hosts.sh python train.py",
)


def test_the_dry_run_applies_with_strict_validation(cluster: KubeCluster, namespace: str, crd: None) -> None:
    dry = aitj(None, "submit", "--name", "dry", "-n", namespace, *FLAGS, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    applied = cluster.kubectl("apply", "--validate=strict", "-f", "-", input=dry.stdout, check=False)
    assert applied.returncode == 0, applied.stderr
    assert "aitrainingjob.kongming.cce.baiudbce.com/dry created" in applied.stdout
    assert get_job(cluster, namespace, "dry")["spec"]["replicaSpecs"]["trainer"]["maxReplicas"] == 4


def test_a_submitted_job_runs_under_the_operator(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    created = aitj(cluster.kubeconfig, "submit", "--name", "sub", "-n", namespace, *FLAGS)
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == f"aitrainingjob {namespace}/sub created"
    wait_phase(cluster, namespace, "sub", "Running")
    assert [
        p.metadata.labels["aitj.kongming.cce.baiudbce.com/replica-name"]
        for p in job_pods(cluster, namespace, "sub")
    ] == ["launcher", "trainer", "trainer"]
    again = one_error_line(aitj(cluster.kubeconfig, "submit", "--name", "sub", "-n", namespace, *FLAGS))
    assert again.startswith(f"error: creating AITrainingJob {namespace}/sub: ") and "already exists" in again


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        pytest.param(("--workers", "0"), "--workers 0 is out of range: 1 to 10000", id="no workers"),
        pytest.param(
            ("--workers", "5"),
            "--workers 5 must lie within --min-workers 1 and --max-workers 4",
            id="more workers than the maximum",
        ),
        pytest.param(("--name", "Bad_Name"), "must be a DNS-1035 label", id="a bad name"),
    ],
)
def test_bad_counts_and_names_are_refused_in_one_line_before_anything_is_sent(
    cluster: KubeCluster, namespace: str, changes: tuple[str, ...], words: str
) -> None:
    name = () if "--name" in changes else ("--name", "bad")
    line = one_error_line(aitj(cluster.kubeconfig, "submit", *name, "-n", namespace, *FLAGS, *changes))
    assert line.startswith("error: ") and words in line, line
