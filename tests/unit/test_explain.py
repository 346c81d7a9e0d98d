"""``aitj explain`` (aitj.core.explain): what the operator sees of each pod and which rule fires, as
tables; every case is also checked against the planner's own Plan, and every case of the policy
decide table (tests/unit/test_policy.py) against the planner's decision."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

import pytest

from aitj.cli.explain_text import render
from aitj.core.api import Job, Phase, RestartPolicy, RestartScope
from aitj.core.explain import Explanation, PodExplanation, RuleOutcome, UnknownPod, Verdict, explain
from aitj.core.explain.verdicts import rule_entries
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import plan
from aitj.core.planner.core import plan_and_assessment
from aitj.core.policy import RuleCheck, RuleWhy
from tests.unit.builders import (
    Cluster,
    Pod,
    as_json,
    at,
    event_rule,
    name_of,
    node,
    nodes,
    running_seed,
    running_status,
    seed_job,
    views,
    with_replica,
    with_status,
)
from tests.unit.test_policy import FAILURES, RULES, WITH_RULES, WITHOUT_RULES, N

TRAINERS = [name_of("trainer", i) for i in range(3)]
LAUNCHER = name_of("launcher", 0)
DEAD_B = nodes(node("node-a"), node("node-b", "False", since=95))


@dataclass(frozen=True)
class Scene:
    """Scene: what ``explain`` is given."""

    job: Job
    pods: list[PodView]
    nodes: Mapping[str, NodeView]
    now: datetime


def running(
    job: Job | None = None, change: Callable[[list[Pod]], object] | None = None, now: float = 200
) -> Scene:
    """running: the seed job Running (trainer 2 on node-b, the rest on node-a), then ``change``."""
    job = job or seed_job()
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    job = with_status(job, running_status(job, pods))
    if change is not None:
        change(pods)
    return Scene(job, views(pods), nodes(), at(now))


def on_nodes(scene: Scene, node_views: Mapping[str, NodeView]) -> Scene:
    return dataclasses.replace(scene, nodes=node_views)


def launcher_exits(code: int) -> Callable[[list[Pod]], object]:
    return lambda pods: pods[3].exited(code)


def trainer0(step: Callable[[Pod], object]) -> Callable[[list[Pod]], object]:
    return lambda pods: step(pods[0]) and None


def drop(index: int) -> Callable[[list[Pod]], object]:
    return lambda pods: pods.pop(index) and None


def launcher_rules(policy: RestartPolicy) -> Job:
    return with_replica(seed_job(), "launcher", restart_policy=policy)


def trainer_rules(**changes: object) -> Job:
    return with_replica(seed_job(), "trainer", **changes)


def limited_after_one_restart() -> Scene:
    """A trainer with restartLimit 1 that was already restarted once, force-deleted again."""
    job = trainer_rules(restart_limit=1)
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.step(101)
    cluster.run_all(102)
    cluster.step(103)
    assert cluster.status["phase"] == "Running" and cluster.status["RestartCount"]["trainer"] == 1
    cluster.pods[TRAINERS[1]].deleted(150, grace=0)
    return Scene(cluster.job, [p.view() for p in cluster.pods.values()], cluster.nodes, at(151))


def restarted_on_a_dead_node(now: float) -> tuple[Scene, str]:
    """Trainer 2's node went NotReady and it was restarted: the old pod is still terminating
    (asked at 100 with grace 30 s; nothing on a dead node confirms it)."""
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    cluster = Cluster(seed_job(), pods)
    cluster.step(10)
    cluster.nodes = dict(DEAD_B)
    cluster.step(100)
    assert TRAINERS[2] in cluster.pods
    return Scene(cluster.job, [p.view() for p in cluster.pods.values()], cluster.nodes, at(now)), TRAINERS[2]


def replacement_pending(timeout: int | None, now: float) -> Scene:
    """Trainer 0 was force-deleted and replaced; the replacement (generation 1) is Pending."""
    job = trainer_rules(restart_timeout=timeout)
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.step(101)
    return Scene(cluster.job, [p.view() for p in cluster.pods.values()], cluster.nodes, at(now))


def finished() -> Scene:
    scene = running(change=launcher_exits(0))
    result = plan(scene.job, scene.pods, scene.nodes, scene.now)
    assert result.status is not None and as_json(result.status)["phase"] == "Succeeded"
    return dataclasses.replace(scene, job=with_status(scene.job, result.status))


def suspended() -> Scene:
    """suspended: the running seed job, then ``spec.suspend`` set."""
    scene = running()
    return dataclasses.replace(
        scene, job=dataclasses.replace(scene.job, spec=dataclasses.replace(scene.job.spec, suspend=True))
    )


# ---------------------------------------------------------------------------------------------
# One pod's verdict, and the rules' reasons

Rules = list[tuple[RuleOutcome, str]]


@pytest.mark.parametrize(
    ("scene", "pod", "verdict", "summary", "rules"),
    [
        pytest.param(
            running(),
            TRAINERS[0],
            Verdict.HEALTHY,
            "healthy: nothing to do",
            [],
            id="a running pod is healthy with nothing to do",
        ),
        pytest.param(
            running(change=launcher_exits(129)),
            LAUNCHER,
            Verdict.RESTART,
            "restart: rule exitCodes 129,101 restarts scope Pod",
            [(RuleOutcome.FIRES, "names exit code 129"), (RuleOutcome.NOT_TRIED, "an earlier rule fired")],
            id="an exit code named by the first rule restarts the launcher with that rule's scope",
        ),
        pytest.param(
            running(change=launcher_exits(1)),
            LAUNCHER,
            Verdict.FAILS,
            "fails (NoMatchingRule): exitCode 1 matches no faultTolerantPolicy rule of replica launcher",
            [
                (RuleOutcome.NO_MATCH, "does not name exit code 1"),
                (RuleOutcome.NO_MATCH, "an exceptionalEvent rule, and the failure is exit code 1"),
            ],
            id="an exit code no rule names goes to the launcher's failPolicy",
        ),
        pytest.param(
            on_nodes(running(), DEAD_B),
            TRAINERS[2],
            Verdict.RESTART,
            "restart: rule exceptionalEvent nodeNotReady,PodForceDeleted restarts scope Pod",
            [(RuleOutcome.FIRES, "names nodeNotReady")],
            id="a trainer on a NotReady node is restarted by the nodeNotReady rule",
        ),
        pytest.param(
            on_nodes(running(), nodes(node("node-a"))),
            TRAINERS[2],
            Verdict.RESTART,
            "restart: rule exceptionalEvent nodeNotReady,PodForceDeleted",
            [(RuleOutcome.FIRES, "names nodeNotReady")],
            id="a trainer whose node is gone counts as nodeNotReady",
        ),
        pytest.param(
            running(change=trainer0(lambda p: p.deleted(190, grace=0))),
            TRAINERS[0],
            Verdict.RESTART,
            "restart: rule exceptionalEvent nodeNotReady,PodForceDeleted restarts scope Pod",
            [(RuleOutcome.FIRES, "names PodForceDeleted")],
            id="a force-deleted trainer is restarted by the PodForceDeleted rule",
        ),
        pytest.param(
            running(change=trainer0(lambda p: p.disrupted("EvictionByEvictionAPI", 190))),
            TRAINERS[0],
            Verdict.FAILS,
            "fails (NoMatchingRule): PodEvicted matches no faultTolerantPolicy rule of replica trainer",
            [(RuleOutcome.NO_MATCH, "does not name PodEvicted")],
            id="an evicted trainer fails when no rule names PodEvicted",
        ),
        pytest.param(
            running(change=trainer0(lambda p: p.evicted_by_kubelet())),
            TRAINERS[0],
            Verdict.FAILS,
            "PodEvicted matches no faultTolerantPolicy rule",
            [(RuleOutcome.NO_MATCH, "does not name PodEvicted")],
            id="a kubelet eviction is PodEvicted too",
        ),
        pytest.param(
            running(
                trainer_rules(rules=(event_rule("PodPreempted"),)),
                trainer0(lambda p: p.disrupted("PreemptionByScheduler", 190)),
            ),
            TRAINERS[0],
            Verdict.RESTART,
            "restart: rule exceptionalEvent PodPreempted restarts scope Pod",
            [(RuleOutcome.FIRES, "names PodPreempted")],
            id="a preempted trainer is restarted by a PodPreempted rule",
        ),
        pytest.param(
            limited_after_one_restart(),
            TRAINERS[1],
            Verdict.FAILS,
            "fails (RestartLimitExceeded): restartLimit 1 of replica trainer is used up (1 restarts), "
            "so PodForceDeleted is not restarted",
            [(RuleOutcome.FIRES, "names PodForceDeleted")],
            id="a failure a rule names fails once restartLimit is reached",
        ),
        pytest.param(
            running(launcher_rules(RestartPolicy.ON_NODE_FAIL), launcher_exits(129)),
            LAUNCHER,
            Verdict.FAILS,
            "fails (NotRestartable): restartPolicy OnNodeFail of replica launcher "
            "does not restart exitCode 129",
            [
                (RuleOutcome.INACTIVE, "restartPolicy OnNodeFail does not allow exit-code rules"),
                (RuleOutcome.NO_MATCH, "an exceptionalEvent rule, and the failure is exit code 129"),
            ],
            id="restartPolicy OnNodeFail makes the exit-code rule inactive",
        ),
        pytest.param(
            running(
                trainer_rules(restart_policy=RestartPolicy.EXIT_CODE), trainer0(lambda p: p.deleted(190))
            ),
            TRAINERS[0],
            Verdict.FAILS,
            "fails (NotRestartable): restartPolicy ExitCode of replica trainer "
            "does not restart PodForceDeleted",
            [(RuleOutcome.INACTIVE, "restartPolicy ExitCode does not allow exceptionalEvent rules")],
            id="restartPolicy ExitCode makes the exceptionalEvent rule inactive",
        ),
        pytest.param(
            running(launcher_rules(RestartPolicy.NEVER), launcher_exits(129)),
            LAUNCHER,
            Verdict.FAILS,
            "restartPolicy Never of replica launcher does not restart exitCode 129",
            [
                (RuleOutcome.INACTIVE, "restartPolicy Never does not allow exit-code rules"),
                (RuleOutcome.INACTIVE, "restartPolicy Never does not allow exceptionalEvent rules"),
            ],
            id="restartPolicy Never makes every rule inactive",
        ),
        pytest.param(
            running(
                dataclasses.replace(
                    launcher_rules(RestartPolicy.EXIT_CODE),
                    spec=dataclasses.replace(
                        launcher_rules(RestartPolicy.EXIT_CODE).spec, fault_tolerant=False
                    ),
                ),
                launcher_exits(1),
            ),
            LAUNCHER,
            Verdict.RESTART,
            "restart: restartPolicy ExitCode restarts scope Pod (faultTolerant is false)",
            [
                (RuleOutcome.IGNORED, "faultTolerant is false"),
                (RuleOutcome.IGNORED, "faultTolerant is false"),
            ],
            id="with faultTolerant false the rules are ignored and the restartPolicy restarts",
        ),
        pytest.param(
            Scene(seed_job(), views(running_seed()[:3]), nodes(), at(5)),
            LAUNCHER,
            Verdict.CREATE,
            "create: no pod yet; the next pass creates it",
            [],
            id="a launcher index without a pod is created once the workers run",
        ),
        pytest.param(
            Scene(
                seed_job(),
                views([Pod("trainer", 0).running(), Pod("trainer", 1).running(), Pod("trainer", 2)]),
                nodes(),
                at(5),
            ),
            LAUNCHER,
            Verdict.GATED,
            "gated: launcher pods are created only when every worker index runs",
            [],
            id="the launcher is gated while a trainer is still pending",
        ),
        pytest.param(
            running(change=drop(1)),
            TRAINERS[1],
            Verdict.RESTART,
            "restart: rule exceptionalEvent nodeNotReady,PodForceDeleted restarts scope Pod",
            [(RuleOutcome.FIRES, "names PodForceDeleted")],
            id="a trainer that vanished is restarted as PodForceDeleted",
        ),
        pytest.param(
            replacement_pending(864000, 110),
            name_of("trainer", 0, 1),
            Verdict.PENDING,
            "pending (not scheduled yet): nothing wrong, waiting for it to run",
            [],
            id="a replacement on its way is pending with nothing wrong",
        ),
        pytest.param(
            replacement_pending(5, 120),
            name_of("trainer", 0, 1),
            Verdict.FAILS,
            "fails (RestartTimeout): replacement pod",
            [(RuleOutcome.NOT_TRIED, "no rule restarts a RestartTimeout")],
            id="a replacement not running within restartTimeout fails the restart",
        ),
        pytest.param(
            restarted_on_a_dead_node(110)[0],
            TRAINERS[2],
            Verdict.REPLACED,
            "replaced by the operator: superseded by generation 1",
            [],
            id="the old pod of a restart is only waited for",
        ),
        pytest.param(
            running(
                trainer_rules(rules=(event_rule("nodeNotReady,PodForceDeleted", RestartScope.REPLICA),)),
                trainer0(lambda p: p.deleted(190, grace=0)),
            ),
            TRAINERS[1],
            Verdict.REPLACED,
            "replaced by the operator: restart scope: replaced by",
            [],
            id="a Replica-scope restart replaces the replica's healthy pods too",
        ),
        pytest.param(
            running(change=launcher_exits(0)),
            LAUNCHER,
            Verdict.SUCCEEDED,
            "succeeded: nothing to do",
            [],
            id="a launcher that exited 0 succeeded",
        ),
        pytest.param(
            finished(),
            TRAINERS[0],
            Verdict.CLEANUP,
            "not judged: the job has finished (Succeeded); cleanPodPolicy None: kept",
            [],
            id="a finished job's pods are not judged, only cleaned up",
        ),
        pytest.param(
            suspended(),
            TRAINERS[0],
            Verdict.CLEANUP,
            "not judged: the job is suspended (spec.suspend): its pods are deleted, no failure counts: "
            "deleted in the next pass",
            [],
            id="a suspended job's pods are not judged, only deleted",
        ),
    ],
)
def test_a_pod_is_explained(scene: Scene, pod: str, verdict: Verdict, summary: str, rules: Rules) -> None:
    e = explain(scene.job, scene.pods, scene.nodes, scene.now, pod)
    (p,) = e.pods
    assert p.name == pod
    assert p.verdict is verdict, p
    assert summary in p.summary
    assert [r.outcome for r in p.rules[: len(rules)]] == [outcome for outcome, _ in rules]
    for (_, why), rule in zip(rules, p.rules, strict=False):
        assert why in rule.why
    agrees_with_the_planner(scene, explain(scene.job, scene.pods, scene.nodes, scene.now))


def agrees_with_the_planner(scene: Scene, e: Explanation) -> None:
    """The pods explained as restarts are the planner's restarts, unless the job ends now."""
    result = plan(scene.job, scene.pods, scene.nodes, scene.now)
    restarted = {p.name for p in e.pods if p.verdict is Verdict.RESTART}
    if result.outcome is None:
        assert restarted == {r.pod for r in result.restarts}


# ---------------------------------------------------------------------------------------------
# What the operator sees


def test_a_pod_line_shows_replica_index_generation_phase_node_exit_code_and_deletion() -> None:
    scene = on_nodes(running(change=launcher_exits(1)), nodes(node("node-a", "Unknown"), node("node-b")))
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, LAUNCHER).pods
    assert (p.replica, p.index, p.generation, p.phase) == ("launcher", 0, 0, "Failed")
    assert (p.node, p.node_ready, p.exit_code, p.exit_container) == ("node-a", "Unknown", 1, "aitj-0")
    assert p.deletion is None and p.disruption is None
    assert (p.failure, p.failure_detail) == ("exitCode", "container aitj-0 exited with code 1")


def test_a_deleted_pod_shows_when_and_with_what_grace_and_its_finalizer() -> None:
    scene = running(change=trainer0(lambda p: p.deleted(190, grace=0)))
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, TRAINERS[0]).pods
    assert p.deletion == "being deleted (asked at 2022-01-14T09:05:02Z, grace period 0s; finalizer held)"


def test_a_disrupted_pod_shows_the_disruption_reason() -> None:
    scene = running(change=trainer0(lambda p: p.disrupted("EvictionByEvictionAPI", 190)))
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, TRAINERS[0]).pods
    assert p.disruption == "EvictionByEvictionAPI"


def test_a_pod_on_a_node_that_is_gone_says_so() -> None:
    scene = on_nodes(running(), nodes(node("node-a")))
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, TRAINERS[2]).pods
    assert (p.node, p.node_ready) == ("node-b", "gone")
    assert p.failure_detail == "node node-b is gone"


def test_a_pod_that_only_carries_the_jobs_labels_is_said_to_count_for_nothing() -> None:
    # A later generation of trainer 0 the job did not make: the real trainer 0 stays healthy
    # (it is not superseded), and the stranger is shown as what it is, with its finalizer back.
    stranger = Pod("trainer", 0, generation=7).running(150)
    del stranger.raw["metadata"]["ownerReferences"]
    stranger.raw["metadata"]["name"] = "intruder"
    scene = running()
    scene = dataclasses.replace(scene, pods=[*scene.pods, stranger.view()])
    e = explain(scene.job, scene.pods, scene.nodes, scene.now)
    verdicts = {p.name: p.verdict for p in e.pods}
    assert verdicts["intruder"] is Verdict.FOREIGN
    assert verdicts[TRAINERS[0]] is Verdict.HEALTHY
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, "intruder").pods
    assert "the job did not make it" in p.summary and p.notes == ("its finalizer is released",)


# ---------------------------------------------------------------------------------------------
# What follows from a verdict


def notes_of(scene: Scene, pod: str) -> tuple[str, ...]:
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, pod).pods
    return p.notes


def test_a_failure_of_the_launcher_says_the_job_fails_by_its_failPolicy() -> None:
    notes = notes_of(running(change=launcher_exits(1)), LAUNCHER)
    assert "failPolicy Any of replica launcher: the job fails in the next pass (TrainingJobFailed)" in notes


def test_a_trainer_failure_that_stands_does_not_end_the_job_under_failPolicy_None() -> None:
    notes = notes_of(running(change=trainer0(lambda p: p.evicted_by_kubelet())), TRAINERS[0])
    assert "failPolicy None of replica trainer: a failure that stands does not end the job" in notes


def test_a_restart_names_its_successor_and_the_count_it_brings() -> None:
    notes = notes_of(running(change=launcher_exits(129)), LAUNCHER)
    assert notes == (
        "RestartCount.launcher after the next pass: 1 (restartLimit 100)",
        f"replaced by {name_of('launcher', 0, 1)}, created in the next pass",
    )


def test_a_restart_in_the_pass_that_ends_the_job_is_dropped() -> None:
    def both(pods: list[Pod]) -> None:
        pods[3].exited(1)
        pods[0].deleted(190, grace=0)

    scene = running(change=both)
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, TRAINERS[0]).pods
    assert p.verdict is Verdict.RESTART and "dropped" in p.summary


def test_the_old_pod_of_a_restart_is_force_deleted_after_restartTimeLimit() -> None:
    scene, old = restarted_on_a_dead_node(110)
    assert (
        "force-deleted (grace period 0) at 2022-01-14T09:04:32Z if still terminating (restartTimeLimit 60s)"
        in notes_of(scene, old)
    )
    late, _ = restarted_on_a_dead_node(200)
    assert "deleted in the next pass with grace period 0" in notes_of(late, old)


def test_a_pending_replacement_says_when_restartTimeout_runs_out() -> None:
    notes = notes_of(replacement_pending(30, 110), name_of("trainer", 0, 1))
    assert notes == (
        "a replacement: if it is not Running by 2022-01-14T09:04:03Z (restartTimeout 30s), "
        "the restart fails (RestartTimeout)",
    )


def test_a_gated_launcher_names_the_workers_it_waits_for() -> None:
    pods = views([Pod("trainer", 0).running(), Pod("trainer", 1).running(), Pod("trainer", 2)])
    notes = notes_of(Scene(seed_job(), pods, nodes(), at(5)), LAUNCHER)
    assert notes == (f"waiting for {TRAINERS[2]} (pending)",)


def test_a_job_being_deleted_is_not_planned() -> None:
    scene = running(change=launcher_exits(1))
    e = explain(scene.job, scene.pods, scene.nodes, scene.now, deleting=True)
    assert {p.verdict for p in e.pods} == {Verdict.IGNORED}
    assert e.next_pass[0].startswith("nothing is planned: the job is being deleted")


# ---------------------------------------------------------------------------------------------
# The job and its next pass


def test_the_header_shows_phase_condition_and_restart_counts() -> None:
    scene = running()
    e = explain(scene.job, scene.pods, scene.nodes, scene.now)
    assert (e.namespace, e.name, e.phase) == ("default", "test-horovod-elastic", "Running")
    assert e.condition is not None
    assert (e.condition.type, e.condition.reason, e.condition.message) == (
        "Running",
        "TrainingJobRunning",
        "all pods are running",
    )
    assert dict(e.restart_counts) == {"trainer": 0, "launcher": 0}
    assert e.next_pass == ("nothing: the job is as it should be",)
    assert [p.name for p in e.pods] == [*TRAINERS, LAUNCHER]


def test_the_next_pass_lists_creates_status_and_restarts() -> None:
    scene = running(change=trainer0(lambda p: p.deleted(190, grace=0)))
    lines = explain(scene.job, scene.pods, scene.nodes, scene.now).next_pass
    assert f"create pod {name_of('trainer', 0, 1)} (trainer 0, generation 1)" in lines
    assert "status: phase Running -> Restarting" in lines
    assert "status: RestartCount trainer 1, launcher 0" in lines
    assert f"release the finalizer of {TRAINERS[0]}" in lines
    assert any(
        line.startswith(f"record a restart of replica trainer: PodForceDeleted on pod {TRAINERS[0]}")
        for line in lines
    )


def test_the_next_pass_says_when_the_job_ends_and_the_requeue() -> None:
    ends = running(change=launcher_exits(1))
    lines = explain(ends.job, ends.pods, ends.nodes, ends.now).next_pass
    assert lines[0].startswith(f"the job ends: {Phase.FAILED} (TrainingJobFailed): pod {LAUNCHER}")
    waits = replacement_pending(30, 110)
    lines = explain(waits.job, waits.pods, waits.nodes, waits.now).next_pass
    assert lines[-1] == "plan again in 21s (the next time-based decision) if nothing changes"


def test_an_unknown_pod_is_refused_with_the_job_s_pods() -> None:
    scene = running()
    with pytest.raises(UnknownPod) as caught:
        explain(scene.job, scene.pods, scene.nodes, scene.now, "no-such-pod")
    assert caught.value.known == (*TRAINERS, LAUNCHER)


def test_the_text_and_the_json_say_the_same() -> None:
    scene = running(launcher_rules(RestartPolicy.ON_NODE_FAIL), launcher_exits(1))
    e = explain(scene.job, scene.pods, scene.nodes, scene.now)
    text = "\n".join(render(e))
    assert f"pod {LAUNCHER} (launcher 0, generation 0)" in text
    assert (
        "rule 1 exitCodes 129,101 (scope Pod): inactive: "
        "restartPolicy OnNodeFail does not allow exit-code rules" in text
    )
    assert "=> fails (NotRestartable)" in text
    data = json.loads(json.dumps(e.to_json()))
    launcher_entry = data["pods"][3]
    assert launcher_entry["verdict"] == "fails" and launcher_entry["exit_code"] == 1
    assert launcher_entry["rules"][0]["outcome"] == "inactive"
    assert data["restart_counts"] == {"trainer": 0, "launcher": 0}


def test_explaining_does_not_change_its_inputs() -> None:
    scene = running(change=launcher_exits(129))
    before = scene.job.status.to_json()
    first = explain(scene.job, scene.pods, scene.nodes, scene.now)
    assert scene.job.status.to_json() == before
    assert explain(scene.job, scene.pods, scene.nodes, scene.now) == first


def entry(e: Explanation, name: str) -> PodExplanation:
    return next(p for p in e.pods if p.name == name)


def test_every_pod_of_a_replica_scope_restart_is_explained() -> None:
    job = trainer_rules(rules=(event_rule("nodeNotReady,PodForceDeleted", RestartScope.REPLICA),))
    scene = running(job, trainer0(lambda p: p.deleted(190, grace=0)))
    e = explain(scene.job, scene.pods, scene.nodes, scene.now)
    assert (
        entry(e, TRAINERS[0]).summary
        == "restart: rule exceptionalEvent nodeNotReady,PodForceDeleted restarts scope Replica"
    )
    for other in TRAINERS[1:]:
        assert f"recreated by the scope Replica restart for pod {TRAINERS[0]}" in entry(e, other).notes
    assert entry(e, LAUNCHER).verdict is Verdict.HEALTHY


# ---------------------------------------------------------------------------------------------
# One rule engine: explain and the planner agree on every case of the policy decide table

# A pod failing with each kind of the policy table (tests/unit/test_policy.py FAILURES):
# trainer 2, which runs on node-b.
FAILING: dict[str, Callable[[list[Pod]], object]] = {
    "exitCode": lambda pods: pods[2].exited(7, finished=190) and None,
    "nodeNotReady": lambda pods: None,  # node-b goes NotReady (DEAD_B)
    "PodForceDeleted": lambda pods: pods[2].deleted(190, grace=0) and None,
    "PodEvicted": lambda pods: pods[2].disrupted("EvictionByEvictionAPI", 190) and None,
    "PodPreempted": lambda pods: pods[2].disrupted("PreemptionByScheduler", 190) and None,
    "PodFailed": lambda pods: pods[2].raw.update(
        status={"phase": "Failed", "reason": "UnexpectedAdmissionError"}
    ),
}


def policy_table() -> list[object]:
    assert list(FAILING) == list(FAILURES)
    return [
        pytest.param(
            fault_tolerant,
            policy,
            kind,
            want,
            id=f"faultTolerant {str(fault_tolerant).lower()}, restartPolicy {policy}, {kind}: {want}",
        )
        for fault_tolerant, table in ((True, WITH_RULES), (False, WITHOUT_RULES))
        for policy, row in table.items()
        for kind, want in zip(FAILURES, row, strict=True)
    ]


@pytest.mark.parametrize(("fault_tolerant", "policy", "kind", "want"), policy_table())
def test_explain_and_the_planner_agree_on_every_case_of_the_policy_table(
    fault_tolerant: bool, policy: RestartPolicy, kind: str, want: str
) -> None:
    job = trainer_rules(restart_policy=policy, rules=RULES, restart_scope=RestartScope.POD)
    job = dataclasses.replace(job, spec=dataclasses.replace(job.spec, fault_tolerant=fault_tolerant))
    scene = running(job, FAILING[kind])
    if kind == "nodeNotReady":
        scene = on_nodes(scene, DEAD_B)
    old = TRAINERS[2]
    result, assessment = plan_and_assessment(scene.job, scene.pods, scene.nodes, scene.now)
    assert assessment is not None and result.outcome is None
    (p,) = explain(scene.job, scene.pods, scene.nodes, scene.now, old).pods
    assert p.failure == kind
    assert p.gate is not None and ("does not allow" in p.gate) is (want == N)
    fired = [(r.rule, r.scope) for r in p.rules if r.outcome is RuleOutcome.FIRES]
    restarts = [r for r in result.restarts if r.pod == old]
    if restarts:  # the planner restarts it: with the scope of the table, and the rule explain names
        (record,) = restarts
        assert (p.verdict, record.scope.value) == (Verdict.RESTART, want)
        assert fired == ([(record.rule, record.scope.value)] if fault_tolerant else [])
        assert f"{record.rule} restarts scope {record.scope}" in p.summary
    else:  # the failure stands, for the reason of the table, as the planner's survey has it
        (slot,) = [s for s in assessment.found.slots if s.pod is not None and s.pod.name == old]
        assert slot.fail is not None and slot.fail.reason.value == want
        assert p.verdict is Verdict.FAILS and p.summary.startswith(f"fails ({want}): {slot.fail.message}")
        assert fired == []


def test_every_step_of_a_trace_has_an_outcome() -> None:
    steps = [RuleCheck(0, "exitCodes 1", RestartScope.POD, True, True, why, str(why)) for why in RuleWhy]
    assert [(e.rule, e.scope, e.why) for e in rule_entries(steps)] == [
        ("exitCodes 1", "Pod", str(why)) for why in RuleWhy
    ]
