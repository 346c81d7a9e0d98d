"""The operator never holds a pod (issue 11): a pod on its way out (being deleted, or finished)
that the plan no longer needs is let go once the job's status records what became of it;
and an eviction from a cordoned node is a drain, which the seed's nodeNotReady rule restarts."""

from __future__ import annotations

from typing import Any

from aitj.core.api import Policy
from aitj.core.observed import TRACKING_FINALIZER
from aitj.core.planner import plan
from tests.unit.builders import Cluster, Pod, at, name_of, node, running_seed, seed_job, with_replica

TRAINER0 = name_of("trainer", 0)


def running(job: Any = None) -> Cluster:
    """running: the seed job with every pod Running."""
    cluster = Cluster(job or seed_job(), running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def tracked(cluster: Cluster, name: str) -> bool:
    pod = cluster.pods.get(name)
    return pod is not None and TRACKING_FINALIZER in pod.raw["metadata"].get("finalizers", [])


def settle(cluster: Cluster, start: float) -> None:
    """settle: two passes (the one that records the outcome, the one its status event kicks),
    then the kubelet finishes what is being deleted."""
    cluster.step(start)
    cluster.step(start + 0.1)
    cluster.terminate_deleted()


def test_an_eviction_on_a_schedulable_node_that_no_rule_restarts_stands_and_the_pod_is_let_go() -> None:
    cluster = running()
    cluster.pods[TRAINER0].disrupted("EvictionByEvictionAPI", 100).deleted(100, grace=30)

    first = cluster.step(101)
    assert first.creates == () and TRAINER0 not in first.release  # recorded first, in the status
    assert cluster.status["restartLedger"]["trainer"]["stood"] == {"0": 0}
    second = cluster.step(101.1)
    assert second.release == (TRAINER0,)
    cluster.terminate_deleted()
    assert TRAINER0 not in cluster.pods

    # The pod is gone: its index stays failed and vacant, and nothing is created for it.
    after = cluster.step(102)
    assert after.creates == ()
    assert cluster.status["replicaStatuses"]["trainer"]["failed"] == 1
    assert cluster.status["RestartCount"]["trainer"] == 0
    last = cluster.status["conditions"][-1]
    assert last["type"] == "Running"
    assert last["message"] == (
        "pods are running; vacant, as failures that stand are not restarted: index [0] of replica trainer"
    )


def test_a_trainer_deleted_after_its_restart_limit_is_used_up_is_let_go_and_its_index_left_vacant() -> None:
    cluster = running(with_replica(seed_job(), "trainer", restart_limit=0, fail_policy=Policy.NONE))
    cluster.pods[TRAINER0].deleted(100, grace=30)
    settle(cluster, 101)
    assert TRAINER0 not in cluster.pods
    cluster.step(102)
    assert cluster.live("trainer") == sorted([name_of("trainer", 1), name_of("trainer", 2)])
    assert "index [0] of replica trainer" in cluster.status["conditions"][-1]["message"]


def test_a_failure_that_stands_on_a_finished_pod_is_let_go_but_the_pod_is_kept() -> None:
    job = with_replica(seed_job(), "trainer", fail_policy=Policy.NONE)
    cluster = running(job)
    cluster.pods[TRAINER0].exited(1, finished=100)  # exit code 1: no trainer rule names it
    settle(cluster, 101)
    assert TRAINER0 in cluster.pods and not tracked(cluster, TRAINER0)
    # Deleted later by someone: its disappearance is no new failure.
    cluster.pods[TRAINER0].deleted(200, grace=0)
    cluster.collect()
    result = cluster.step(201)
    assert result.creates == () and cluster.status["RestartCount"]["trainer"] == 0


def test_a_succeeded_trainer_deleted_by_someone_is_let_go_and_not_restarted() -> None:
    cluster = running()
    cluster.pods[TRAINER0].raw["status"]["phase"] = "Succeeded"
    cluster.pods[TRAINER0].deleted(100, grace=30)
    settle(cluster, 101)
    assert TRAINER0 not in cluster.pods
    result = cluster.step(102)
    assert result.creates == ()
    assert cluster.status["replicaStatuses"]["trainer"]["succeeded"] == 1
    assert cluster.status["RestartCount"]["trainer"] == 0


def test_a_pod_still_running_with_a_failure_that_stands_keeps_its_finalizer() -> None:
    # Not on its way out: the finalizer is what lets the operator see a later force delete.
    cluster = running(with_replica(seed_job(), "trainer", restart_limit=0))
    cluster.nodes["node-a"] = node("node-a", "False", since=95)
    settle(cluster, 101)
    assert tracked(cluster, TRAINER0)


def test_an_eviction_from_a_cordoned_node_is_a_drain_that_the_seed_restarts_on_another_node() -> None:
    cluster = running()
    cluster.nodes["node-a"] = node("node-a", cordoned=True)
    cluster.pods[TRAINER0].disrupted("EvictionByEvictionAPI", 100).deleted(100, grace=30)
    result = cluster.step(101)
    assert [c.name for c in result.creates] == [name_of("trainer", 0, 1)]
    assert result.release == (TRAINER0,)
    assert cluster.status["RestartCount"]["trainer"] == 1
    (event,) = [e for e in result.restart_events if e.reason == "TrainingJobRestarting"]
    assert event.message.startswith(f"nodeNotReady on pod {TRAINER0}")
    assert "node node-a is cordoned: a drain (node maintenance)" in event.message


def test_planning_twice_from_the_same_state_releases_the_same_pods() -> None:
    cluster = running()
    cluster.pods[TRAINER0].disrupted("EvictionByEvictionAPI", 100).deleted(100, grace=30)
    cluster.step(101)
    pods = [p.view() for p in cluster.pods.values()]
    assert plan(cluster.job, pods, cluster.nodes, at(102)) == plan(cluster.job, pods, cluster.nodes, at(102))


def owned_by(pod: Pod, uid: str) -> Pod:
    """owned_by: the pod with a controller ownerReference to the job of uid ``uid``."""
    pod.raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "AITrainingJob", "name": "j", "uid": uid, "controller": True}
    ]
    return pod


def test_pods_of_an_earlier_job_of_the_same_name_are_let_go_and_count_for_nothing() -> None:
    # The job was deleted and created again while its old pods were still terminating: they
    # carry its name, their owner is the old job. Counted, they would hand the new job the
    # old one's failures.
    job = seed_job()
    old = [owned_by(p, "old-uid") for p in running_seed()]
    old[0].exited(137)
    old[1].deleted(5)
    for p in old:
        p.raw["metadata"]["name"] += "x"  # named from the old job's uid: the same index, another name
    new = [owned_by(p, job.uid) for p in running_seed()]
    result = plan(job, [p.view() for p in old + new], {"node-a": node()}, at(10))
    assert set(result.release) >= {p.name for p in old}
    assert result.restarts == () and result.creates == () and result.deletes == ()
