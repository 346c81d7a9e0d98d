"""Recovery rules on the real control plane (issue 15): a rule's restart budget over a window,
its backoff, and keeping a replacement off the node its pod failed on. Exits are real kwok
exits (faults.pod_exit); the node room is a pool of the test's own (tests/e2e/pools.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import watch

from aitj.core import api
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.e2e.pools import Pool
from tests.jobs import (
    conditions,
    create_job,
    events_for,
    get_job,
    job_pods,
    live,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "recovery-job"
EVENT_RULE = {"exceptionalEvent": "nodeNotReady,PodForceDeleted", "restartPolicy": "OnNodeFail"}


def exit_rule(**fields: Any) -> dict[str, Any]:
    return {"exitCodes": "101", "restartPolicy": "ExitCode", "restartScope": "Pod", **fields}


def trainer_rules(*rules: dict[str, Any]) -> Any:
    return set_path("spec.replicaSpecs.trainer.faultTolerantPolicy", [*rules, EVENT_RULE])


def index0(cluster: KubeCluster, namespace: str) -> Any:
    """index0: the live trainer pod of index 0 (None while there is none)."""
    pods = [
        p
        for p in live(job_pods(cluster, namespace, NAME, "trainer"))
        if p.metadata.labels[api.LABEL_INDEX] == "0"
    ]
    return pods[0] if pods else None


def restart_count(cluster: KubeCluster, namespace: str) -> int:
    return int(get_job(cluster, namespace, NAME)["status"]["RestartCount"]["trainer"])


def restarted(cluster: KubeCluster, namespace: str, want: int) -> Callable[[], bool]:
    return lambda: restart_count(cluster, namespace) == want


def running_index0(cluster: KubeCluster, namespace: str, generation: int) -> Any:
    def found() -> Any:
        pod = index0(cluster, namespace)
        if pod is None or pod.metadata.labels[api.LABEL_GENERATION] != str(generation):
            return None
        return pod if pod.status.phase == "Running" else None

    return wait_for(found, 30, f"trainer 0 generation {generation} running")


# ---------------------------------------------------------------------------------------------
# Rule budgets over windows


def test_a_rule_budget_of_two_in_600s_restarts_twice_and_the_third_exit_falls_to_fail_policy(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(
        NAME,
        rules=trainer_rules(exit_rule(restartLimit=2, restartWindowSeconds=600)),
        fail=set_path("spec.replicaSpecs.trainer.failPolicy", "Any"),
    )
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, NAME, "Running")
    for generation in (0, 1):
        pod = running_index0(cluster, namespace, generation)
        faults.pod_exit(cluster.api, namespace, pod.metadata.name, 101)
        wait_for(restarted(cluster, namespace, generation + 1), 30, "a restart")
    pod = running_index0(cluster, namespace, 2)
    faults.pod_exit(cluster.api, namespace, pod.metadata.name, 101)
    job = wait_phase(cluster, namespace, NAME, "Failed")
    message = conditions(job)[-1]["message"]
    assert "budget ran out" in message and "restartLimit 2 within 600s" in message, message
    assert restart_count(cluster, namespace) == 2

    def said() -> bool:
        events = events_for(cluster, namespace, NAME)
        return any(e.reason == "TrainingJobFailed" and "budget ran out" in e.message for e in events)

    wait_for(said, 30, "the TrainingJobFailed Event says the budget ran out")


def test_exits_further_apart_than_a_5s_window_are_restarted_each_time(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(
        NAME,
        rules=trainer_rules(exit_rule(restartLimit=2, restartWindowSeconds=5)),
        fail=set_path("spec.replicaSpecs.trainer.failPolicy", "Any"),
    )
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, NAME, "Running")
    last = 0.0
    for generation in (0, 1, 2):
        pod = running_index0(cluster, namespace, generation)
        time.sleep(max(0.0, last + 6 - time.monotonic()))
        last = time.monotonic()
        faults.pod_exit(cluster.api, namespace, pod.metadata.name, 101)
        wait_for(restarted(cluster, namespace, generation + 1), 30, "a restart")
    running_index0(cluster, namespace, 3)
    assert get_job(cluster, namespace, NAME)["status"]["phase"] != "Failed"
    assert restart_count(cluster, namespace) == 3


# ---------------------------------------------------------------------------------------------
# Backoff


def test_a_backoff_recreates_after_2_4_and_8_s_then_at_once_after_the_index_ran_reset_after_seconds(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    backoff = {"initialSeconds": 2, "maxSeconds": 8, "resetAfterSeconds": 4}
    doc = seed_variant(
        NAME,
        replicas=set_path("spec.replicaSpecs.trainer.replicas", 1),
        rules=trainer_rules(exit_rule(backoff=backoff)),
    )
    create_job(cluster, namespace, doc)
    failed: dict[int, float] = {}
    created: dict[int, float] = {}
    messages: list[str] = []
    runs_long = 4  # this generation runs 5 s (more than resetAfterSeconds) before it exits
    w = watch.Watch()  # type: ignore[no-untyped-call]
    selector = f"{api.LABEL_JOB}={NAME},{api.LABEL_REPLICA}=trainer,{api.LABEL_INDEX}=0"
    deadline = time.monotonic() + 120
    for event in w.stream(  # type: ignore[no-untyped-call]
        cluster.core.list_namespaced_pod, namespace, label_selector=selector, timeout_seconds=120
    ):
        now = time.monotonic()
        pod = event["object"]
        gen = int(pod.metadata.labels[api.LABEL_GENERATION])
        created.setdefault(gen, now)
        if pod.status.phase == "Failed":
            failed.setdefault(gen, now)
            if gen == 3:  # the 8 s wait: the status says so while it runs
                job = get_job(cluster, namespace, NAME)
                messages.append(conditions(job)[-1]["message"])
        exiting = (pod.metadata.annotations or {}).get(faults.EXIT_CODE_ANNOTATION)
        if pod.status.phase == "Running" and exiting is None and gen <= runs_long:
            if gen == runs_long:
                time.sleep(5)
            faults.pod_exit(cluster.api, namespace, pod.metadata.name, 101)
        if runs_long + 1 in created or now > deadline:
            w.stop()  # type: ignore[no-untyped-call]
    gaps = [created[g + 1] - failed[g] for g in range(runs_long + 1)]
    print(f"\nbackoff: replacement created after its predecessor failed: {[f'{g:.2f} s' for g in gaps]}")
    assert gaps[1] >= 2 - 0.5 and gaps[2] >= 4 - 0.5 and gaps[3] >= 8 - 0.5, gaps
    assert gaps[0] < gaps[1] < gaps[2] < gaps[3], gaps
    assert gaps[4] < gaps[1], gaps  # after running resetAfterSeconds: at once again
    assert any("waiting 8 s before recreating index 0" in m for m in messages), messages


# ---------------------------------------------------------------------------------------------
# Keeping replacements off bad nodes


def one_trainer_fails_on_its_only_node(cluster: KubeCluster, namespace: str, pool: Pool, exclude: int) -> str:
    """one_trainer_fails_on_its_only_node: a job of one trainer whose exit-101 rule keeps its
    replacement off the failed pod's node for ``exclude`` seconds, Running on the pool's only
    node, exits 101; returns that node."""
    only = pool.add()
    doc = seed_variant(
        NAME,
        pin=pool.pin(),
        replicas=set_path("spec.replicaSpecs.trainer.replicas", 1),
        rules=trainer_rules(exit_rule(excludeNodeSeconds=exclude)),
    )
    create_job(cluster, namespace, doc)
    pod = running_index0(cluster, namespace, 0)
    assert pod.spec.node_name == only
    faults.pod_exit(cluster.api, namespace, pod.metadata.name, 101)
    return only


def test_a_replacement_never_lands_on_the_failed_pods_node_and_waits_pending_when_it_is_the_only_one(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    only = one_trainer_fails_on_its_only_node(cluster, namespace, pool, 600)

    def said_why() -> Any:
        excluded = get_job(cluster, namespace, NAME)["status"].get("excludedNodes") or []
        return excluded if excluded and "message" in excluded[0] else None

    (entry,) = wait_for(said_why, 30, "the status says why the replacement waits")
    assert (entry["node"], entry["replica"], entry["index"], entry["rule"]) == (
        only,
        "trainer",
        0,
        "exitCodes 101",
    )
    assert f"keeps off [{only}]" in entry["message"], entry
    replacement = index0(cluster, namespace)
    assert replacement.metadata.labels[api.LABEL_GENERATION] == "1"
    assert replacement.status.phase == "Pending" and not replacement.spec.node_name
    terms = replacement.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    expressions = [
        (e.key, e.operator, e.values) for t in terms.node_selector_terms for e in t.match_expressions
    ]
    assert expressions == [("kubernetes.io/hostname", "NotIn", [only])]

    # Room elsewhere, the scheduler places it there: a node Ready before the pod may use it (a kwok
    # node that is not Ready yet would make the replacement one on a bad node, replaced again).
    other = pool.add_ready()
    pod = running_index0(cluster, namespace, 1)
    assert pod.spec.node_name == other


def test_a_replacement_that_waited_out_a_5s_exclusion_is_replaced_by_one_that_may_use_the_node(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    only = one_trainer_fails_on_its_only_node(cluster, namespace, pool, 5)
    pod = running_index0(cluster, namespace, 2)  # generation 1 could not be placed; 2 may use the node
    assert pod.spec.node_name == only and pod.spec.affinity is None
    job = get_job(cluster, namespace, NAME)
    assert job["status"]["RestartCount"]["trainer"] == 1 and "excludedNodes" not in job["status"]
