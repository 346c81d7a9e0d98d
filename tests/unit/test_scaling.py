"""Scaling decisions (issue 6): replicas edits of a job that has run, as scale operations.

Scale-out pods join the host list together once they all run; scale-in pods leave it first and
are deleted after the grace period; a scale-out that misses scaleTimeout (or loses a pod for
good) is rolled back, replicas included; edits in flight, restarts and failures during a scale
end in a consistent state. Each scenario runs the planner pass by pass on the simulated
cluster of tests/unit/builders.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from aitj.core.api import InvalidJob, JobStatus, Policy, ScaleOperation, ScaleOperationStatus, parse_job
from aitj.core.planner import Plan, ReplicasPatch, plan
from aitj.core.planner.scaling import Op, current_indices, vacant_indices
from tests.unit.builders import (
    JOB,
    Cluster,
    Pod,
    as_json,
    at,
    name_of,
    nodes,
    running_seed,
    seed_job,
    views,
    with_replica,
    with_status,
)

T = [name_of("trainer", i) for i in range(6)]
SEED_MESSAGE = (
    "trainingJob default/{job} {op} Operation {op} scale num {n} scale pods [{pods}], "
    "replicas name trainer job version {v}"
)


def seed_message(op: str, pods: list[str], version: int) -> str:
    return SEED_MESSAGE.format(job=JOB, op=op, n=len(pods), pods=" ".join(pods), v=version)


def running(trainers: int = 3, **changes: Any) -> Cluster:
    """running: the seed job with ``trainers`` Running trainers and its launcher, planned once
    (so its status is written: Running, host list, current replicas)."""
    job = with_replica(seed_job(), "trainer", replicas=trainers, max_replicas=6, **changes)
    pods = [Pod("trainer", i).running() for i in range(trainers)] + [Pod("launcher", 0).running(2)]
    cluster = Cluster(job, pods)
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def scale(cluster: Cluster, replicas: int, **changes: Any) -> None:
    """scale: the user edits spec.replicaSpecs.trainer.replicas (metadata.generation goes up)."""
    job = with_replica(cluster.job, "trainer", replicas=replicas, **changes)
    cluster.job = dataclasses.replace(job, generation=job.generation + 1)


def set_back(cluster: Cluster, result: Plan) -> None:
    """set_back: the executor's JSON patch of a rollback (test, then replace)."""
    for p in result.spec_replicas:
        if cluster.job.spec.replica(p.replica).replicas == p.expected:
            cluster.job = with_replica(cluster.job, p.replica, replicas=p.value)


def condition(cluster: Cluster) -> tuple[str, str, str]:
    c = cluster.status["conditions"][-1]
    return c["type"], c["reason"], c["message"]


def hosts(cluster: Cluster) -> list[str]:
    return list(cluster.status.get("discoveryHosts") or [])


def op(cluster: Cluster) -> dict[str, Any]:
    """op: the trainer's scale operation in flight ({} when there is none)."""
    found: dict[str, Any] = (cluster.status.get("scaling") or {}).get("trainer") or {}
    return found


def history(cluster: Cluster) -> list[tuple[str, str, int, int]]:
    return [(h["operation"], h["reason"], h["from"], h["to"]) for h in cluster.status.get("scaleHistory", [])]


def trainers(cluster: Cluster) -> list[str]:
    return cluster.live("trainer")


# ---------------------------------------------------------------------------------------------
# Scale-out


def test_scale_out_creates_the_next_index_and_says_so_in_the_seeds_words() -> None:
    cluster = running()
    scale(cluster, 4)
    result = cluster.step(20)
    assert [(c.index, c.generation) for c in result.creates] == [(3, 0)]
    assert condition(cluster) == ("Scaling", "TrainingJobScaling", seed_message("scaleout", [T[3]], 1))
    assert [(e.type, e.reason, e.message) for e in result.events] == [
        ("Normal", "TrainingJobScaling", seed_message("scaleout", [T[3]], 1))
    ]
    assert op(cluster) == {
        "operation": "scaleout",
        "version": 1,
        "generation": 2,
        "from": 3,
        "to": 4,
        "indices": [3],
        "pods": [T[3]],
        "started": "2022-01-14T09:02:12Z",
        "deadline": "2022-01-14T09:12:12Z",
    }
    assert result.requeue_after == 600  # scaleTimeout
    assert hosts(cluster) == T[:3]


def test_the_new_pod_joins_the_host_list_only_once_it_runs_then_the_job_is_running_again() -> None:
    cluster = running()
    scale(cluster, 4)
    cluster.step(20)
    cluster.pods[T[3]].creating()
    assert cluster.step(22).hosts is None  # scheduled, not running: not in the list
    cluster.pods[T[3]].running(24)
    result = cluster.step(24)
    assert result.hosts is not None and [h.pod for h in result.hosts] == T[:4]
    assert condition(cluster) == ("Running", "TrainingJobRunning", "all pods are running")
    assert op(cluster) == {} and cluster.status["currentReplicas"]["trainer"] == 4
    assert history(cluster) == [("scaleout", "ScaleSucceeded", 3, 4)]
    assert [e.reason for e in result.events] == ["TrainingJobScaled"]
    types = [(c["type"], c["status"]) for c in cluster.status["conditions"]]
    assert types[-3:] == [("Running", "False"), ("Scaling", "False"), ("Running", "True")]


def test_new_pods_join_the_host_list_together_not_one_by_one() -> None:
    cluster = running()
    scale(cluster, 5)
    cluster.step(20)
    cluster.pods[T[3]].running(21)
    cluster.step(21)
    assert hosts(cluster) == T[:3] and condition(cluster)[0] == "Scaling"
    cluster.pods[T[4]].running(23)
    cluster.step(23)
    assert hosts(cluster) == T[:5]


def test_the_job_version_counts_scale_operations_not_spec_edits() -> None:
    cluster = running()
    cluster.job = dataclasses.replace(cluster.job, generation=7)
    scale(cluster, 4)
    cluster.step(20)
    cluster.run_all(21)
    cluster.step(21)
    scale(cluster, 5)
    cluster.step(30)
    assert condition(cluster)[2] == seed_message("scaleout", [T[4]], 2)
    assert op(cluster)["generation"] == 9


def test_a_launcher_restarted_during_a_scale_out_does_not_wait_for_the_new_pods() -> None:
    cluster = running()
    scale(cluster, 4)
    cluster.step(20)
    launcher = name_of("launcher", 0)
    cluster.pods[launcher].exited(129, finished=25)
    result = cluster.step(26)
    assert [(c.replica, c.generation) for c in result.creates] == [("launcher", 1)]


# ---------------------------------------------------------------------------------------------
# Scale-out timeout: rollback


def timed_out(timeout: int = 30) -> tuple[Cluster, Plan]:
    cluster = running(scale_timeout=timeout)
    scale(cluster, 5, scale_timeout=timeout)
    cluster.step(20)
    cluster.pods[T[3]].running(22)  # one of two runs; the other never gets a node
    cluster.step(22)
    return cluster, cluster.step(20 + timeout)


def test_a_scale_out_not_running_within_scale_timeout_is_rolled_back() -> None:
    cluster, result = timed_out()
    assert sorted(d.name for d in result.deletes) == sorted(T[3:5]) and result.creates == ()
    assert result.spec_replicas == (ReplicasPatch("trainer", 5, 3),)
    why = f"pods [{T[4]}] were not Running within scaleTimeout 30s"
    assert condition(cluster) == (
        "Scaling",
        "TrainingJobScaleRollback",
        f"trainingJob default/{JOB} rollback Operation scaleout scale num 2 scale pods [{T[3]} {T[4]}], "
        f"replicas name trainer job version 1: {why}; replicas set back to 3",
    )
    assert history(cluster) == [("rollback", "ScaleTimeout", 3, 5)]
    assert cluster.status["scaleHistory"][-1]["message"] == (
        f"replica trainer: scaleout from 3 to 5 (job version 1) rolled back: {why}; "
        f"pods [{T[3]} {T[4]}] removed, replicas set back to 3"
    )
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "TrainingJobScaleRollback")]
    assert hosts(cluster) == T[:3]  # the pod that ran never joined


def test_the_rollback_waits_for_replicas_to_be_set_back_then_the_job_runs_again() -> None:
    cluster, _ = timed_out()
    again = cluster.step(51)  # the patch has not landed yet: asked again, nothing created
    assert again.spec_replicas == (ReplicasPatch("trainer", 5, 3),) and again.creates == ()
    assert op(cluster)["operation"] == "rollback"
    set_back(cluster, again)
    cluster.terminate_deleted()
    cluster.step(52)
    assert condition(cluster) == ("Running", "TrainingJobRunning", "all pods are running")
    assert op(cluster) == {} and trainers(cluster) == sorted(T[:3])
    assert cluster.status["currentReplicas"]["trainer"] == 3


def test_a_user_edit_during_the_rollback_wins_and_is_a_new_scale() -> None:
    cluster, _ = timed_out()
    scale(cluster, 4)  # the rollback's test fails against this value
    result = cluster.step(51)
    assert result.spec_replicas == ()
    assert (op(cluster)["operation"], op(cluster)["version"]) == ("scaleout", 2)


def test_the_deadline_of_a_scale_out_survives_an_operator_restart() -> None:
    cluster = running(scale_timeout=30)
    scale(cluster, 4, scale_timeout=30)
    cluster.step(20)
    cluster.step(40)  # any later pass, by the same or a restarted operator, reads it from status
    assert cluster.step(50).spec_replicas == (ReplicasPatch("trainer", 4, 3),)


def test_a_new_pod_that_fails_for_good_rolls_the_scale_out_back_at_once_and_does_not_fail_the_job() -> None:
    cluster = running(fail_policy=Policy.ANY)
    scale(cluster, 4)
    cluster.step(20)
    cluster.pods[T[3]].exited(1, finished=25)  # exit code 1: no rule restarts it
    result = cluster.step(26)
    assert result.outcome is None and cluster.status["phase"] == "Scaling"
    assert result.spec_replicas == (ReplicasPatch("trainer", 4, 3),)
    assert history(cluster) == [("rollback", "ScaleFailed", 3, 4)]
    assert cluster.status["scaleHistory"][-1]["message"].startswith(
        f"replica trainer: scaleout from 3 to 4 (job version 1) rolled back: pod {T[3]} failed: "
        "container aitj-0 exited with code 1"
    )


def test_a_new_pod_force_deleted_during_the_scale_out_is_restarted_and_the_scale_goes_on() -> None:
    cluster = running()
    scale(cluster, 4)
    cluster.step(20)
    cluster.pods[T[3]].running(21).deleted(22, grace=0)
    result = cluster.step(23)
    assert [(c.index, c.generation) for c in result.creates] == [(3, 1)]
    assert cluster.status["RestartCount"]["trainer"] == 1 and op(cluster) != {}
    cluster.run_all(24)
    cluster.step(24)
    assert hosts(cluster) == [*T[:3], name_of("trainer", 3, 1)]
    assert history(cluster) == [("scaleout", "ScaleSucceeded", 3, 4)]
    assert cluster.status["scaleHistory"][-1]["pods"] == [name_of("trainer", 3, 1)]


# ---------------------------------------------------------------------------------------------
# Scale-in


def test_scale_in_takes_the_highest_indices_out_of_the_host_list_first_and_deletes_nothing_yet() -> None:
    cluster = running(4)
    scale(cluster, 2)
    result = cluster.step(20)
    assert result.hosts is not None and [h.pod for h in result.hosts] == T[:2]
    assert result.deletes == () and result.release == () and result.requeue_after == 60
    assert condition(cluster) == ("Scaling", "TrainingJobScaling", seed_message("scalein", T[2:4], 1))
    assert op(cluster)["draining"] == T[2:4]
    assert cluster.status["replicaStatuses"]["trainer"]["active"] == 2
    assert cluster.status["trainerReplicas"] == 2


def test_the_leaving_pods_are_deleted_once_the_grace_period_is_over() -> None:
    cluster = running(4)
    scale(cluster, 2)
    cluster.step(20)
    assert cluster.step(79).deletes == ()
    result = cluster.step(80)
    assert sorted(d.name for d in result.deletes) == T[2:4] and sorted(result.release) == T[2:4]
    assert condition(cluster) == ("Running", "TrainingJobRunning", "all pods are running")
    assert history(cluster) == [("scalein", "ScaleSucceeded", 4, 2)]
    assert cluster.status["scaleHistory"][-1]["message"] == (
        f"replica trainer: scalein from 4 to 2 (job version 1) done: pods [{T[2]} {T[3]}] deleted, "
        "60s after leaving the host list"
    )
    assert cluster.status["currentReplicas"]["trainer"] == 2 and op(cluster) == {}


@pytest.mark.parametrize(
    ("grace", "deleted_at"),
    [
        pytest.param(5, 25, id="scaleInGracePeriod 5 deletes them 5 s after they left the list"),
        pytest.param(0, 20, id="scaleInGracePeriod 0 deletes them at once"),
    ],
)
def test_the_grace_period_is_the_replicas_own(grace: int, deleted_at: int) -> None:
    cluster = running(4, scale_in_grace_period=grace)
    scale(cluster, 3)
    first = cluster.step(20)
    result = first if deleted_at == 20 else cluster.step(deleted_at)
    assert [d.name for d in result.deletes] == [T[3]]


def test_a_pod_not_in_the_host_list_leaves_at_once() -> None:
    cluster = running(4)
    cluster.pods[T[3]].raw["status"] = {"phase": "Pending"}  # say it was never Running
    cluster.pods[T[3]].raw["spec"].pop("nodeName")
    cluster.step(15)
    assert hosts(cluster) == T[:3]
    scale(cluster, 3)
    result = cluster.step(20)
    assert [d.name for d in result.deletes] == [T[3]]
    assert history(cluster) == [("scalein", "ScaleSucceeded", 4, 3)]


def test_without_plugin_discovery_there_is_no_list_to_leave_so_the_pods_go_at_once() -> None:
    job = with_replica(seed_job(discovery=False), "trainer", replicas=4)
    cluster = Cluster(job, [Pod("trainer", i).running() for i in range(4)] + [Pod("launcher", 0).running(2)])
    cluster.step(10)
    scale(cluster, 2)
    assert sorted(d.name for d in cluster.step(20).deletes) == T[2:4]


def test_named_pods_leave_first_and_their_index_stays_vacant() -> None:
    cluster = running(4)
    scale(cluster, 3, scale_in_pods=(T[1],))
    result = cluster.step(20)
    assert result.hosts is not None and [h.pod for h in result.hosts] == [T[0], T[2], T[3]]
    cluster.step(80)
    cluster.terminate_deleted()
    cluster.step(81)
    assert trainers(cluster) == sorted([T[0], T[2], T[3]])
    assert cluster.status["vacantIndices"] == {"trainer": [1]}
    assert cluster.status["replicaStatuses"]["trainer"]["running"] == 3
    assert condition(cluster)[0] == "Running"


def test_named_pods_short_of_the_count_are_made_up_by_the_highest_index() -> None:
    cluster = running(5)
    scale(cluster, 3, scale_in_pods=(T[0], "not-a-pod-of-this-job"))
    cluster.step(20)
    assert hosts(cluster) == T[1:4]


def test_a_scale_out_fills_a_vacant_index_first_with_a_new_generation() -> None:
    cluster = running(4)
    scale(cluster, 3, scale_in_pods=(T[1],))
    cluster.step(20)
    cluster.step(80)
    cluster.terminate_deleted()
    cluster.step(81)
    scale(cluster, 5)
    result = cluster.step(90)
    assert [(c.index, c.generation) for c in result.creates] == [(1, 1), (4, 0)]
    cluster.run_all(91)
    cluster.step(91)
    assert "vacantIndices" not in cluster.status and cluster.status["currentReplicas"]["trainer"] == 5


# ---------------------------------------------------------------------------------------------
# Edits while an operation is in flight


def test_scaling_back_in_during_the_grace_period_keeps_the_pods_and_they_rejoin_the_list() -> None:
    cluster = running(4)
    scale(cluster, 2)
    cluster.step(20)
    scale(cluster, 4)
    result = cluster.step(30)
    assert result.deletes == () and result.creates == ()
    assert hosts(cluster) == T[:4] and op(cluster) == {}
    assert history(cluster) == [("rollback", "ScaleCancelled", 4, 2)]
    assert condition(cluster)[0] == "Running"


def test_scaling_back_during_a_scale_out_removes_its_pods_at_once() -> None:
    cluster = running()
    scale(cluster, 5)
    cluster.step(20)
    scale(cluster, 3)
    result = cluster.step(25)
    assert sorted(d.name for d in result.deletes) == sorted(T[3:5])
    assert history(cluster) == [("rollback", "ScaleCancelled", 3, 5)]
    assert cluster.status["scaleHistory"][-1]["message"].endswith(f"pods [{T[3]} {T[4]}] removed")


def test_a_larger_edit_during_a_scale_out_keeps_its_pods_and_adds_more() -> None:
    cluster = running()
    scale(cluster, 4)
    cluster.step(20)
    scale(cluster, 5)
    result = cluster.step(25)
    assert [c.index for c in result.creates] == [4] and result.deletes == ()
    assert (op(cluster)["from"], op(cluster)["to"], op(cluster)["version"]) == (
        3,
        5,
        2,
    )


def test_scaling_in_further_during_a_scale_in_keeps_draining_the_pods_already_leaving() -> None:
    cluster = running(5)
    scale(cluster, 4)
    cluster.step(20)
    scale(cluster, 3)
    result = cluster.step(30)
    assert result.deletes == () and hosts(cluster) == T[:3]
    assert op(cluster)["draining"] == T[3:5]
    assert op(cluster)["deadline"] == "2022-01-14T09:03:22Z"  # 30 + 60


# ---------------------------------------------------------------------------------------------
# Restarts and failures during a scale


def test_a_scale_out_during_a_restart_ends_with_every_pod_running_and_the_restart_counted_once() -> None:
    cluster = running()
    cluster.pods[T[1]].deleted(15, grace=0)  # force-deleted: the rule restarts it
    cluster.step(16)
    assert cluster.status["phase"] == "Restarting"
    scale(cluster, 4)
    cluster.step(17)
    assert condition(cluster)[0] == "Scaling"
    cluster.run_all(18)
    cluster.step(18)
    cluster.step(19)
    assert condition(cluster) == ("Running", "TrainingJobRunning", "all pods are running")
    assert trainers(cluster) == sorted([T[0], name_of("trainer", 1, 1), T[2], T[3]])
    assert hosts(cluster) == [T[0], name_of("trainer", 1, 1), T[2], T[3]]
    assert cluster.status["RestartCount"]["trainer"] == 1
    assert history(cluster) == [("scaleout", "ScaleSucceeded", 3, 4)]


def test_a_scale_in_of_an_index_being_restarted_deletes_its_replacement_at_once() -> None:
    cluster = running()
    cluster.pods[T[2]].deleted(15, grace=0)
    cluster.step(16)  # the replacement of index 2 is created, not running yet
    scale(cluster, 2)
    result = cluster.step(17)
    assert [d.name for d in result.deletes] == [name_of("trainer", 2, 1)]
    cluster.terminate_deleted()
    cluster.step(18)
    assert trainers(cluster) == sorted(T[:2]) and hosts(cluster) == T[:2]
    assert condition(cluster)[0] == "Running" and cluster.status["RestartCount"]["trainer"] == 1
    assert history(cluster) == [("scalein", "ScaleSucceeded", 3, 2)]


def test_a_staying_pod_that_fails_during_a_scale_in_is_restarted_and_the_scale_in_goes_on() -> None:
    cluster = running(4)
    scale(cluster, 2)
    cluster.step(20)
    cluster.pods[T[0]].deleted(30, grace=0)
    result = cluster.step(31)
    assert [(c.index, c.generation) for c in result.creates] == [(0, 1)]
    assert condition(cluster)[0] == "Restarting" and op(cluster) != {}
    cluster.run_all(32)
    cluster.step(80)
    assert history(cluster) == [("scalein", "ScaleSucceeded", 4, 2)]
    assert cluster.status["RestartCount"]["trainer"] == 1 and condition(cluster)[0] == "Running"


def test_a_leaving_pod_that_fails_during_its_grace_period_is_not_a_restart() -> None:
    cluster = running(4)
    scale(cluster, 3)
    cluster.step(20)
    cluster.pods[T[3]].deleted(30, grace=0)
    result = cluster.step(31)
    assert result.creates == () and result.release == (T[3],)
    assert cluster.status["RestartCount"]["trainer"] == 0 and condition(cluster)[0] == "Scaling"


@pytest.mark.parametrize(
    "lost",
    [
        pytest.param({"status": False}, id="a pass whose status write was lost is planned again the same"),
        pytest.param(
            {"rest": False}, id="a pass that stopped after its status write is finished by the next"
        ),
    ],
)
def test_an_operator_crash_in_the_middle_of_a_scale_leaves_one_pod_per_index(lost: dict[str, bool]) -> None:
    cluster = running()
    scale(cluster, 4)
    cluster.step(20, **lost)
    cluster.step(21)
    cluster.run_all(22)
    cluster.step(22)
    assert trainers(cluster) == sorted(T[:4]) and hosts(cluster) == T[:4]
    assert history(cluster) == [("scaleout", "ScaleSucceeded", 3, 4)]


def test_a_rollback_whose_spec_patch_was_lost_is_asked_again_not_read_as_a_new_scale_out() -> None:
    cluster, result = timed_out()
    later = cluster.step(60)  # no set_back: the patch never landed
    assert later.creates == () and later.spec_replicas == result.spec_replicas
    assert [h["operation"] for h in cluster.status["scaleHistory"]] == ["rollback"]


# ---------------------------------------------------------------------------------------------
# Before the job has run, and the pieces


def test_an_edit_before_the_job_has_run_just_changes_what_is_created() -> None:
    job = seed_job()
    first = plan(job, [], nodes(), at(0))
    job = with_replica(with_status(job, first.status), "trainer", replicas=2)
    pods = [Pod("trainer", i) for i in range(3)]
    result = plan(job, views(pods), nodes(), at(5))
    assert [d.name for d in result.deletes] == [T[2]] and result.events == ()
    assert result.status is not None and as_json(result.status)["phase"] == "Pending"
    assert (
        "scaling" not in as_json(result.status) and as_json(result.status)["currentReplicas"]["trainer"] == 2
    )


def test_a_job_from_before_scaling_existed_adopts_its_replicas_without_scaling() -> None:
    pods = running_seed()
    status = {"phase": "Running", "startRunningTime": "2022-01-14T09:01:55Z"}
    result = plan(seed_job(status=status), views(pods), nodes(), at(30))
    assert result.status is not None and as_json(result.status)["phase"] == "Running"
    assert as_json(result.status)["currentReplicas"] == {"trainer": 3, "launcher": 1}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param({}, None, id="nothing recorded"),
        pytest.param({"currentReplicas": {"trainer": 3}}, (0, 1, 2), id="a count is the first indices"),
        pytest.param(
            {"currentReplicas": {"trainer": 3}, "vacantIndices": {"trainer": [0, 2]}},
            (1, 3, 4),
            id="vacant indices are skipped",
        ),
        pytest.param({"currentReplicas": {"trainer": "3"}}, None, id="junk is not recorded"),
    ],
)
def test_current_indices_read_from_status(status: dict[str, Any], expected: tuple[int, ...] | None) -> None:
    assert current_indices(JobStatus.from_json(status), "trainer") == expected


def test_vacant_indices_are_the_holes_below_the_highest_index() -> None:
    assert vacant_indices((1, 3, 4)) == [0, 2] and vacant_indices(()) == [] and vacant_indices((0, 1)) == []


def test_an_operation_reads_back_what_it_writes_and_junk_is_no_operation() -> None:
    original = Op(
        "trainer",
        ScaleOperation.SCALE_IN,
        version=3,
        generation=5,
        source=4,
        target=2,
        indices=(2, 3),
        started=at(1),
        deadline=at(61),
        pods=(T[2], T[3]),
        draining=(T[2],),
    )
    assert Op.from_status("trainer", original.to_status()) == original
    assert Op.from_status("trainer", ScaleOperationStatus.from_json({"operation": "grow"})) is None
    negative = ScaleOperationStatus.from_json({**original.to_status().to_json(), "indices": [-1]})
    assert Op.from_status("trainer", negative) is None


# ---------------------------------------------------------------------------------------------
# The two replica fields scaling adds to the model


def trainer_with(**fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "tiny"},
        "spec": {
            "faultTolerant": True,
            "replicaSpecs": {"trainer": {**fields, "template": {"spec": {"containers": [{"name": "c"}]}}}},
        },
    }


@pytest.mark.parametrize(
    ("fields", "grace", "pods"),
    [
        pytest.param({}, 60, (), id="unset, the grace period is 60 s and no pod is named"),
        pytest.param({"scaleInGracePeriod": 0}, 0, (), id="a grace period of 0 is allowed"),
        pytest.param({"scaleInpods": ["a-trainer-xxxxx-1"]}, 60, ("a-trainer-xxxxx-1",), id="scaleInpods"),
    ],
)
def test_the_model_reads_the_scale_in_fields(
    fields: dict[str, Any], grace: int, pods: tuple[str, ...]
) -> None:
    r = parse_job(trainer_with(**fields)).spec.replica("trainer")
    assert (r.scale_in_grace_period, r.scale_in_pods) == (grace, pods)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        pytest.param(
            {"scaleInGracePeriod": -1}, "spec.replicaSpecs.trainer.scaleInGracePeriod", id="negative grace"
        ),
        pytest.param(
            {"scaleInpods": "a-pod"}, "spec.replicaSpecs.trainer.scaleInpods", id="scaleInpods not a list"
        ),
        pytest.param(
            {"scaleInpods": [7]}, "spec.replicaSpecs.trainer.scaleInpods[0]", id="a pod name not a string"
        ),
        pytest.param(
            {"scaleInpods": ["x" * 64]}, "spec.replicaSpecs.trainer.scaleInpods[0]", id="a name too long"
        ),
    ],
)
def test_the_model_refuses_bad_scale_in_fields(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidJob) as refused:
        parse_job(trainer_with(**fields))
    assert [e.path for e in refused.value.errors] == [path]


def test_deadlines_are_whole_seconds_rounded_up_so_they_never_come_early_once_read_back() -> None:
    cluster = running(4, scale_in_grace_period=3)
    scale(cluster, 3)
    result = plan(cluster.job, [p.view() for p in cluster.pods.values()], cluster.nodes, at(20.4))
    assert result.status is not None
    assert (
        as_json(result.status)["scaling"]["trainer"]["deadline"] == "2022-01-14T09:02:16Z"
    )  # 20.4 + 3 -> 24
    assert result.requeue_after == pytest.approx(3.6)


def test_scale_events_have_stable_names_so_a_pass_planned_twice_says_it_once() -> None:
    cluster = running()
    scale(cluster, 4)
    first = cluster.plan(20)
    again = cluster.plan(20.5)  # the same pass again, from the same (not yet updated) status
    assert (
        [e.name for e in first.events]
        == [e.name for e in again.events]
        == ["test-horovod-elastic.e4b904c7.scale-1-began"]
    )


# ---------------------------------------------------------------------------------------------
# The CRD keeps every status field scaling writes (the apiserver prunes what its schema lacks)

STATUS_SCHEMA = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "crds" / "aitrainingjobs.yaml").read_text()
)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]


def pruned(value: Any, schema: dict[str, Any], path: str = "status") -> list[str]:
    """pruned: the paths in ``value`` that ``schema`` has no place for."""
    if isinstance(value, dict):
        out = []
        for key, sub in value.items():
            node = schema.get("properties", {}).get(key) or schema.get("additionalProperties")
            out += [f"{path}.{key}"] if not isinstance(node, dict) else pruned(sub, node, f"{path}.{key}")
        return out
    if isinstance(value, list):
        return [p for item in value for p in pruned(item, schema.get("items", {}), f"{path}[]")]
    return []


def test_every_status_field_scaling_writes_is_in_the_crd() -> None:
    statuses = []
    cluster = running(5)
    scale(cluster, 3, scale_in_pods=(T[1],))
    cluster.step(20)
    statuses.append(cluster.status)  # a scale-in in flight: draining
    cluster.step(80)
    scale(cluster, 6, scale_timeout=5)
    cluster.step(81)
    statuses.append(cluster.status)  # a scale-out in flight, a vacant index, history
    cluster.step(90)
    statuses.append(cluster.status)  # a rollback in flight: reason, message
    for status in statuses:
        assert {"scaling", "currentReplicas"} <= set(status)
        assert pruned(status, STATUS_SCHEMA) == []
    assert "vacantIndices" in statuses[1] and "scaleHistory" in statuses[1]
    assert statuses[2]["scaling"]["trainer"]["reason"] == "ScaleTimeout"
