"""In-place restarts on real nodes (issue 28, docs/semantics.md section 23): an exit code an
InPlace rule matches restarts the containers in the same pod, on the same node, by the kubelet
(container restartPolicyRules, RestartAllContainers); once that rung's budget is spent the next
rule replaces the pod. The time from an exit to the container Running again in place is
measured against a pod replacement by a Pod-scope rule, in the same run, and printed (pytest
-s): never asserted."""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

import pytest

from aitj.core import api
from tests.clusters import KubeCluster
from tests.e2e.real.jobs import box_job, grace, pods_by_index, wait_replaced, wait_running
from tests.jobs import Doc, create_job, events_for, get_job
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

# A trainer runs until told to exit with a code: the file /tmp/exit holds it. The file is in the
# container's own layer, so a container restarted in place starts without it.
IN_PLACE_LIMIT = 3  # rung 1's budget: the in-place samples measured
TRAINER = 'while [ ! -s /tmp/exit ]; do sleep 0.05; done; exit "$(cat /tmp/exit)"'
LADDER = [
    {
        "exitCodes": 137,
        "restartPolicy": "ExitCode",
        "restartScope": "InPlace",
        "restartLimit": IN_PLACE_LIMIT,
        "restartWindowSeconds": 600,
    },
    {"exitCodes": 137, "restartPolicy": "ExitCode", "restartScope": "Pod", "restartLimit": 5},
    {"exitCodes": 101, "restartPolicy": "ExitCode", "restartScope": "Pod"},
    {
        "exceptionalEvent": "nodeNotReady,PodForceDeleted",
        "restartPolicy": "OnNodeFail",
        "restartScope": "Pod",
    },
]


def ladder(doc: Doc) -> None:
    doc["spec"]["replicaSpecs"]["trainer"]["faultTolerantPolicy"] = LADDER


def tell_exit(cluster: KubeCluster, namespace: str, pod: str, code: int) -> float:
    """tell_exit: the trainer ``pod`` exits with ``code`` within 50 ms; returns when it was told."""
    cluster.kubectl("exec", "-n", namespace, pod, "--", "sh", "-c", f"echo {code} > /tmp/exit")
    return time.monotonic()


def container(pod: Any) -> Any:
    (status,) = pod.status.container_statuses
    return status


def wait_in_place(
    cluster: KubeCluster, namespace: str, job: str, index: int, uid: str, restarts: int
) -> tuple[Any, float]:
    """wait_in_place: the pod of ``index`` (still ``uid``) Running again with ``restarts``
    restarts of its container, and when that was seen (time.monotonic)."""

    def again() -> Any:
        pod = pods_by_index(cluster, namespace, job, "trainer").get(index)
        if pod is None or pod.metadata.uid != uid or not pod.status.container_statuses:
            return None
        status = container(pod)
        return pod if status.restart_count >= restarts and status.state.running is not None else None

    pod = wait_for(again, 120, f"trainer {index} of {job} restarted in place ({restarts})", interval=0.1)
    return pod, time.monotonic()


def restarts_of(cluster: KubeCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return list((get_job(cluster, namespace, job).get("status") or {}).get("restarts") or [])


def charged(cluster: KubeCluster, namespace: str, job: str, n: int) -> dict[str, Any] | None:
    """charged: the status.restarts entry of in-place restart ``n``, once written."""
    for r in restarts_of(cluster, namespace, job):
        if r.get("scope") == "InPlace" and f" {n} of {IN_PLACE_LIMIT}" in r.get("message", ""):
            return r
    return None


def test_an_in_place_rule_restarts_the_containers_in_the_same_pod_then_the_ladder_replaces_it(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "ladder"
    create_job(real_cluster, ns, box_job(job, trainer=TRAINER, ladder=ladder, grace=grace("trainer", 5)))
    wait_running(real_cluster, ns, job, trainers=3)
    first = pods_by_index(real_cluster, ns, job, "trainer")[0]
    uid, node = first.metadata.uid, first.spec.node_name
    rules = first.spec.containers[0].restart_policy_rules
    assert rules and rules[0].action == "RestartAllContainers" and rules[0].exit_codes.values == [137]
    assert first.metadata.annotations[f"{api.LABEL_PREFIX}/in-place"] == "137"  # rendered, and served

    in_place: list[float] = []
    for n in range(1, IN_PLACE_LIMIT + 1):
        told = tell_exit(real_cluster, ns, first.metadata.name, 137)
        pod, running_at = wait_in_place(real_cluster, ns, job, 0, uid, n)
        in_place.append(running_at - told)
        assert (pod.metadata.uid, pod.spec.node_name, pod.metadata.name) == (uid, node, first.metadata.name)
        status = container(pod)
        last = status.last_state.terminated
        print(
            f"in-place restart {n}: restartCount {status.restart_count}, "
            f"lastState {last.reason} {last.exit_code}"
        )
        assert container(pod).restart_count == n, "one restart counted per in-place restart"
        entry = wait_for(
            functools.partial(charged, real_cluster, ns, job, n), 30, f"in-place restart {n} charged"
        )
        assert entry["pod"] == first.metadata.name and entry["message"].endswith(
            f"rule 1 (InPlace) {n} of {IN_PLACE_LIMIT} in 600 s"
        )
    reasons = [e.reason for e in events_for(real_cluster, ns, job)]
    assert reasons.count("TrainingJobRestartedInPlace") == IN_PLACE_LIMIT, reasons
    assert (get_job(real_cluster, ns, job).get("status") or {}).get("RestartCount", {}).get("trainer", 0) == 0

    # One more 137 in 600 s: rung 1 is spent. The kubelet restarts in place anyway (a pod's rules
    # cannot change); the operator escalates to rule 2: the pod is replaced.
    tell_exit(real_cluster, ns, first.metadata.name, 137)
    new, _ = wait_replaced(real_cluster, ns, job, "trainer", 0, first.metadata.name)
    assert new.metadata.uid != uid
    assert not new.spec.containers[0].restart_policy_rules, "created while rung 1 is spent: no in-place rules"
    assert restarts_of(real_cluster, ns, job)[-1]["rule"] == "exitCodes 137 (rule 2)"

    # The same run, a Pod-scope rule: exit 101 replaces the pod (trainers 1, 2, then 1 again).
    replacement: list[float] = []
    for index in (1, 2, 1):
        other = pods_by_index(real_cluster, ns, job, "trainer")[index]
        told = tell_exit(real_cluster, ns, other.metadata.name, 101)
        replaced, running_at = wait_replaced(real_cluster, ns, job, "trainer", index, other.metadata.name)
        replacement.append(running_at - told)
        assert replaced.metadata.uid != other.metadata.uid
    print(
        f"in-place restart (exit 137 -> container Running again, same pod): "
        f"{', '.join(f'{s:.2f}' for s in in_place)} s (median {statistics.median(in_place):.2f} s); "
        f"pod replacement (exit 101 -> new pod Running): {', '.join(f'{s:.2f}' for s in replacement)} s "
        f"(median {statistics.median(replacement):.2f} s); node {node}"
    )
