"""In-place restarts and the escalation ladder (issue 28), as parsed and refused, as rendered
into a pod's containers, as observed in a pod, and as the planner charges and escalates them
over passes on the simulated cluster (builders.Cluster)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from aitj.core.api import FaultTolerantRule, RestartScope, parse_job
from aitj.core.api.validation import InvalidJob
from aitj.core.explain.rule_budgets import recovery_lines
from aitj.core.observed import ANNOTATION_IN_PLACE, PodView
from aitj.core.planner import in_place
from aitj.core.planner.core import plan_and_assessment
from aitj.core.planner.in_place_status import EVENT_IN_PLACE, EVENT_NOT_SERVED
from aitj.core.planner.ledger import ReplicaHistory
from aitj.core.planner.rulelog import RuleHistory
from aitj.core.render.pod import in_place_refused, in_place_rules, without_in_place
from aitj.core.wire import format_time
from tests.seeds import seed_job
from tests.unit.builders import Cluster, at, event_rule, exit_rule, launcher, name_of, running_seed, trainer
from tests.unit.builders import seed_job as seed_job_of

# ---------------------------------------------------------------------------------------------
# The API: what a ladder may say, and what is refused (the CRD's CEL rules say the same: the
# messages are shared, tests/e2e/test_inplace_admission.py sends them to a real apiserver)


def ladder_doc(*rules: dict[str, Any], **replica: Any) -> dict[str, Any]:
    doc = seed_job()
    spec = doc["spec"]["replicaSpecs"]["trainer"]
    spec["faultTolerantPolicy"] = list(rules)
    spec.update(replica)
    return doc


IN_PLACE_137 = {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "InPlace", "restartLimit": 3}
POD_137 = {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "Pod", "restartLimit": 2}
REPLICA_137 = {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "Replica", "restartLimit": 1}


def errors_of(doc: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        parse_job(doc)
    except InvalidJob as e:
        return [(x.path, x.message) for x in e.errors]
    return []


def test_a_three_rung_ladder_parses_each_rung_with_a_budget_of_its_own() -> None:
    window = {**IN_PLACE_137, "restartWindowSeconds": 600}
    rules = parse_job(ladder_doc(window, POD_137, REPLICA_137)).spec.replica("trainer").rules
    assert [r.restart_scope for r in rules] == [RestartScope.IN_PLACE, RestartScope.POD, RestartScope.REPLICA]
    # the same exit codes: known apart by position, so each rung's budget is its own
    assert [r.source for r in rules] == ["exitCodes 137", "exitCodes 137 (rule 2)", "exitCodes 137 (rule 3)"]


def test_the_seed_rules_keep_their_texts() -> None:
    rules = parse_job(seed_job()).spec.replica("launcher").rules
    assert [r.source for r in rules] == ["exitCodes 129,101", "exceptionalEvent nodeNotReady"]


PATH = "spec.replicaSpecs.trainer.faultTolerantPolicy"


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            ladder_doc(POD_137, restartScope="InPlace"),
            ("spec.replicaSpecs.trainer.restartScope", 'Unsupported value: "InPlace": supported values: '),
            id="the replica's restartScope",
        ),
        pytest.param(
            ladder_doc(
                {"exceptionalEvent": "nodeNotReady", "restartPolicy": "OnNodeFail", "restartScope": "InPlace"}
            ),
            (f"{PATH}[0].restartScope", "restartScope InPlace needs exitCodes"),
            id="an exceptionalEvent rule",
        ),
        pytest.param(
            ladder_doc({**IN_PLACE_137, "backoff": {"initialSeconds": 2}}),
            (f"{PATH}[0].backoff", "restartScope InPlace cannot have backoff"),
            id="backoff",
        ),
        pytest.param(
            ladder_doc({**IN_PLACE_137, "excludeNodeSeconds": 60}),
            (f"{PATH}[0].excludeNodeSeconds", "restartScope InPlace cannot have excludeNodeSeconds"),
            id="excludeNodeSeconds",
        ),
        pytest.param(
            ladder_doc({"exitCodes": "137", "restartPolicy": "ExitCode"}, IN_PLACE_137),
            (
                PATH,
                "a rule with restartScope InPlace can never act when an earlier rule has the same exitCodes",
            ),
            id="after a rule with the same codes and no restartLimit",
        ),
    ],
)
def test_a_ladder_that_cannot_work_is_refused_with_field_path_and_reason(
    doc: dict[str, Any], expected: tuple[str, str]
) -> None:
    found = errors_of(doc)
    assert len(found) == 1 and found[0][0] == expected[0] and found[0][1].startswith(expected[1]), found


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param((POD_137, IN_PLACE_137), id="after a rule with the same codes and a restartLimit"),
        pytest.param(({**POD_137, "exitCodes": "139"}, IN_PLACE_137), id="after a rule with other codes"),
        pytest.param(({**IN_PLACE_137, "restartLimit": None},), id="an InPlace rule without a budget"),
    ],
)
def test_a_ladder_that_can_work_is_accepted(rules: tuple[dict[str, Any], ...]) -> None:
    cleaned = tuple({k: v for k, v in r.items() if v is not None} for r in rules)
    assert errors_of(ladder_doc(*cleaned)) == []


# ---------------------------------------------------------------------------------------------
# Which codes a pod is created to restart in place on


def in_place_rule(text: str, limit: int | None = None, window: int | None = None) -> FaultTolerantRule:
    return dataclasses.replace(
        exit_rule(text, RestartScope.IN_PLACE), restart_limit=limit, restart_window=window
    )


def spent_history(rule: FaultTolerantRule, count: int) -> ReplicaHistory:
    from aitj.core.policy import rule_text

    return ReplicaHistory(rules=(((0, rule_text(rule)), RuleHistory(0, count, 0, at(0))),))


RUNG = in_place_rule("137,139", limit=2)
POD_RUNG = dataclasses.replace(exit_rule("137"), restart_limit=1)


@pytest.mark.parametrize(
    ("rules", "fault_tolerant", "history", "expected"),
    [
        pytest.param((RUNG,), True, ReplicaHistory(), {137, 139}, id="an InPlace rung with budget left"),
        pytest.param((RUNG,), True, spent_history(RUNG, 2), set(), id="its budget spent: none"),
        pytest.param((RUNG,), False, ReplicaHistory(), set(), id="faultTolerant off: rules unused"),
        pytest.param(
            (POD_RUNG, RUNG), True, ReplicaHistory(), {139}, id="a code an earlier rule claims is its"
        ),
        pytest.param(
            (POD_RUNG, RUNG), True, spent_history(POD_RUNG, 1), {137, 139}, id="unless that rule is spent"
        ),
        pytest.param((in_place_rule("0-2"),), True, ReplicaHistory(), {1, 2}, id="never exit 0"),
        pytest.param(
            (exit_rule("137"),), True, ReplicaHistory(), set(), id="no InPlace rule: the seed's pods"
        ),
    ],
)
def test_codes_are_those_on_which_the_first_rule_that_would_act_is_in_place(
    rules: tuple[FaultTolerantRule, ...], fault_tolerant: bool, history: ReplicaHistory, expected: set[int]
) -> None:
    assert in_place.codes(trainer(rules=rules), fault_tolerant, history, at(10)) == expected


def test_the_rules_render_into_every_app_container_with_restart_policy_never() -> None:
    containers: list[dict[str, Any]] = [
        {"name": "a"},
        {
            "name": "b",
            "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [3]}}],
        },
    ]
    in_place_rules(containers, [137, 139])
    ours = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [137, 139]}}
    assert containers[0] == {"name": "a", "restartPolicy": "Never", "restartPolicyRules": [ours]}
    assert containers[1]["restartPolicyRules"][0] == ours and len(containers[1]["restartPolicyRules"]) == 2


# ---------------------------------------------------------------------------------------------
# What a pod shows of an in-place restart


def restarted_pod(restarts: int, *, served: bool = True, code: int = 137) -> dict[str, Any]:
    rules = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [137]}}]
    container = {
        "name": "aitj-0",
        "restartPolicy": "Never",
        **({"restartPolicyRules": rules} if served else {}),
    }
    return {
        "metadata": {"name": "p", "annotations": {ANNOTATION_IN_PLACE: "137"}},
        "spec": {"containers": [container, {"name": "side"}], "nodeName": "node-a"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "aitj-0",
                    "restartCount": restarts,
                    "state": {"running": {"startedAt": format_time(at(50))}},
                    "lastState": {"terminated": {"exitCode": code, "finishedAt": format_time(at(40))}},
                },
                {
                    "name": "side",
                    "restartCount": restarts,
                    "state": {"running": {"startedAt": format_time(at(50))}},
                    # the container the kubelet stopped to restart them all: not the cause
                    "lastState": {
                        "terminated": {
                            "exitCode": 137,
                            "reason": "RestartingAllContainers",
                            "finishedAt": format_time(at(45)),
                        }
                    },
                },
            ],
        },
    }


def test_a_pod_view_shows_its_in_place_restarts_and_the_exit_that_caused_them() -> None:
    view = PodView.from_dict(restarted_pod(2, code=139))
    assert (view.in_place, view.in_place_served, view.restarts) == ("137", True, 2)
    assert view.restart_exit == (139, "aitj-0", at(40))
    dropped = PodView.from_dict(restarted_pod(0, served=False))
    assert (dropped.in_place_served, dropped.restarts) == (False, 0)


# ---------------------------------------------------------------------------------------------
# The ladder over passes


def ladder_job() -> Any:
    rules = (
        in_place_rule("137", limit=2, window=600),
        dataclasses.replace(exit_rule("137"), source="exitCodes 137 (rule 2)", restart_limit=1),
        dataclasses.replace(
            exit_rule("137", RestartScope.REPLICA), source="exitCodes 137 (rule 3)", restart_limit=1
        ),
        event_rule("nodeNotReady,PodForceDeleted"),
    )
    return seed_job_of(trainer(rules=rules), launcher())


def served(cluster: Cluster, creates: Any, keep: bool = True) -> None:
    """served: the created pods' containers as the API server stores them (``keep``: with the
    restart rules; not: a cluster that dropped them)."""
    for c in creates:
        containers = copy.deepcopy(c.body["spec"]["containers"])
        if not keep:
            for container in containers:
                container.pop("restartPolicyRules", None)
                container.pop("restartPolicy", None)
        cluster.pods[c.name].raw["spec"]["containers"] = containers


def restart_in_place(cluster: Cluster, name: str, restarts: int, when: float, code: int = 137) -> None:
    """restart_in_place: what the kubelet shows after restarting the pod's containers in place."""
    cluster.pods[name].raw["metadata"].setdefault("annotations", {})[ANNOTATION_IN_PLACE] = "137"
    status = cluster.pods[name].raw["status"]["containerStatuses"][0]
    status["restartCount"] = restarts
    status["lastState"] = {"terminated": {"exitCode": code, "finishedAt": format_time(at(when))}}
    status["state"] = {"running": {"startedAt": format_time(at(when + 1))}}


def test_in_place_then_replace_the_pod_then_restart_the_replica_then_fail() -> None:
    cluster = Cluster(ladder_job(), running_seed())
    cluster.step(10)
    pod = name_of("trainer", 0)
    assert cluster.status["phase"] == "Running"

    # rung 1, twice: the same pod, charged to rule 1's budget, an Event and a status entry each
    for n in (1, 2):
        restart_in_place(cluster, pod, n, 100 * n)
        result = cluster.step(100 * n + 5)
        assert result.creates == () and result.deletes == ()
        entry = cluster.status["restarts"][-1]
        assert (entry["scope"], entry["pod"], entry["rule"]) == ("InPlace", pod, "exitCodes 137")
        assert entry["message"].endswith(f"rule 1 (InPlace) {n} of 2 in 600 s")
        assert [e.reason for e in result.restart_events if e.reason == EVENT_IN_PLACE] == [EVENT_IN_PLACE]
    assert cluster.status["RestartCount"].get("trainer", 0) == 0  # nothing was recreated

    # a third in 600 s: rung 1 is spent, the kubelet restarted it anyway: rule 2 replaces the pod
    restart_in_place(cluster, pod, 3, 300)
    result = cluster.step(305)
    assert [d.name for d in result.deletes] == [pod]
    assert [c.generation for c in result.creates] == [1]
    # created while rung 1 is spent: no in-place rules
    assert ANNOTATION_IN_PLACE not in result.creates[0].body["metadata"].get("annotations", {})
    assert cluster.status["restarts"][-1]["rule"] == "exitCodes 137 (rule 2)"
    assert cluster.status["restarts"][-1]["message"].endswith(
        "rule 1 (InPlace) is spent (restartLimit 2 within 600s: 2 used, 0 left, one frees at "
        f"{format_time(at(700))}): escalated"
    )
    served(cluster, result.creates)
    cluster.run_all(306, "node-a")
    cluster.step(307)

    # rung 2 spent (restartLimit 1): the next exit 137 restarts the replica (rule 3)
    cluster.pods[name_of("trainer", 0, 1)].exited(137, finished=400)
    result = cluster.step(401)
    assert cluster.status["restarts"][-1]["rule"] == "exitCodes 137 (rule 3)"
    assert cluster.status["restarts"][-1]["scope"] == "Replica"
    assert sorted(c.index for c in result.creates if c.replica == "trainer") == [0, 1, 2]
    cluster.run_all(402, "node-a")
    cluster.step(403)

    # every rung spent: the failure stands (RuleBudgetExhausted), failPolicy judges it
    cluster.pods[name_of("trainer", 0, 2)].exited(137, finished=500)
    result = cluster.step(501)
    assert result.creates == ()
    assert "budget ran out" in str(cluster.status)


def test_container_restarts_of_a_pod_rendered_without_in_place_rules_are_not_ours() -> None:
    cluster = Cluster(ladder_job(), running_seed())
    cluster.step(10)
    status = cluster.pods[name_of("trainer", 0)].raw["status"]["containerStatuses"][0]
    status["restartCount"] = 1  # the template's own container restartPolicy, say
    status["lastState"] = {"terminated": {"exitCode": 137, "finishedAt": format_time(at(100))}}
    result = cluster.step(105)
    assert (result.creates, result.deletes) == ((), ())
    assert not cluster.status.get("restarts")


def test_a_replay_charges_nothing_twice() -> None:
    cluster = Cluster(ladder_job(), running_seed())
    cluster.step(10)
    pod = name_of("trainer", 0)
    restart_in_place(cluster, pod, 1, 100)
    cluster.step(105)
    before = list(cluster.status["restarts"])
    cluster.step(106)
    assert cluster.status["restarts"] == before


def test_a_cluster_that_drops_the_rules_gets_a_replacement_and_says_so() -> None:
    job = seed_job_of(trainer(rules=(in_place_rule("137", limit=3), event_rule("nodeNotReady"))), launcher())
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    pod = name_of("trainer", 0)
    cluster.pods[pod].raw["metadata"].setdefault("annotations", {})[ANNOTATION_IN_PLACE] = "137"
    cluster.pods[pod].exited(137, finished=100)
    result = cluster.step(101)
    assert [c.generation for c in result.creates] == [1]
    assert in_place.NOT_SERVED in cluster.status["restarts"][-1]["message"]
    assert cluster.status["restarts"][-1]["scope"] == "Pod"
    assert [e.reason for e in result.restart_events if e.reason == EVENT_NOT_SERVED] == [EVENT_NOT_SERVED]
    # rule 1's budget is charged all the same, and the replacement is rendered with the rules again
    assert in_place.codes(job.spec.replica("trainer"), True, ReplicaHistory(), at(101)) == {137}
    assert result.creates[0].body["metadata"]["annotations"][ANNOTATION_IN_PLACE] == "137"


# ---------------------------------------------------------------------------------------------
# A cluster that refuses the rules at create (Kubernetes 1.35): the pod without them


def test_a_pod_without_its_in_place_rules_keeps_the_annotation_and_the_templates_own_rules() -> None:
    theirs = {"action": "Restart", "exitCodes": {"operator": "In", "values": [3]}}
    containers: list[dict[str, Any]] = [{"name": "a"}, {"name": "b", "restartPolicyRules": [theirs]}]
    in_place_rules(containers, [137])
    body = {"metadata": {"annotations": {ANNOTATION_IN_PLACE: "137"}}, "spec": {"containers": containers}}
    bare = without_in_place(body)
    assert bare is not None
    assert bare["spec"]["containers"] == [
        {"name": "a"},
        {"name": "b", "restartPolicy": "Never", "restartPolicyRules": [theirs]},
    ]
    assert bare["metadata"]["annotations"] == {ANNOTATION_IN_PLACE: "137"}
    assert without_in_place({"metadata": {}, "spec": {"containers": [{"name": "a"}]}}) is None


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (("spec.containers[0].restartPolicyRules[0].action",), True),
        (("spec.containers[0].image",), False),
        ((), False),
    ],
)
def test_a_refusal_naming_the_restart_rules_is_the_clusters_not_serving_them(
    fields: tuple[str, ...], expected: bool
) -> None:
    assert in_place_refused(fields) is expected


def test_explain_says_what_the_in_place_rung_does_now_and_what_it_did() -> None:
    cluster = Cluster(ladder_job(), running_seed())
    cluster.step(10)
    restart_in_place(cluster, name_of("trainer", 0), 1, 100)
    cluster.step(105)
    views = [p.view() for p in cluster.pods.values()]
    result, assessment = plan_and_assessment(cluster.job, views, cluster.nodes, at(106))
    assert assessment is not None
    lines = recovery_lines(cluster.job, assessment.found.ledger, result, at(106))
    assert any(
        "rule 1 exitCodes 137: restartLimit 2 within 600s: 1 used, 1 left; restarts in place" in line
        and "exit codes 137" in line
        for line in lines
    ), lines
    assert any(
        "restarted in place" in line and "rule 1 (InPlace) 1 of 2 in 600 s" in line for line in lines
    ), lines


@pytest.mark.parametrize(
    ("restart_exit", "rendered", "expected"),
    [
        pytest.param((139, "aitj-0", at(40)), "137,139", (139, at(40)), id="the exit the pod shows"),
        pytest.param(None, "137,139", (137, None), id="only the kubelet's placeholder: the lowest code"),
        pytest.param(
            (1, "aitj-0", at(40)), "139", (139, None), id="an exit it does not restart on is not it"
        ),
        pytest.param((137, "aitj-0", at(40)), None, (137, at(40)), id="no annotation: the exit shown"),
        pytest.param(None, None, None, id="nothing to go by"),
    ],
)
def test_the_exit_of_an_in_place_restart(
    restart_exit: tuple[int, str, Any] | None, rendered: str | None, expected: tuple[int, Any] | None
) -> None:
    pod = PodView("p", restarts=1, restart_exit=restart_exit, in_place=rendered)
    found = in_place.restart_failure(pod)
    assert (None if found is None else (found.exit_code, found.at)) == expected
