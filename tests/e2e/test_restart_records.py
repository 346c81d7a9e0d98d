"""Each restart is recorded exactly once on the real control plane (issue 11, item 3): a pass
that creates the replacement and then cannot write the status, with the operator SIGKILLed
before any pass could, still ends with one Event, one status.restarts entry and one count.

The status write is refused by a ValidatingAdmissionPolicy of the test's own (real admission,
no mock): the replacement is created, the status write fails, and stays failing until the
test removes the policy's binding."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from aitj.core import api
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.e2e import policies
from tests.jobs import create_job, events_for, get_job, job_pods, live, seed_variant, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "once-job"


def status_writable(cluster: KubeCluster, namespace: str) -> bool:
    """status_writable: a dry-run status patch of the job gets through admission."""
    proc = cluster.kubectl(
        "patch", api.PLURAL, NAME, "-n", namespace, "--subresource=status", "--type=merge",
        "--dry-run=server", "-p", '{"status": {}}', check=False,
    )  # fmt: skip
    return proc.returncode == 0


@pytest.fixture
def refused(cluster: KubeCluster, namespace: str) -> Iterator[str]:
    """refused: the name of the refusal (policy and binding), removed after the test."""
    name = f"aitj-once-{uuid.uuid4().hex[:6]}"
    yield name
    for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
        cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)


def by_index(cluster: KubeCluster, namespace: str) -> dict[int, str]:
    """by_index: the live trainer pods by index."""
    pods = live(job_pods(cluster, namespace, NAME, "trainer"))
    return {int(p.metadata.labels[api.LABEL_INDEX]): p.metadata.name for p in pods}


def restart_events(cluster: KubeCluster, namespace: str) -> list[Any]:
    return [e for e in events_for(cluster, namespace, NAME) if e.reason == "TrainingJobRestarting"]


def restarts_counted(operator: OperatorProcess, namespace: str) -> float:
    """restarts_counted: aitj_restarts_total of the job, summed over its labels."""
    pattern = re.compile(r"^aitj_restarts_total\{([^}]*)\} (\S+)$", re.M)
    return sum(
        float(value)
        for labels, value in pattern.findall(operator.metrics())
        if f'namespace="{namespace}"' in labels and f'job_name="{NAME}"' in labels
    )


def test_a_restart_whose_status_write_failed_and_whose_operator_was_killed_is_recorded_once(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, refused: str
) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    trainers = by_index(cluster, namespace)
    policies.apply(
        cluster, policies.status_refusal(refused, namespace, "false", "test: status writes refused")
    )
    wait_for(lambda: not status_writable(cluster, namespace), 30, "status writes refused")

    faults.force_delete(cluster.api, namespace, trainers[1])
    wait_for(lambda: by_index(cluster, namespace).get(1) not in (None, trainers[1]), 30, "the replacement")
    wait_for(lambda: len(restart_events(cluster, namespace)) == 1, 30, "the restart Event, before the status")
    job = get_job(cluster, namespace, NAME)
    assert job["status"]["RestartCount"]["trainer"] == 0 and not job["status"].get("restarts")
    assert restarts_counted(live_operator, namespace) == 0  # no status write: nothing counted

    live_operator.kill()  # a new process finds the restart in the replacement's stamp only
    cluster.kubectl("delete", "validatingadmissionpolicybinding", refused)
    wait_for(lambda: status_writable(cluster, namespace), 30, "status writes allowed again")
    live_operator.start()

    wait_for(
        lambda: len(get_job(cluster, namespace, NAME)["status"].get("restarts") or []) == 1,
        30,
        "the restart recorded",
    )
    wait_phase(cluster, namespace, NAME, "Running")
    wait_for(lambda: restarts_counted(live_operator, namespace) == 1, 30, "the restart counted")
    job = get_job(cluster, namespace, NAME)
    (entry,) = job["status"]["restarts"]
    assert (entry["replica"], entry["index"], entry["generation"], entry["pod"]) == (
        "trainer",
        1,
        0,
        trainers[1],
    )
    assert entry["cause"] == "PodForceDeleted" and job["status"]["RestartCount"]["trainer"] == 1
    assert len(restart_events(cluster, namespace)) == 1
    assert restarts_counted(live_operator, namespace) == 1
