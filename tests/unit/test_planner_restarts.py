"""The planner's fault tolerance (issue 5): restarts, scopes, limits, timeouts, force
deletion, node failure, and exact counts when the operator crashes mid-pass."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core.api import Policy, RestartPolicy, RestartScope
from aitj.core.observed import NodeView
from aitj.core.planner import DeleteReason, Plan, PodDelete, plan
from tests.unit.builders import (
    Cluster,
    as_json,
    at,
    event_rule,
    exit_rule,
    launcher,
    name_of,
    node,
    nodes,
    running_seed,
    running_status,
    seed_job,
    trainer,
    views,
    with_replica,
    with_status,
)

TRAINERS = [name_of("trainer", i) for i in range(3)]
LAUNCHER = name_of("launcher", 0)
DEAD_B = (node("node-a"), node("node-b", "False", since=95))


def running(job: Any = None) -> Cluster:
    """running: the seed job with every pod Running (trainers 0, 1 on node-a, 2 on node-b)."""
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    cluster = Cluster(job or seed_job(), pods)
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def condition(result: Plan) -> dict[str, Any]:
    assert result.status is not None
    last: dict[str, Any] = as_json(result.status)["conditions"][-1]
    return last


# ---------------------------------------------------------------------------------------------
# The seed's scenarios


def test_a_force_deleted_trainer_is_replaced_at_the_same_index_with_a_new_name() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    result = cluster.step(101)
    assert [(c.name, c.index, c.generation) for c in result.creates] == [(name_of("trainer", 0, 1), 0, 1)]
    assert name_of("trainer", 0, 1) != TRAINERS[0]
    assert result.deletes == () and result.release == (TRAINERS[0],)
    assert result.status is not None and as_json(result.status)["RestartCount"] == {
        "trainer": 1,
        "launcher": 0,
    }
    assert {"name": "TRAININGJOB_REPLICA_RESTARTCOUNT", "value": "1"} in result.creates[0].body["spec"][
        "containers"
    ][0]["env"]
    assert condition(result)["type"] == "Restarting"


def test_a_trainer_that_exits_0_on_a_force_delete_is_replaced_not_counted_done() -> None:
    """Seen with torchrun on real nodes: the pod's finalizer holds it, the kubelet stops its
    container, the worker exits 0 on the SIGTERM, and the pod's phase is Succeeded before the
    operator's pass reads it. The index is not done: the delete is the failure."""
    cluster = running()
    cluster.pods[TRAINERS[1]].exited(0, finished=101).deleted(100, grace=0)
    result = cluster.step(102)
    assert [(c.index, c.generation) for c in result.creates] == [(1, 1)]
    assert result.status is not None
    status = as_json(result.status)
    assert status["RestartCount"]["trainer"] == 1
    assert "succeeded" not in status["restartLedger"]["trainer"]


def test_a_restart_event_names_the_cause_and_the_rule() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    (event,) = cluster.step(101).restart_events
    assert (event.type, event.reason) == ("Warning", "TrainingJobRestarting")
    assert event.message == (
        f"PodForceDeleted on pod {TRAINERS[0]} (pod was deleted with grace period 0 by someone other than "
        "the operator): rule exceptionalEvent nodeNotReady,PodForceDeleted restarts scope Pod: "
        f"recreating pod {name_of('trainer', 0, 1)}"
    )


def test_a_restart_is_recorded_in_status_and_for_metrics() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    result = cluster.step(103)
    (record,) = result.restarts
    assert (record.replica, record.index, record.pod, record.failure.kind, record.scope) == (
        "trainer",
        0,
        TRAINERS[0],
        "PodForceDeleted",
        RestartScope.POD,
    )
    assert record.latency_seconds == 3
    assert cluster.status["restarts"] == [
        {
            "time": "2022-01-14T09:03:35Z",
            "replica": "trainer",
            "index": 0,
            "generation": 0,
            "pod": TRAINERS[0],
            "cause": "PodForceDeleted",
            "message": "pod was deleted with grace period 0 by someone other than the operator",
            "failureTime": "2022-01-14T09:03:32Z",
            "rule": "exceptionalEvent nodeNotReady,PodForceDeleted",
            "scope": "Pod",
        }
    ]
    assert cluster.status["restartLedger"]["trainer"]["recorded"] == {"0": 0}


def test_after_a_restart_the_job_runs_again_and_the_old_name_never_returns() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.step(101)
    assert TRAINERS[0] not in cluster.pods  # finalizer released, force-deleted pod gone
    cluster.step(102)
    cluster.run_all(103)
    result = cluster.step(104)
    assert condition(result)["type"] == "Running" and condition(result)["message"] == "all pods are running"
    assert cluster.live("trainer") == sorted([name_of("trainer", 0, 1), TRAINERS[1], TRAINERS[2]])
    assert cluster.status["RestartCount"]["trainer"] == 1
    for now in (200, 300):
        assert cluster.step(now).creates == ()
    assert [c["type"] for c in cluster.status["conditions"]][-3:] == ["Running", "Restarting", "Running"]


def test_a_node_going_not_ready_replaces_both_of_its_trainers() -> None:
    pods = running_seed()
    pods[1].raw["spec"]["nodeName"] = "node-b"
    pods[2].raw["spec"]["nodeName"] = "node-b"
    job = with_status(seed_job(), running_status(seed_job(), pods))
    result = plan(job, views(pods), nodes(*DEAD_B), at(100))
    assert [c.name for c in result.creates] == [name_of("trainer", 1, 1), name_of("trainer", 2, 1)]
    assert [(d.name, d.grace_period_seconds) for d in result.deletes] == [
        (TRAINERS[1], None),
        (TRAINERS[2], None),
    ]
    assert result.release == (TRAINERS[1], TRAINERS[2])
    assert result.status is not None and as_json(result.status)["RestartCount"]["trainer"] == 2
    assert [r.latency_seconds for r in result.restarts] == [5, 5]


@pytest.mark.parametrize(
    "node_views",
    [
        pytest.param((node("node-a"), node("node-b", "Unknown")), id="a silent node marked Unknown"),
        pytest.param((node("node-a"),), id="a node object deleted"),
    ],
)
def test_other_ways_of_losing_a_node_replace_its_trainer(node_views: tuple[NodeView, ...]) -> None:
    cluster = running()
    cluster.nodes = {n.name: n for n in node_views}
    result = cluster.step(100)
    assert [c.name for c in result.creates] == [name_of("trainer", 2, 1)]
    assert result.restarts[0].failure.kind == "nodeNotReady"


def test_the_launcher_exiting_129_is_restarted_by_the_first_launcher_rule() -> None:
    cluster = running()
    cluster.pods[LAUNCHER].exited(129)
    result = cluster.step(100)
    assert [c.name for c in result.creates] == [name_of("launcher", 0, 1)]
    assert result.restarts[0].rule == "exitCodes 129,101"
    assert [d.name for d in result.deletes] == [LAUNCHER]
    assert result.outcome is None and cluster.status["RestartCount"]["launcher"] == 1


# ---------------------------------------------------------------------------------------------
# Scopes


def test_scope_replica_recreates_every_pod_of_that_replica_and_nothing_else() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("nodeNotReady", RestartScope.REPLICA),))
    cluster = running(job)
    cluster.nodes = nodes(*DEAD_B)
    result = cluster.step(100)
    assert sorted(c.name for c in result.creates) == sorted(name_of("trainer", i, 1) for i in range(3))
    assert sorted(d.name for d in result.deletes) == sorted(TRAINERS)
    assert cluster.status["RestartCount"] == {"trainer": 1, "launcher": 0}
    assert LAUNCHER in cluster.live()


def test_scope_all_recreates_the_workers_at_once_and_the_launcher_after_they_run() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("nodeNotReady", RestartScope.ALL),))
    cluster = running(job)
    cluster.nodes = nodes(*DEAD_B)
    first = cluster.step(100)
    assert sorted(c.name for c in first.creates) == sorted(name_of("trainer", i, 1) for i in range(3))
    assert sorted(d.name for d in first.deletes) == sorted([*TRAINERS, LAUNCHER])
    cluster.terminate_deleted()
    assert cluster.step(101).creates == ()  # the trainers are not running yet
    cluster.run_all(102)
    second = cluster.step(103)
    assert [c.name for c in second.creates] == [name_of("launcher", 0, 1)]
    assert second.restarts == () and cluster.status["RestartCount"] == {"trainer": 1, "launcher": 0}
    cluster.run_all(104)
    assert condition(cluster.step(105))["type"] == "Running"


def test_two_failures_under_scope_replica_in_one_pass_are_one_restart() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("nodeNotReady", RestartScope.REPLICA),))
    cluster = running(job)
    cluster.pods[LAUNCHER].raw["spec"]["nodeName"] = "node-c"
    cluster.nodes = nodes(node("node-a", "False"), node("node-b", "False"), node("node-c"))
    result = cluster.step(100)
    assert [(r.replica, r.index) for r in result.restarts] == [("trainer", 0)] and len(result.creates) == 3
    assert cluster.status["RestartCount"]["trainer"] == 1


def test_two_failures_under_scope_pod_are_two_restarts() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    cluster.pods[TRAINERS[1]].deleted(100, 0)
    result = cluster.step(101)
    assert [r.index for r in result.restarts] == [0, 1] and cluster.status["RestartCount"]["trainer"] == 2


# ---------------------------------------------------------------------------------------------
# restartLimit


def failing_trainer_job(limit: int) -> Any:
    """Trainers restart on exit code 1 (scope Pod) and their failures fail the job."""
    return with_replica(
        seed_job(),
        "trainer",
        restart_limit=limit,
        fail_policy=Policy.ANY,
        rules=(exit_rule("1"),),
    )


def test_restart_limit_2_lets_two_failures_restart_and_fails_the_job_on_the_third() -> None:
    cluster = running(failing_trainer_job(2))
    for n, now in enumerate((100, 200), start=1):
        live = next(name for name in cluster.live("trainer") if name.endswith("-0"))
        cluster.pods[live].exited(1)
        result = cluster.step(now)
        assert result.outcome is None and cluster.status["RestartCount"]["trainer"] == n
        cluster.terminate_deleted()
        cluster.run_all(now + 1)
        cluster.step(now + 2)
    cluster.pods[name_of("trainer", 0, 2)].exited(1)
    result = cluster.step(300)
    assert result.outcome is not None and result.outcome.reason == "RestartLimitExceeded"
    assert result.creates == ()
    assert condition(result)["message"] == (
        f"pod {name_of('trainer', 0, 2)} of replica trainer failed: container aitj-0 exited with code 1; "
        "restartLimit 2 of replica trainer is used up (2 restarts), so exitCode 1 is not restarted"
    )
    assert cluster.status["RestartCount"]["trainer"] == 2


def test_restart_limit_counts_the_whole_replica_not_one_index() -> None:
    cluster = running(failing_trainer_job(1))
    cluster.pods[TRAINERS[0]].exited(1)
    cluster.step(100)
    cluster.pods[TRAINERS[1]].exited(1)
    result = cluster.step(101)
    assert result.outcome is not None and result.outcome.reason == "RestartLimitExceeded"


def test_an_exhausted_limit_under_fail_policy_none_leaves_the_failure_standing() -> None:
    cluster = running(with_replica(seed_job(), "trainer", restart_limit=0))
    cluster.pods[TRAINERS[1]].deleted(100, 0)
    result = cluster.step(101)
    assert result.creates == () and result.outcome is None and result.release == ()
    assert cluster.status["replicaStatuses"]["trainer"]["failed"] == 1


def test_restart_limit_unset_is_unlimited() -> None:
    job = failing_trainer_job(0)
    job = with_replica(job, "trainer", restart_limit=None)
    cluster = running(job)
    cluster.job = with_status(
        cluster.job,
        {
            **cluster.status,
            "restartLedger": {"trainer": {"epoch": 0, "seen": [0, 0, 0], "restarts": {"1": [-1, 500]}}},
        },
    )
    cluster.pods[TRAINERS[0]].exited(1)
    result = cluster.step(100)
    assert len(result.creates) == 1 and cluster.status["RestartCount"]["trainer"] == 501


# ---------------------------------------------------------------------------------------------
# restartTimeLimit: an old pod stuck terminating is force-deleted


def dead_node_cluster() -> Cluster:
    cluster = running()
    cluster.nodes = nodes(*DEAD_B)
    cluster.step(100)  # the old trainer 2 is deleted gracefully; its replacement created
    assert cluster.pods[TRAINERS[2]].view().deleting
    return cluster


def test_a_graceful_delete_of_the_old_pod_asks_to_be_woken_at_restart_time_limit() -> None:
    cluster = running()
    cluster.nodes = nodes(*DEAD_B)
    assert cluster.step(100).requeue_after == 60


def test_an_old_pod_terminating_within_restart_time_limit_is_left_alone() -> None:
    result = dead_node_cluster().step(159)
    assert result.deletes == () and result.requeue_after == 1


def test_an_old_pod_still_terminating_after_restart_time_limit_is_deleted_with_grace_0() -> None:
    cluster = dead_node_cluster()
    result = cluster.step(160)
    assert result.deletes == (
        PodDelete(
            TRAINERS[2],
            "uid-trainer-2-0",
            0,
            DeleteReason.STUCK,
            "still terminating 60s after its deletion started (restartTimeLimit)",
        ),
    )
    assert [e.reason for e in result.events] == ["ForceDeletingPod"]
    assert TRAINERS[2] not in cluster.pods
    assert result.creates == () and result.restarts == ()


# ---------------------------------------------------------------------------------------------
# restartTimeout: a replacement that never runs


def stuck_replacement(fail_policy: Policy) -> tuple[Cluster, Plan]:
    job = with_replica(seed_job(), "trainer", restart_timeout=600, fail_policy=fail_policy)
    cluster = running(job)
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    cluster.step(100)  # the replacement is created at 100 and never scheduled
    waiting = cluster.step(101)
    return cluster, waiting


def test_a_pending_replacement_asks_to_be_woken_at_its_restart_timeout() -> None:
    _, waiting = stuck_replacement(Policy.ANY)
    assert waiting.requeue_after == 599


def test_a_replacement_not_running_within_restart_timeout_fails_the_job_with_reason_restart_timeout() -> None:
    cluster, _ = stuck_replacement(Policy.ANY)
    result = cluster.step(700)
    assert result.outcome is not None and result.outcome.reason == "RestartTimeout"
    assert condition(result)["reason"] == "RestartTimeout"
    assert (
        f"replacement pod {name_of('trainer', 0, 1)} was not Running within restartTimeout 600s"
        in (condition(result)["message"])
    )


def test_a_restart_timeout_under_fail_policy_none_is_a_failed_trainer_only() -> None:
    cluster, _ = stuck_replacement(Policy.NONE)
    result = cluster.step(700)
    assert result.outcome is None and result.creates == () and result.deletes == ()
    assert cluster.status["replicaStatuses"]["trainer"]["failed"] == 1


# ---------------------------------------------------------------------------------------------
# Failures while a restart is under way; idempotence; crashes


def test_the_old_pod_failing_again_while_being_replaced_is_not_counted_twice() -> None:
    cluster = running()
    cluster.nodes = nodes(*DEAD_B)
    cluster.step(100)
    old = cluster.pods[TRAINERS[2]]
    old.exited(137)  # the old pod finally dies on its way out
    old.raw["metadata"]["finalizers"] = ["aitj.kongming.cce.baiudbce.com/pod-tracking"]
    result = cluster.step(110)
    assert result.restarts == () and result.creates == ()
    assert cluster.status["RestartCount"]["trainer"] == 1


def test_a_replacement_that_fails_itself_is_a_new_restart() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    cluster.step(100)
    cluster.pods[name_of("trainer", 0, 1)].on("node-b")
    cluster.nodes = nodes(*DEAD_B)
    result = cluster.step(110)
    assert [c.name for c in result.creates] == [name_of("trainer", 0, 2), name_of("trainer", 2, 1)]
    assert cluster.status["RestartCount"]["trainer"] == 3


def test_the_same_failure_planned_twice_gives_the_same_plan() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    assert cluster.plan(101) == cluster.plan(101)


@pytest.mark.parametrize(
    ("creates", "status", "rest"),
    [
        pytest.param(False, False, False, id="crash before anything was done"),
        pytest.param(True, False, False, id="crash after the creates, before the status write"),
        pytest.param(True, True, False, id="crash after the status write, before the deletes"),
        pytest.param(False, True, False, id="a failed create then only the status written"),
    ],
)
def test_a_crash_mid_pass_ends_with_one_pod_per_index_and_the_exact_count(
    creates: bool, status: bool, rest: bool
) -> None:
    cluster = running()
    cluster.nodes = nodes(*DEAD_B)
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    cluster.step(100, creates=creates, status=status, rest=rest)
    cluster.step(101)
    cluster.step(102)
    cluster.terminate_deleted()
    cluster.run_all(103)
    cluster.step(104)
    assert cluster.live("trainer") == sorted(
        [name_of("trainer", 0, 1), TRAINERS[1], name_of("trainer", 2, 1)]
    )
    assert cluster.status["RestartCount"]["trainer"] == 2 and cluster.status["totalRestarts"] == 2
    assert cluster.status["phase"] == "Running"


def test_a_crash_after_some_creates_of_a_replica_restart_recreates_the_rest_without_counting() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("nodeNotReady", RestartScope.REPLICA),))
    cluster = running(job)
    cluster.nodes = nodes(*DEAD_B)
    result = cluster.plan(100)
    partial = Plan(creates=result.creates[-1:])  # only the last create landed, then the operator died
    cluster.apply(partial, 100)
    again = cluster.step(101)
    assert sorted(c.name for c in again.creates) == sorted(name_of("trainer", i, 1) for i in range(2))
    assert again.restarts == result.restarts  # recorded by this pass, as the one that decided it
    assert cluster.status["RestartCount"]["trainer"] == 1


def test_a_crash_after_the_worker_creates_of_a_scope_all_restart_still_replaces_the_launcher_once() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("nodeNotReady", RestartScope.ALL),))
    cluster = running(job)
    cluster.nodes = nodes(*DEAD_B)
    first = cluster.step(100, status=False, rest=False)  # trainers created; status and deletes lost
    again = cluster.step(101)
    assert again.restarts == first.restarts and len(cluster.status["restarts"]) == 1
    assert sorted(d.name for d in again.deletes) == sorted([*TRAINERS, LAUNCHER])
    cluster.terminate_deleted()
    cluster.run_all(102)
    last = cluster.step(103)
    assert [c.name for c in last.creates] == [name_of("launcher", 0, 1)]
    assert cluster.status["RestartCount"] == {"trainer": 1, "launcher": 0}


def test_a_pod_stamped_with_an_older_epoch_is_replaced_without_counting() -> None:
    cluster = running()
    ledger = {
        **cluster.status["restartLedger"],
        "trainer": {**cluster.status["restartLedger"]["trainer"], "epoch": 1},
    }
    cluster.job = with_status(cluster.job, {**cluster.status, "restartLedger": ledger})
    result = cluster.step(100)
    assert sorted(c.name for c in result.creates) == sorted(name_of("trainer", i, 1) for i in range(3))
    assert result.restarts == () and cluster.status["RestartCount"]["trainer"] == 0


def test_the_ledger_on_the_new_pods_recounts_a_lost_status_exactly() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    cluster.pods[TRAINERS[1]].deleted(100, 0)
    first = cluster.step(100, status=False, rest=False)
    result = cluster.step(101)
    assert result.restarts == first.restarts and cluster.status["RestartCount"]["trainer"] == 2


def test_a_pod_that_vanished_without_the_finalizer_is_pod_force_deleted() -> None:
    cluster = running()
    del cluster.pods[TRAINERS[1]]
    result = cluster.step(100)
    assert [c.name for c in result.creates] == [name_of("trainer", 1, 1)]
    assert result.restarts[0].failure.kind == "PodForceDeleted" and result.restarts[0].latency_seconds is None


def test_a_replacement_not_yet_seen_is_created_again_not_counted_again() -> None:
    cluster = running()
    cluster.pods[TRAINERS[1]].deleted(100, 0)
    cluster.step(100, creates=False)  # the create failed; the status (and the release) went through
    assert TRAINERS[1] not in cluster.pods
    result = cluster.step(101)
    assert [c.name for c in result.creates] == [name_of("trainer", 1, 1)]
    assert result.restarts == () and cluster.status["RestartCount"]["trainer"] == 1


# ---------------------------------------------------------------------------------------------
# Policies on the seed shape


def test_an_evicted_trainer_is_not_restarted_by_the_seeds_rule() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].disrupted("EvictionByEvictionAPI").deleted(100, 30)
    result = cluster.step(101)
    assert result.creates == () and cluster.status["replicaStatuses"]["trainer"]["failed"] == 1


def test_a_preempted_trainer_is_restarted_when_a_rule_names_pod_preempted() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("PodPreempted,PodEvicted"),))
    cluster = running(job)
    cluster.pods[TRAINERS[0]].exited(137).disrupted("PreemptionByScheduler")
    assert [r.failure.kind for r in cluster.step(101).restarts] == ["PodPreempted"]


def test_without_fault_tolerance_restart_policy_on_failure_restarts_with_the_replica_scope() -> None:
    job = seed_job(
        trainer(restart_policy=RestartPolicy.ON_FAILURE, restart_scope=RestartScope.REPLICA),
        launcher(),
        fault_tolerant=False,
    )
    cluster = running(job)
    cluster.pods[TRAINERS[1]].exited(3)
    result = cluster.step(100)
    assert len(result.creates) == 3 and result.restarts[0].rule == "restartPolicy OnFailure"


def test_restart_policy_never_lets_a_launcher_failure_fail_the_job() -> None:
    job = with_replica(seed_job(), "launcher", restart_policy=RestartPolicy.NEVER)
    cluster = running(job)
    cluster.pods[LAUNCHER].exited(129)
    result = cluster.step(100)
    assert result.outcome is not None and result.outcome.phase == "Failed" and result.creates == ()


def test_restarts_decided_in_the_pass_the_job_fails_are_dropped() -> None:
    cluster = running()
    cluster.pods[LAUNCHER].exited(1)
    cluster.pods[TRAINERS[0]].deleted(100, 0)
    result = cluster.step(101)
    assert result.outcome is not None and result.creates == () and result.restarts == ()
    assert cluster.status["RestartCount"]["trainer"] == 0
