"""The planner's job lifecycle (issue 4): phases and condition history, launcher gating,
completePolicy / failPolicy, cleanPodPolicy, timeLimit, status fields and the host list."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core.api import LABEL_JOB, LABEL_REPLICA, MAX_STATUS_CONDITIONS, CleanPodPolicy, Policy
from aitj.core.observed import ANNOTATION_HOSTS, ANNOTATION_LEDGER
from aitj.core.planner import HostEntry, ObjectKind, ObjectRef, Plan, plan
from tests.unit.builders import (
    JOB,
    Cluster,
    Pod,
    as_json,
    at,
    launcher,
    name_of,
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


def current(result: Plan) -> dict[str, Any]:
    assert result.status is not None
    condition: dict[str, Any] = as_json(result.status)["conditions"][-1]
    assert condition["status"] == "True" and as_json(result.status)["phase"] == condition["type"]
    return condition


# ---------------------------------------------------------------------------------------------
# The seed's story: Pending -> Creating -> Running, trainers first, the launcher after them


def test_a_new_job_creates_its_trainers_and_not_yet_the_launcher() -> None:
    result = plan(seed_job(), [], nodes(), at(0))
    assert [c.name for c in result.creates] == TRAINERS
    assert [(c.replica, c.index, c.generation) for c in result.creates] == [
        ("trainer", i, 0) for i in range(3)
    ]
    assert current(result) == {
        "type": "Pending",
        "status": "True",
        "reason": "TrainingJobPending",
        "message": "all pods are waiting for scheduling",
        "lastProbeTime": "2022-01-14T09:01:52Z",
        "lastTransitionTime": "2022-01-14T09:01:52Z",
    }


def test_created_pods_carry_the_restart_counts_and_the_ledger_stamp() -> None:
    create = plan(seed_job(), [], nodes(), at(0)).creates[0]
    env = {e["name"]: e.get("value") for e in create.body["spec"]["containers"][0]["env"]}
    assert env["TRAININGJOB_REPLICA_RESTARTCOUNT"] == "0"
    assert create.body["metadata"]["annotations"] == {ANNOTATION_LEDGER: "{}"}
    assert create.body["metadata"]["name"] == create.name  # the survey's name, not computed again


def test_the_seed_timeline_gives_the_seeds_condition_history() -> None:
    cluster = Cluster(seed_job())
    cluster.step(0)  # trainers created: Pending
    cluster.run_all(1)
    cluster.step(1)  # trainers run: launcher created
    cluster.pods[LAUNCHER].creating()
    cluster.step(1)  # launcher scheduled, init container running
    cluster.run_all(35)
    cluster.step(35)
    history = [(c["type"], c["status"], c["reason"], c["message"]) for c in cluster.status["conditions"]]
    assert history == [
        ("Pending", "False", "TrainingJobPending", "all pods are waiting for scheduling"),
        ("Creating", "False", "TrainingJobCreating", f"pods [{LAUNCHER}] creating containers"),
        ("Running", "True", "TrainingJobRunning", "all pods are running"),
    ]
    assert cluster.status["phase"] == "Running"


@pytest.mark.parametrize(
    ("pods", "phase", "message"),
    [
        pytest.param(
            [Pod("trainer", i) for i in range(3)],
            "Pending",
            "all pods are waiting for scheduling",
            id="trainers created but none scheduled is Pending",
        ),
        pytest.param(
            [Pod("trainer", 0).creating(), Pod("trainer", 1), Pod("trainer", 2)],
            "Creating",
            f"pods [{' '.join(TRAINERS)} {LAUNCHER}] creating containers",
            id="one trainer scheduled is Creating and lists every pod not yet running",
        ),
        pytest.param(
            [Pod("trainer", i).running() for i in range(3)],
            "Creating",
            f"pods [{LAUNCHER}] creating containers",
            id="trainers running and the launcher just created is Creating the launcher",
        ),
        pytest.param(running_seed(), "Running", "all pods are running", id="every pod running is Running"),
    ],
)
def test_phase_follows_the_pods(pods: list[Pod], phase: str, message: str) -> None:
    condition = current(plan(seed_job(), views(pods), nodes(), at(5)))
    assert (condition["type"], condition["message"]) == (phase, message)


def test_a_changed_pod_list_updates_the_creating_message_in_place() -> None:
    job = seed_job()
    first = plan(
        job, views([Pod("trainer", 0).creating(), Pod("trainer", 1), Pod("trainer", 2)]), nodes(), at(2)
    )
    job = with_status(job, first.status)
    pods = [Pod("trainer", 0).running(), Pod("trainer", 1).creating(), Pod("trainer", 2).creating()]
    second = plan(job, views(pods), nodes(), at(3))
    assert second.status is not None
    assert len(as_json(second.status)["conditions"]) == 1
    condition = current(second)
    assert condition["message"] == f"pods [{TRAINERS[1]} {TRAINERS[2]} {LAUNCHER}] creating containers"
    assert condition["lastTransitionTime"] == "2022-01-14T09:01:54Z" and condition["lastProbeTime"] == (
        "2022-01-14T09:01:55Z"
    )


def test_an_unchanged_job_writes_no_status_and_does_nothing() -> None:
    job = seed_job()
    job = with_status(job, running_status(job, running_seed()))
    pods = running_seed()
    (nudge,) = plan(job, views(pods), nodes(), at(500)).nudges  # the launcher, never nudged yet
    pods[3].raw["metadata"]["annotations"] = {ANNOTATION_HOSTS: nudge.digest}
    result = plan(job, views(pods), nodes(), at(500))
    assert result == Plan(status=None)


def test_planning_the_same_state_twice_gives_the_same_plan() -> None:
    pods = views([Pod("trainer", 0).creating(), Pod("trainer", 1).running()])
    assert plan(seed_job(), pods, nodes(), at(9)) == plan(seed_job(), pods, nodes(), at(9))


def test_each_new_condition_sets_the_previous_one_false() -> None:
    cluster = Cluster(seed_job())
    cluster.step(0)
    cluster.run_all(1)
    cluster.step(1)
    cluster.run_all(2)
    cluster.step(2)
    statuses = [c["status"] for c in cluster.status["conditions"]]
    assert statuses == ["False"] * (len(statuses) - 1) + ["True"]


def test_the_condition_history_is_bounded() -> None:
    old = [
        {"type": t, "status": "False", "reason": "x", "message": "x"}
        for t in ["Running", "Restarting"] * MAX_STATUS_CONDITIONS
    ]
    old[-1]["status"] = "True"
    job = seed_job(status={"phase": "Restarting", "conditions": old})
    result = plan(job, views(running_seed()), nodes(), at(5))
    assert result.status is not None
    assert len(as_json(result.status)["conditions"]) == MAX_STATUS_CONDITIONS
    assert current(result)["type"] == "Running"


# ---------------------------------------------------------------------------------------------
# Launcher gating


@pytest.mark.parametrize(
    ("trainers", "launcher_created"),
    [
        pytest.param(
            [Pod("trainer", i).running() for i in range(2)], False, id="a missing trainer holds the launcher"
        ),
        pytest.param(
            [Pod("trainer", 0).running(), Pod("trainer", 1).running(), Pod("trainer", 2).creating()],
            False,
            id="a trainer creating containers holds the launcher",
        ),
        pytest.param(
            [Pod("trainer", i).running() for i in range(3)], True, id="every trainer running lets it go"
        ),
        pytest.param(
            [Pod("trainer", 0).running(), Pod("trainer", 1).running(), Pod("trainer", 2).exited(0)],
            True,
            id="a trainer that succeeded does not hold the launcher",
        ),
        pytest.param(
            [Pod("trainer", 0).running(), Pod("trainer", 1).running(), Pod("trainer", 2).exited(1)],
            True,
            id="a trainer failure that stands under failPolicy None does not hold the launcher",
        ),
        pytest.param(
            [
                Pod("trainer", 0).running(),
                Pod("trainer", 1).running(),
                Pod("trainer", 2).running().deleted(9, 30),
            ],
            False,
            id="a trainer being replaced holds the launcher",
        ),
    ],
)
def test_the_launcher_waits_for_every_worker(trainers: list[Pod], launcher_created: bool) -> None:
    result = plan(seed_job(), views(trainers), nodes(), at(10))
    assert (LAUNCHER in [c.name for c in result.creates]) is launcher_created


def test_every_worker_replica_gates_the_master() -> None:
    job = seed_job(trainer(), trainer(name="ps", replicas=1), launcher())
    pods = [Pod("trainer", i).running() for i in range(3)]
    result = plan(job, views(pods), nodes(), at(10))
    assert [c.name for c in result.creates] == [name_of("ps", 0)]


def test_a_job_with_only_a_master_creates_it_at_once() -> None:
    result = plan(seed_job(launcher()), [], nodes(), at(0))
    assert [c.name for c in result.creates] == [LAUNCHER]


# ---------------------------------------------------------------------------------------------
# Outcome: the seed's policies


def finish(job: Any, pods: list[Pod], now: float = 100) -> Plan:
    job = with_status(job, running_status(job, running_seed()))
    return plan(job, views(pods), nodes(), at(now))


def test_the_launcher_exiting_0_makes_the_seed_job_succeed() -> None:
    pods = running_seed()
    pods[3].exited(0)
    result = finish(seed_job(), pods)
    condition = current(result)
    assert (condition["type"], condition["reason"]) == ("Succeeded", "TrainingJobSucceeded")
    assert result.outcome is not None and result.outcome.reason == "TrainingJobSucceeded"
    assert result.status is not None and as_json(result.status)["completionTime"] == "2022-01-14T09:03:32Z"
    assert result.events[0].type == "Normal" and result.creates == ()


def test_the_launcher_exiting_1_fails_the_seed_job_naming_the_pod_and_the_code() -> None:
    pods = running_seed()
    pods[3].exited(1)
    condition = current(finish(seed_job(), pods))
    assert (condition["type"], condition["reason"]) == ("Failed", "TrainingJobFailed")
    assert condition["message"] == (
        f"pod {LAUNCHER} of replica launcher failed: container aitj-0 exited with code 1; "
        "exitCode 1 matches no faultTolerantPolicy rule of replica launcher"
    )


def test_a_trainer_failure_under_fail_policy_none_leaves_the_seed_job_running() -> None:
    pods = running_seed()
    pods[1].exited(1)
    result = finish(seed_job(), pods)
    assert result.status is not None and as_json(result.status)["phase"] == "Running"
    assert as_json(result.status)["replicaStatuses"]["trainer"] == {
        "active": 2,
        "pending": 0,
        "running": 2,
        "succeeded": 0,
        "failed": 1,
    }
    assert result.outcome is None and result.creates == () and result.deletes == ()


def states(*codes: int | None) -> list[Pod]:
    """Trainer pods: None running, 0 succeeded, anything else that exit code (no rule matches)."""
    return [
        Pod("trainer", i).running() if c is None else Pod("trainer", i).exited(c) for i, c in enumerate(codes)
    ]


@pytest.mark.parametrize(
    ("policy", "codes", "succeeded"),
    [
        pytest.param(Policy.ALL, (0, 0, 0), True, id="All with every pod succeeded completes"),
        pytest.param(Policy.ALL, (0, 0, None), False, id="All with one pod running does not complete"),
        pytest.param(Policy.ANY, (None, 0, None), True, id="Any with one pod succeeded completes"),
        pytest.param(Policy.ANY, (None, None, None), False, id="Any with none succeeded does not complete"),
        pytest.param(Policy.RANK0, (0, None, None), True, id="Rank0 with index 0 succeeded completes"),
        pytest.param(Policy.RANK0, (None, 0, 0), False, id="Rank0 ignores the other indices"),
        pytest.param(Policy.NONE, (0, 0, 0), False, id="None never completes"),
    ],
)
def test_replica_complete_policy(policy: Policy, codes: tuple[int | None, ...], succeeded: bool) -> None:
    job = seed_job(trainer(complete_policy=policy), complete_policy=Policy.ANY)
    result = plan(job, views(states(*codes)), nodes(), at(100))
    assert (result.outcome is not None and result.outcome.phase == "Succeeded") is succeeded


@pytest.mark.parametrize(
    ("policy", "codes", "failed"),
    [
        pytest.param(Policy.ALL, (1, 1, 1), True, id="All with every pod failed fails"),
        pytest.param(Policy.ALL, (1, 1, None), False, id="All with one pod running does not fail"),
        pytest.param(Policy.ANY, (None, 1, None), True, id="Any with one pod failed fails"),
        pytest.param(Policy.RANK0, (1, None, None), True, id="Rank0 with index 0 failed fails"),
        pytest.param(Policy.RANK0, (None, 1, 1), False, id="Rank0 ignores failures of other indices"),
        pytest.param(Policy.NONE, (1, 1, 1), False, id="None never fails"),
    ],
)
def test_replica_fail_policy(policy: Policy, codes: tuple[int | None, ...], failed: bool) -> None:
    job = seed_job(trainer(fail_policy=policy, complete_policy=Policy.NONE), fail_policy=Policy.ANY)
    result = plan(job, views(states(*codes)), nodes(), at(100))
    assert (result.outcome is not None and result.outcome.phase == "Failed") is failed


@pytest.mark.parametrize(
    ("job_policy", "trainer_done", "ps_done", "succeeded"),
    [
        pytest.param(Policy.ALL, True, True, True, id="job All with both replica types done succeeds"),
        pytest.param(Policy.ALL, True, False, False, id="job All with one replica type done goes on"),
        pytest.param(Policy.ANY, False, True, True, id="job Any with one replica type done succeeds"),
        pytest.param(Policy.NONE, True, True, False, id="job None never succeeds"),
    ],
)
def test_job_complete_policy(job_policy: Policy, trainer_done: bool, ps_done: bool, succeeded: bool) -> None:
    job = seed_job(
        trainer(complete_policy=Policy.ALL, replicas=1),
        trainer(name="ps", complete_policy=Policy.ALL, replicas=1),
        complete_policy=job_policy,
    )
    pods = [
        Pod("trainer", 0).exited(0) if trainer_done else Pod("trainer", 0).running(),
        Pod("ps", 0).exited(0) if ps_done else Pod("ps", 0).running(),
    ]
    result = plan(job, views(pods), nodes(), at(100))
    assert (result.outcome is not None and result.outcome.phase == "Succeeded") is succeeded


def test_replica_types_with_complete_policy_none_do_not_take_part() -> None:
    # Seed: job completePolicy Any over the launcher only (trainer None); trainers succeeding do nothing.
    pods = running_seed()
    for p in pods[:3]:
        p.exited(0)
    assert finish(seed_job(), pods).outcome is None


def test_job_fail_policy_all_needs_every_taking_part_replica_to_fail() -> None:
    job = seed_job(
        trainer(fail_policy=Policy.ANY, replicas=1),
        trainer(name="ps", fail_policy=Policy.ANY, replicas=1),
        fail_policy=Policy.ALL,
    )
    one = plan(job, views([Pod("trainer", 0).exited(1), Pod("ps", 0).running()]), nodes(), at(100))
    both = plan(job, views([Pod("trainer", 0).exited(1), Pod("ps", 0).exited(1)]), nodes(), at(100))
    assert one.outcome is None
    assert both.outcome is not None and both.outcome.phase == "Failed"


def test_success_is_checked_before_failure() -> None:
    job = seed_job(
        trainer(complete_policy=Policy.ANY, fail_policy=Policy.ANY),
        complete_policy=Policy.ANY,
        fail_policy=Policy.ANY,
    )
    result = plan(job, views(states(0, 1, None)), nodes(), at(100))
    assert result.outcome is not None and result.outcome.phase == "Succeeded"


# ---------------------------------------------------------------------------------------------
# Cleanup


def finished_pods() -> list[Pod]:
    pods = running_seed()
    pods[0].exited(0)
    pods[3].exited(0)  # the launcher succeeds: the seed job succeeds
    return pods


@pytest.mark.parametrize(
    ("clean", "deleted", "resources"),
    [
        pytest.param(
            CleanPodPolicy.ALL,
            [TRAINERS[0], TRAINERS[1], TRAINERS[2], LAUNCHER],
            (ObjectRef(ObjectKind.SERVICE, JOB),),
            id="cleanPodPolicy All deletes every pod and the Service",
        ),
        pytest.param(
            CleanPodPolicy.RUNNING,
            [TRAINERS[1], TRAINERS[2]],
            (),
            id="cleanPodPolicy Running deletes only the pods still running",
        ),
        pytest.param(CleanPodPolicy.NONE, [], (), id="cleanPodPolicy None deletes nothing"),
    ],
)
def test_clean_pod_policy_on_finish(
    clean: CleanPodPolicy, deleted: list[str], resources: tuple[ObjectRef, ...]
) -> None:
    result = finish(seed_job(clean_pod_policy=clean), finished_pods())
    assert result.outcome is not None
    assert [d.name for d in result.deletes] == deleted
    assert all(d.grace_period_seconds is None for d in result.deletes)
    assert tuple(r for r in result.removes if r.kind is not ObjectKind.PDB) == resources


def test_a_finished_job_releases_every_finalizer() -> None:
    result = finish(seed_job(), finished_pods())
    assert sorted(result.release) == sorted([*TRAINERS, LAUNCHER])


def test_a_finished_job_stays_quiet_and_keeps_cleaning() -> None:
    job = seed_job(clean_pod_policy=CleanPodPolicy.ALL)
    done = finish(job, finished_pods())
    job = with_status(job, done.status)
    pods = finished_pods()
    pods[1].deleted(100, 30)  # already on its way out: not deleted again
    later = plan(job, views(pods), nodes(), at(200))
    assert later.status is None and later.creates == () and later.outcome is None and later.events == ()
    assert [d.name for d in later.deletes] == [TRAINERS[0], TRAINERS[2], LAUNCHER]


def test_a_finished_job_never_restarts_anything() -> None:
    job = with_status(seed_job(), {"phase": "Failed"})
    pods = [Pod("trainer", 0).running().deleted(100, 0)]
    result = plan(job, views(pods), {}, at(200))
    assert result.creates == () and result.restarts == () and result.status is None


# ---------------------------------------------------------------------------------------------
# timeLimit


def test_time_limit_counts_from_running_and_asks_to_be_woken_then() -> None:
    job = seed_job(time_limit=3600)
    status = running_status(job, running_seed(), now=10)
    assert status["startRunningTime"] == "2022-01-14T09:02:02Z"
    result = plan(with_status(job, status), views(running_seed()), nodes(), at(1000))
    assert result.outcome is None and result.requeue_after == 2610


def test_time_limit_exceeded_is_timeout_and_cleans_per_policy() -> None:
    job = seed_job(time_limit=3600, clean_pod_policy=CleanPodPolicy.RUNNING)
    job = with_status(job, running_status(job, running_seed(), now=10))
    result = plan(job, views(running_seed()), nodes(), at(3610))
    condition = current(result)
    assert (condition["type"], condition["reason"]) == ("Timeout", "TrainingJobTimeout")
    assert condition["message"] == "job ran longer than timeLimit 3600s (running since 2022-01-14T09:02:02Z)"
    assert sorted(d.name for d in result.deletes) == sorted([*TRAINERS, LAUNCHER])


def test_time_limit_does_not_count_while_the_job_is_pending() -> None:
    job = seed_job(time_limit=60)
    result = plan(job, views([Pod("trainer", i) for i in range(3)]), nodes(), at(10_000))
    assert result.outcome is None and result.requeue_after is None


# ---------------------------------------------------------------------------------------------
# Status fields


def test_status_fields_of_a_running_job() -> None:
    job = seed_job(generation=4)
    status = running_status(job, running_seed(), now=10)
    assert status["RestartCount"] == {"trainer": 0, "launcher": 0} and status["totalRestarts"] == 0
    assert status["replicaStatuses"]["trainer"] == {
        "active": 3,
        "pending": 0,
        "running": 3,
        "succeeded": 0,
        "failed": 0,
    }
    assert status["startTime"] == "2022-01-14T09:02:02Z"
    assert status["observedGeneration"] == 4
    assert status["trainerReplicas"] == 3
    assert status["selector"] == f"{LABEL_JOB}={JOB},{LABEL_REPLICA}=trainer"


def test_start_time_is_kept_from_the_first_pass() -> None:
    job = seed_job()
    first = plan(job, [], nodes(), at(0))
    later = plan(with_status(job, first.status), views(running_seed()), nodes(), at(50))
    assert later.status is not None and as_json(later.status)["startTime"] == "2022-01-14T09:01:52Z"


def test_a_job_without_a_trainer_replica_has_no_scale_fields() -> None:
    result = plan(seed_job(launcher()), [], nodes(), at(0))
    assert (
        result.status is not None
        and "selector" not in as_json(result.status)
        and "trainerReplicas" not in as_json(result.status)
    )


def test_unknown_status_fields_are_kept() -> None:
    job = seed_job(status={"scaleHistory": [{"operation": "scaleout"}]})
    result = plan(job, [], nodes(), at(0))
    assert result.status is not None and as_json(result.status)["scaleHistory"] == [{"operation": "scaleout"}]


# ---------------------------------------------------------------------------------------------
# Discovery host list


def test_the_host_list_is_the_running_workers() -> None:
    pods = [Pod("trainer", 0).running(), Pod("trainer", 1).creating(), Pod("trainer", 2).running()]
    # At 7 s: 6 s after they ran, their wave's hold is over (trainer 1 still starts; test_host_waves).
    result = plan(seed_job(), views(pods), nodes(), at(7))
    assert result.hosts == (HostEntry(TRAINERS[0], "trainer", 0), HostEntry(TRAINERS[2], "trainer", 2))
    assert result.status is not None and as_json(result.status)["discoveryHosts"] == [
        TRAINERS[0],
        TRAINERS[2],
    ]


def test_an_unchanged_host_list_is_not_rewritten() -> None:
    job = seed_job()
    job = with_status(job, running_status(job, running_seed()))
    pods = running_seed()
    pods[3].creating()  # the launcher changes; the workers do not
    assert plan(job, views(pods), nodes(), at(20)).hosts is None


def test_without_plugin_discovery_there_is_no_host_list() -> None:
    result = plan(seed_job(discovery=False), views(running_seed()), nodes(), at(5))
    assert (
        result.hosts is None and result.status is not None and "discoveryHosts" not in as_json(result.status)
    )
    assert result.nudges == ()


def test_the_running_launcher_is_nudged_once_per_host_list_and_never_the_workers() -> None:
    # The annotation makes the launcher's kubelet rewrite /etc/edl at once (docs/pods.md).
    cluster = Cluster(seed_job(), running_seed())
    first = cluster.step(20)
    assert [n.name for n in first.nudges] == [LAUNCHER]
    assert cluster.step(21).nudges == ()  # nudged: nothing until the list changes
    cluster.job = with_replica(cluster.job, "trainer", replicas=4)
    cluster.step(22)  # the fourth trainer is created
    cluster.pods[name_of("trainer", 3)].running(23)
    joined = cluster.step(24)
    assert joined.discovery is not None and [n.name for n in joined.nudges] == [LAUNCHER]
    assert joined.nudges[0].digest != first.nudges[0].digest
    assert cluster.step(25).nudges == ()


def test_a_launcher_not_yet_running_is_not_nudged() -> None:
    pods = [*running_seed()[:3], Pod("launcher", 0).creating()]
    assert plan(seed_job(), views(pods), nodes(), at(5)).nudges == ()


# ---------------------------------------------------------------------------------------------
# Pods that are not the job's own, and the scaling seam (issue 6 builds on it)


def test_pods_of_other_jobs_are_ignored() -> None:
    stranger = Pod("trainer", 0).running()
    stranger.raw["metadata"]["labels"][LABEL_JOB] = "another-job"
    result = plan(seed_job(), views([stranger]), nodes(), at(0))
    assert len(result.creates) == 3 and result.deletes == ()


def test_a_pod_of_a_replica_no_longer_in_the_spec_is_removed() -> None:
    job = seed_job(trainer(), launcher())
    pods = [*running_seed(), Pod("ps", 0).running()]
    result = plan(job, views(pods), nodes(), at(5))
    assert [d.name for d in result.deletes] == [name_of("ps", 0)] and result.release == (name_of("ps", 0),)


def test_scale_out_of_a_running_job_creates_the_next_indices_with_the_seeds_message() -> None:
    job = seed_job()
    job = with_status(job, running_status(job, running_seed()))
    job = with_replica(job, "trainer", replicas=4)
    result = plan(job, views(running_seed()), nodes(), at(30))
    assert [c.name for c in result.creates] == [name_of("trainer", 3)]
    condition = current(result)
    assert condition["type"] == "Scaling" and condition["message"] == (
        f"trainingJob default/{JOB} scaleout Operation scaleout scale num 1 scale pods "
        f"[{name_of('trainer', 3)}], replicas name trainer job version 1"
    )


def test_scale_in_takes_the_highest_index_out_of_the_host_list_then_deletes_it() -> None:
    job = seed_job()
    pods = running_seed()
    job = with_status(job, running_status(job, pods))
    job = with_replica(job, "trainer", replicas=2)
    result = plan(job, views(pods), nodes(), at(30))
    assert current(result)["type"] == "Scaling" and result.creates == () and result.deletes == ()
    assert result.hosts == (HostEntry(TRAINERS[0], "trainer", 0), HostEntry(TRAINERS[1], "trainer", 1))
    later = plan(with_status(job, result.status), views(pods), nodes(), at(90))  # the 60 s grace
    assert [d.name for d in later.deletes] == [TRAINERS[2]] and later.release == (TRAINERS[2],)


def test_an_index_scaled_in_and_out_again_gets_a_new_name() -> None:
    cluster = Cluster(seed_job(), running_seed())
    cluster.step(10)
    cluster.job = with_replica(cluster.job, "trainer", replicas=2)
    cluster.step(20)
    cluster.step(80)  # the scale-in grace period is over: the pod goes
    cluster.terminate_deleted()
    cluster.step(90)
    cluster.job = with_replica(cluster.job, "trainer", replicas=3)
    result = cluster.step(100)
    assert [(c.index, c.generation) for c in result.creates] == [(2, 1)]
    assert result.restarts == ()


@pytest.mark.parametrize(
    ("job", "pods", "text"),
    [
        pytest.param(
            seed_job(),
            finished_pods(),
            "replicas [launcher] succeeded (job completePolicy Any)",
            id="the seed succeeding names the launcher",
        ),
        pytest.param(
            seed_job(complete_policy=Policy.ALL, replicas=(trainer(complete_policy=Policy.ANY), launcher())),
            finished_pods(),
            "replicas [trainer, launcher] succeeded (job completePolicy All)",
            id="completePolicy All names every replica that succeeded",
        ),
    ],
)
def test_the_outcome_message_names_the_replicas_it_talks_about(job: Any, pods: list[Pod], text: str) -> None:
    result = finish(job, pods)
    assert result.outcome is not None and result.outcome.message == text
    assert result.status is not None and as_json(result.status)["conditions"][-1]["message"] == text
