"""Scaling races on the real control plane (issue 24, section 2): a scale-out into an index whose
scaled-in pod is still terminating.

kwok removes a deleted pod at once, so a finalizer of the test's own (as a slow kubelet or a
long termination grace period would) keeps the scaled-in trainer-2 terminating while the user
asks for 3 trainers again. The operator must create index 2's next generation and count
nothing: no restart, no ScaleFailed, the job never Failed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from aitj.core import api
from tests.clusters import KubeCluster
from tests.e2e.test_scaling import NAME, hosts, replicas, scale_to, start, trainers
from tests.jobs import events_for, get_job, job_pods, seed_variant, set_path, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
HOLD = "test.aitj.dev/hold"  # keeps a deleted pod Terminating until the test lets it go


@pytest.fixture
def held(cluster: KubeCluster, namespace: str) -> Iterator[list[str]]:
    """held: the pods the test holds with HOLD, released at the end whatever happens."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(ApiException):  # already gone, which is what we want
            cluster.core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})


def test_a_scale_out_while_the_scaled_in_pod_terminates_counts_no_restart(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, held: list[str]
) -> None:
    grace = set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 1)
    before = start(cluster, namespace, seed_variant(NAME, grace=grace, three=replicas(3)), 3)
    old = before[2].metadata.name
    finalizers = [*(before[2].metadata.finalizers or []), HOLD]
    cluster.core.patch_namespaced_pod(old, namespace, {"metadata": {"finalizers": finalizers}})
    held.append(old)

    scale_to(cluster, namespace, 2)
    wait_for(
        lambda: cluster.core.read_namespaced_pod(old, namespace).metadata.deletion_timestamp is not None,
        60,
        "the scaled-in trainer-2 being deleted",
    )
    wait_for(lambda: hosts(cluster, namespace) == [before[i].metadata.name for i in range(2)], 30, "2 hosts")
    wait_phase(cluster, namespace, NAME, "Running")

    scale_to(cluster, namespace, 3)  # trainer-2 is still there, Terminating
    new = wait_for(lambda: trainers(cluster, namespace).get(2), 30, "a new trainer-2")
    assert new.metadata.name != old and new.metadata.labels[api.LABEL_GENERATION] == "1"
    expected = [*(before[i].metadata.name for i in range(2)), new.metadata.name]
    wait_for(lambda: hosts(cluster, namespace) == expected, 60, "the new trainer-2 in the host list")
    job = wait_phase(cluster, namespace, NAME, "Running")
    assert cluster.core.read_namespaced_pod(old, namespace).metadata.deletion_timestamp is not None

    status = job["status"]
    assert status.get("RestartCount", {}).get("trainer", 0) == 0 and not status.get("restarts")
    outcomes = [(h["operation"], h["reason"]) for h in status.get("scaleHistory") or []]
    assert outcomes == [("scalein", "ScaleSucceeded"), ("scaleout", "ScaleSucceeded")]
    reasons = {e.reason for e in events_for(cluster, namespace, NAME)}
    assert not reasons & {"TrainingJobRestarting", "TrainingJobScaleRollback", "TrainingJobFailed"}
    names = {p.metadata.name for p in job_pods(cluster, namespace, NAME, "trainer")}
    assert old in names  # still held: the race was there all along
    assert get_job(cluster, namespace, NAME)["status"]["phase"] == "Running"
