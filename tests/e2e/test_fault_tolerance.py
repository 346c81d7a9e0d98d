"""Fault tolerance on the real control plane (issue 5): each fault caused for real, each
replacement checked by index, name and restart count."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core import api
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
    running,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "ft-job"


def by_index(pods: list[Any]) -> dict[int, str]:
    return {int(p.metadata.labels[api.LABEL_INDEX]): p.metadata.name for p in live(pods)}


def restart_count(cluster: KubeCluster, namespace: str, replica: str) -> int:
    return int(get_job(cluster, namespace, NAME)["status"]["RestartCount"][replica])


def start(cluster: KubeCluster, namespace: str, doc: Doc) -> dict[int, str]:
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, NAME, "Running")
    return by_index(job_pods(cluster, namespace, NAME, "trainer"))


def test_a_force_deleted_trainer_comes_back_under_the_same_index_with_a_new_name(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace, seed_variant(NAME))
    faults.force_delete(cluster.api, namespace, before[0])

    after = wait_for(
        lambda: (
            (m := by_index(job_pods(cluster, namespace, NAME, "trainer"))).get(0) not in (None, before[0])
            and len(m) == 3
            and m
        ),
        30,
        "trainer 0 replaced",
    )
    # The other trainers are untouched.
    assert {i: n for i, n in after.items() if i != 0} == {i: n for i, n in before.items() if i != 0}
    assert after[0].endswith("-0") and after[0] != before[0]
    wait_for(lambda: restart_count(cluster, namespace, "trainer") == 1, 30, "RestartCount.trainer 1")
    wait_phase(cluster, namespace, NAME, "Running")
    names = {p.metadata.name for p in job_pods(cluster, namespace, NAME)}
    assert before[0] not in names  # the old name never comes back
    job = get_job(cluster, namespace, NAME)
    assert "Restarting" in [c["type"] for c in conditions(job)]
    restarts = wait_for(
        lambda: [e for e in events_for(cluster, namespace, NAME) if "PodForceDeleted" in (e.message or "")],
        30,
        "a PodForceDeleted restart event",
    )
    assert before[0] in restarts[0].message
    # Counted in the metrics, after the effect, by cause, class and scope.
    series = f'aitj_restarts_total{{cause="PodForceDeleted",class="application",job_name="{NAME}",'
    series += f'namespace="{namespace}",'
    series += 'replica="trainer",scope="Pod"} 1.0'
    assert series in live_operator.metrics()


def test_a_not_ready_node_under_two_trainers_gets_both_replaced_on_another_node(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    bad = pool.add()
    doc = seed_variant(NAME, pin=pool.pin(), two=set_path("spec.replicaSpecs.trainer.replicas", 2))
    before = start(cluster, namespace, doc)
    good = pool.add()
    faults.node_not_ready(cluster.api, bad)

    def replaced() -> dict[int, str] | None:
        pods = running(job_pods(cluster, namespace, NAME, "trainer"))
        m = {int(p.metadata.labels[api.LABEL_INDEX]): p for p in pods}
        ok = sorted(m) == [0, 1] and all(
            p.spec.node_name == good and p.metadata.name not in before.values() for p in m.values()
        )
        return {i: p.metadata.name for i, p in m.items()} if ok else None

    after = wait_for(replaced, 60, "both trainers running again on the healthy node")
    assert set(after.values()).isdisjoint(before.values())
    wait_for(lambda: restart_count(cluster, namespace, "trainer") == 2, 30, "two restarts counted")

    # Events are the last step of the pass that counted the restarts: wait for one per trainer.
    def restarted_in_events() -> set[str]:
        messages = [e.message or "" for e in events_for(cluster, namespace, NAME)]
        return {name for m in messages if "nodeNotReady" in m for name in before.values() if name in m}

    wait_for(
        lambda: restarted_in_events() == set(before.values()), 30, "a nodeNotReady event for each trainer"
    )


def test_a_silent_node_loses_its_pods_once_it_is_unknown_and_stuck_pods_are_force_deleted(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    silent = pool.add()
    doc = seed_variant(
        NAME,
        pin=pool.pin(),
        one=set_path("spec.replicaSpecs.trainer.replicas", 1),
        limit=set_path("spec.replicaSpecs.trainer.restartTimeLimit", 3),
    )
    before = start(cluster, namespace, doc)
    pool.add()
    faults.node_silent(cluster.api, silent)
    # kube-controller-manager marks it Unknown after the grace period; then the pod is replaced.
    after = wait_for(
        lambda: (
            (m := by_index(running(job_pods(cluster, namespace, NAME, "trainer")))).get(0)
            not in (None, before[0])
            and m
        ),
        90,
        "trainer 0 replaced",
    )
    assert after[0] != before[0]
    # kwok no longer manages the silent node, so nothing finishes the old pod's deletion; the
    # operator force-deletes it restartTimeLimit (3 s) after asking, and releases it.
    wait_for(
        lambda: before[0] not in {p.metadata.name for p in job_pods(cluster, namespace, NAME)},
        60,
        "the stuck pod gone",
    )
    assert restart_count(cluster, namespace, "trainer") == 1
    faults.node_revive(cluster.api, silent)


def test_the_launcher_exiting_129_is_restarted_by_its_first_rule(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace, seed_variant(NAME))
    old = job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name
    faults.pod_exit(cluster.api, namespace, old, 129)
    new = wait_for(
        lambda: [
            p.metadata.name
            for p in running(job_pods(cluster, namespace, NAME, "launcher"))
            if p.metadata.name != old
        ],
        30,
        "a new launcher running",
    )
    assert new[0].endswith("-0")
    wait_for(lambda: restart_count(cluster, namespace, "launcher") == 1, 30, "RestartCount.launcher 1")
    assert restart_count(cluster, namespace, "trainer") == 0
    job = wait_phase(cluster, namespace, NAME, "Running")
    assert job["status"]["RestartCount"] == {"launcher": 1, "trainer": 0}  # counted once, and only it


def test_a_restart_limit_of_two_fails_the_job_on_the_third_failure(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    doc = seed_variant(
        NAME,
        limit=set_path("spec.replicaSpecs.trainer.restartLimit", 2),
        fail=set_path("spec.replicaSpecs.trainer.failPolicy", "Any"),
    )
    start(cluster, namespace, doc)
    for count in (1, 2):
        victim = by_index(job_pods(cluster, namespace, NAME, "trainer"))[0]
        faults.force_delete(cluster.api, namespace, victim)

        def restarted(want: int = count) -> bool:
            return restart_count(cluster, namespace, "trainer") == want

        wait_for(restarted, 30, f"restart {count}")
        wait_phase(cluster, namespace, NAME, "Running")
    victim = by_index(job_pods(cluster, namespace, NAME, "trainer"))[0]
    faults.force_delete(cluster.api, namespace, victim)
    job = wait_phase(cluster, namespace, NAME, "Failed")
    assert "limit" in conditions(job)[-1]["message"].lower()
    assert restart_count(cluster, namespace, "trainer") == 2


@pytest.mark.parametrize(
    ("scope", "recreated"),
    [
        pytest.param("Replica", {"trainer"}, id="Replica recreates every trainer and keeps the launcher"),
        pytest.param("All", {"trainer", "launcher"}, id="All recreates every pod of the job"),
    ],
)
def test_restart_scope_recreates_exactly_the_right_pods(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, scope: str, recreated: set[str]
) -> None:
    doc = seed_variant(
        NAME, scope=set_path("spec.replicaSpecs.trainer.faultTolerantPolicy.0.restartScope", scope)
    )
    start(cluster, namespace, doc)
    before = {
        p.metadata.name: p.metadata.labels[api.LABEL_REPLICA] for p in job_pods(cluster, namespace, NAME)
    }
    faults.force_delete(cluster.api, namespace, by_index(job_pods(cluster, namespace, NAME, "trainer"))[1])

    def settled() -> dict[str, str] | None:
        pods = running(job_pods(cluster, namespace, NAME))
        now = {p.metadata.name: p.metadata.labels[api.LABEL_REPLICA] for p in pods}
        if len(now) != 4 or len(job_pods(cluster, namespace, NAME)) != 4:
            return None
        changed = {r for n, r in now.items() if n not in before}
        return now if changed == recreated else None

    after = wait_for(settled, 60, f"scope {scope} settled")
    kept = {n for n, r in before.items() if r not in recreated}
    assert kept <= set(after)
    assert restart_count(cluster, namespace, "trainer") == 1


def test_a_replacement_that_cannot_be_scheduled_fails_the_job_after_restart_timeout(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    node = pool.add()
    doc = seed_variant(
        NAME,
        pin=pool.pin(),
        timeout=set_path("spec.replicaSpecs.trainer.restartTimeout", 4),
        fail=set_path("spec.replicaSpecs.trainer.failPolicy", "Any"),
    )
    before = start(cluster, namespace, doc)
    pool.label(node, on=False)  # nowhere left to schedule a trainer
    faults.force_delete(cluster.api, namespace, before[2])
    job = wait_phase(cluster, namespace, NAME, "Failed", timeout=60)
    last = conditions(job)[-1]
    assert "RestartTimeout" in (last["reason"] + last["message"]), last


def test_an_operator_killed_in_the_middle_of_a_restart_ends_with_one_pod_per_index_and_the_exact_count(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    before = start(cluster, namespace, seed_variant(NAME))
    faults.force_delete(cluster.api, namespace, before[1])
    wait_for(
        lambda: by_index(job_pods(cluster, namespace, NAME, "trainer")).get(1) != before[1],
        30,
        "the replacement created",
        interval=0.01,
    )
    live_operator.kill()  # whatever was left of that pass (status, finalizer, event) never happened
    live_operator.start()
    wait_for(lambda: restart_count(cluster, namespace, "trainer") == 1, 30, "RestartCount.trainer 1")
    wait_phase(cluster, namespace, NAME, "Running")
    # The old pod is released at the end of a pass (after the status write): wait for that.
    wait_for(lambda: len(job_pods(cluster, namespace, NAME)) == 4, 30, "the old pod released, nothing extra")
    assert sorted(by_index(job_pods(cluster, namespace, NAME, "trainer"))) == [0, 1, 2]
    assert restart_count(cluster, namespace, "trainer") == 1
