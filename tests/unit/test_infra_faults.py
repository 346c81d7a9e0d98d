"""Infrastructure faults apart from application faults (issue 28; docs/semantics.md section 25):
the class of each failure, a rule's ``infrastructureFaults`` as parsed and as the rule engine and
its budget use it, and the status's ``infrastructureRestarts``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from aitj.core.api import InfrastructureFaults, parse_job
from aitj.core.faultclass import FaultClass, cause_class
from aitj.core.planner.ledger import ReplicaHistory
from aitj.core.planner.rule_budgets import restarted
from aitj.core.policy import FailReason, Failure, FailureKind, RestartDecision, RuleWhy, decide
from tests.seeds import seed_job
from tests.unit.builders import Cluster, at, event_rule, name_of, node, running_seed, trainer, with_replica
from tests.unit.builders import seed_job as built_seed

INFRA = FaultClass.INFRASTRUCTURE
APP = FaultClass.APPLICATION


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (FailureKind.NODE_NOT_READY, INFRA),  # a node gone, NotReady, a health signal, a drain
        (FailureKind.POD_PREEMPTED, INFRA),
        (FailureKind.POD_EVICTED, INFRA),
        (FailureKind.POD_FORCE_DELETED, APP),  # who deleted it is unknown: charged
        (FailureKind.EXIT_CODE, APP),
        (FailureKind.POD_FAILED, APP),
        (FailureKind.RESTART_TIMEOUT, APP),
    ],
)
def test_each_failure_kind_has_its_class(kind: FailureKind, expected: FaultClass) -> None:
    assert kind.fault_class is expected
    assert (
        cause_class(Failure(kind, "x", exit_code=137 if kind is FailureKind.EXIT_CODE else None).cause)
        is expected
    )


@pytest.mark.parametrize(
    ("cause", "expected"),
    [("nodeNotReady", INFRA), ("PodPreempted", INFRA), ("exitCode 137", APP), ("hang", APP), ("", APP)],
)
def test_a_recorded_cause_has_its_class_and_an_unknown_one_is_the_application_s(
    cause: str, expected: FaultClass
) -> None:
    assert cause_class(cause) is expected


def trainer_rule(**fields: Any) -> Any:
    doc = seed_job()
    doc["spec"]["replicaSpecs"]["trainer"]["faultTolerantPolicy"][0].update(fields)
    return parse_job(doc).spec.replica("trainer").rules[0]


def test_infrastructure_faults_parse_charge_by_default_and_exempt_as_written() -> None:
    assert trainer_rule().infrastructure_faults is InfrastructureFaults.CHARGE
    exempt = trainer_rule(restartLimit=2, infrastructureFaults="Exempt")
    assert exempt.infrastructure_faults is InfrastructureFaults.EXEMPT


NODE = Failure(FailureKind.NODE_NOT_READY, "node node-b is not ready")
DELETED = Failure(FailureKind.POD_FORCE_DELETED, "pod was deleted with grace period 0")
SPENT = {0: "restartLimit 1 for the job's life: 1 used, 0 left"}


@pytest.mark.parametrize(
    ("mode", "failure", "fires"),
    [
        pytest.param(
            InfrastructureFaults.EXEMPT, NODE, True, id="exempt: a node fault passes a spent budget"
        ),
        pytest.param(InfrastructureFaults.EXEMPT, DELETED, False, id="exempt: a force delete does not"),
        pytest.param(InfrastructureFaults.CHARGE, NODE, False, id="charge: a node fault is refused too"),
    ],
)
def test_a_spent_budget_refuses_what_it_charges_only(
    mode: InfrastructureFaults, failure: Failure, fires: bool
) -> None:
    rule = replace(event_rule("nodeNotReady,PodForceDeleted"), restart_limit=1, infrastructure_faults=mode)
    decision = decide(trainer(rules=(rule,)), True, failure, SPENT)
    assert isinstance(decision, RestartDecision) is fires
    if not fires:
        assert not isinstance(decision, RestartDecision) and decision.reason is FailReason.BUDGET_EXHAUSTED
        assert decision.trace[0].why is RuleWhy.BUDGET_SPENT


@pytest.mark.parametrize(
    ("mode", "failure", "count", "times"),
    [
        (InfrastructureFaults.EXEMPT, NODE, 0, ()),
        (InfrastructureFaults.EXEMPT, DELETED, 1, ((0, at(100)),)),
        (InfrastructureFaults.CHARGE, NODE, 1, ((0, at(100)),)),
    ],
)
def test_an_exempt_restart_adds_nothing_to_the_budget_but_its_backoff_streak(
    mode: InfrastructureFaults, failure: Failure, count: int, times: tuple[Any, ...]
) -> None:
    rule = replace(
        event_rule("nodeNotReady,PodForceDeleted"),
        restart_limit=1,
        restart_window=600,
        infrastructure_faults=mode,
    )
    after, _ = restarted(rule, ReplicaHistory(), 0, 0, None, failure, at(100))
    assert after is not None and (after.count, after.times, after.streak) == (count, times, 1)


def node_b_fails(cluster: Cluster, now: float) -> Any:
    """node_b_fails: trainer 2 runs on node-b, which goes NotReady at ``now``; the pass then."""
    cluster.nodes = {n.name: n for n in (node("node-a"), node("node-b", "False", since=now))}
    result = cluster.step(now + 1)
    cluster.terminate_deleted()
    cluster.nodes = {n.name: n for n in (node("node-a"), node("node-b"))}
    cluster.run_all(now + 2, node_name="node-b")
    cluster.step(now + 3)
    return result


@pytest.mark.parametrize(("mode", "survives"), [("Exempt", True), ("Charge", False)])
def test_node_faults_restart_past_a_budget_that_exempts_them_and_are_counted_apart(
    mode: str, survives: bool
) -> None:
    rule = trainer_rule(restartLimit=1, infrastructureFaults=mode)  # nodeNotReady,PodForceDeleted
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    cluster = Cluster(with_replica(built_seed(), "trainer", rules=(rule,)), pods)
    cluster.step(10)
    first = node_b_fails(cluster, 100)
    assert [r.failure.kind for r in first.restarts] == [FailureKind.NODE_NOT_READY]
    assert cluster.status["infrastructureRestarts"] == {"trainer": 1}
    second = node_b_fails(cluster, 200)
    assert bool(second.restarts) is survives, second.status
    if survives:
        assert cluster.status["infrastructureRestarts"] == {"trainer": 2}
        assert cluster.status["RestartCount"]["trainer"] == 2  # RestartCount keeps counting all
    cluster.pods[name_of("trainer", 0)].deleted(300, grace=0)  # the application's: charged
    third = cluster.step(301)
    assert bool(third.restarts) is survives  # Exempt: the budget's one restart is still there
    assert cluster.status.get("infrastructureRestarts") == {"trainer": 2 if survives else 1}
