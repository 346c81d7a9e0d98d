"""In-place restart rules at pod creation, per Kubernetes version (issue 28): a cluster that
serves RestartAllContainers (1.36 and later, by default) stores them in the pod; one that does
not (1.35: container restart rules are beta there, that action alpha and off) refuses the pod
naming them, and the operator creates it without them. A failure the InPlace rule matches then
replaces the pod, and the status and an Event say so. Run it on 1.35 with
``AITJ_KUBERNETES=1.35`` (docs/devcluster.md, "Kubernetes versions"). Exits are kwok's
(faults.pod_exit): kwok runs no container, so the in-place restart itself is proved on real
nodes (tests/e2e/real/test_inplace.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from aitj.core import api
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.jobs import create_job, events_for, get_job, job_pods, live, seed_variant, set_path, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "inplace-job"
RULES = [
    {"exitCodes": 137, "restartPolicy": "ExitCode", "restartScope": "InPlace", "restartLimit": 3},
    {"exceptionalEvent": "nodeNotReady,PodForceDeleted", "restartPolicy": "OnNodeFail"},
]


def index0(cluster: KubeCluster, namespace: str, generation: int, running: bool = True) -> Any:
    def found() -> Any:
        for p in live(job_pods(cluster, namespace, NAME, "trainer")):
            labels = p.metadata.labels
            if labels[api.LABEL_INDEX] == "0" and labels[api.LABEL_GENERATION] == str(generation):
                return p if p.status.phase == "Running" or not running else None
        return None

    return wait_for(found, 60, f"trainer 0 generation {generation} {'Running' if running else 'created'}")


def test_the_rules_are_stored_where_served_and_left_out_with_a_replacement_where_not(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    version = client.VersionApi(cluster.api).get_code()
    minor = int("".join(ch for ch in version.minor if ch.isdigit()))
    create_job(
        cluster,
        namespace,
        seed_variant(NAME, rules=set_path("spec.replicaSpecs.trainer.faultTolerantPolicy", RULES)),
    )
    pod = index0(cluster, namespace, 0, running=False)
    assert pod.metadata.annotations[f"{api.LABEL_PREFIX}/in-place"] == "137"
    rules = pod.spec.containers[0].restart_policy_rules
    said = "stored" if rules else "refused"
    print(f"Kubernetes {version.git_version}: in-place restart rules {said} at create")
    if minor >= 36:
        # Stored. Such a pod is scheduled only onto nodes that declare the feature
        # (NodeDeclaredFeatures): real kubelets do, kwok's nodes do not, so it runs on real nodes.
        assert rules and rules[0].action == "RestartAllContainers" and rules[0].exit_codes.values == [137]
        return
    wait_phase(cluster, namespace, NAME, "Running")
    pod = index0(cluster, namespace, 0)
    assert not rules, "a cluster that does not serve RestartAllContainers"
    faults.pod_exit(cluster.api, namespace, pod.metadata.name, 137)
    index0(cluster, namespace, 1)

    def recorded() -> Any:
        restarts = (get_job(cluster, namespace, NAME).get("status") or {}).get("restarts") or []
        return restarts[-1] if restarts else None

    entry = wait_for(recorded, 30, "the replacement recorded")
    assert "in-place restart not served by this cluster: replaced the pod instead" in entry["message"]
    assert (entry["scope"], entry["rule"]) == ("Pod", "exitCodes 137")
    wait_for(
        lambda: "InPlaceRestartNotServed" in [e.reason for e in events_for(cluster, namespace, NAME)],
        30,
        "the InPlaceRestartNotServed Event",
    )
