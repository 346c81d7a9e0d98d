"""Failure classification and faultTolerantPolicy matching (aitj.core.policy), as tables."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from aitj.core.api import FaultTolerantRule, ReplicaSpec, RestartPolicy, RestartScope
from aitj.core.exitcodes import parse_exit_codes
from aitj.core.observed import NodeView
from aitj.core.policy import (
    Decision,
    Fail,
    FailReason,
    Failure,
    FailureKind,
    RestartDecision,
    RuleWhy,
    allows,
    classify,
    decide,
    restart_timed_out,
    rule_text,
    vanished,
)
from tests.unit.builders import Pod, at, event_rule, exit_rule, launcher, node, trainer

READY = node("node-a")
NOT_READY = node("node-a", "False", since=50)
CORDONED = node("node-a", cordoned=True)
UNKNOWN = node("node-a", "Unknown", since=60)
GONE = None


# ---------------------------------------------------------------------------------------------
# classify


@pytest.mark.parametrize(
    ("pod", "node_view", "kind", "code"),
    [
        pytest.param(
            Pod("trainer", 0).running(), READY, None, None, id="a running pod on a ready node is fine"
        ),
        pytest.param(Pod("trainer", 0), GONE, None, None, id="an unscheduled pending pod is fine"),
        pytest.param(Pod("trainer", 0).creating(), READY, None, None, id="a pod creating containers is fine"),
        pytest.param(
            Pod("launcher", 0).exited(0), READY, None, None, id="exit code 0 is success not a failure"
        ),
        pytest.param(
            Pod("launcher", 0).exited(0), NOT_READY, None, None, id="a succeeded pod on a dead node is done"
        ),
        pytest.param(
            Pod("launcher", 0).exited(0).deleted(200),
            READY,
            None,
            None,
            id="a succeeded pod deleted later is done",
        ),
        pytest.param(
            Pod("trainer", 0).exited(0, finished=102).deleted(100, grace=0),
            READY,
            FailureKind.POD_FORCE_DELETED,
            None,
            id="a worker that exits 0 on someone's force delete is the delete, not a success",
        ),
        pytest.param(
            Pod("trainer", 0).exited(0, finished=100).deleted(100, grace=30),
            READY,
            FailureKind.POD_FORCE_DELETED,
            None,
            id="an exit 0 in the second a graceful delete began is the delete",
        ),
        pytest.param(
            Pod("trainer", 0).exited(0, finished=101).disrupted("EvictionByEvictionAPI").deleted(100, 30),
            CORDONED,
            FailureKind.NODE_NOT_READY,
            None,
            id="a worker that exits 0 on a drain's eviction is the drain",
        ),
        pytest.param(
            Pod("launcher", 0).exited(1), READY, FailureKind.EXIT_CODE, 1, id="exit code 1 is a failure"
        ),
        pytest.param(Pod("launcher", 0).exited(128), READY, FailureKind.EXIT_CODE, 128, id="exit code 128"),
        pytest.param(
            Pod("launcher", 0).exited(137), READY, FailureKind.EXIT_CODE, 137, id="exit code 137 (killed)"
        ),
        pytest.param(Pod("launcher", 0).exited(255), READY, FailureKind.EXIT_CODE, 255, id="exit code 255"),
        pytest.param(
            Pod("trainer", 0).running(), NOT_READY, FailureKind.NODE_NOT_READY, None, id="node Ready False"
        ),
        pytest.param(
            Pod("trainer", 0).running(), UNKNOWN, FailureKind.NODE_NOT_READY, None, id="node Ready Unknown"
        ),
        pytest.param(
            Pod("trainer", 0).running(), GONE, FailureKind.NODE_NOT_READY, None, id="node object deleted"
        ),
        pytest.param(
            Pod("trainer", 0).creating(),
            NOT_READY,
            FailureKind.NODE_NOT_READY,
            None,
            id="a pod still creating containers on a dead node",
        ),
        pytest.param(
            Pod("launcher", 0).exited(1),
            NOT_READY,
            FailureKind.EXIT_CODE,
            1,
            id="an exit code recorded before the node died stays the cause",
        ),
        pytest.param(
            Pod("trainer", 0).running().deleted(100, grace=0),
            READY,
            FailureKind.POD_FORCE_DELETED,
            None,
            id="deleted with grace 0 by someone else is PodForceDeleted",
        ),
        pytest.param(
            Pod("trainer", 0).running().deleted(100, grace=30),
            READY,
            FailureKind.POD_FORCE_DELETED,
            None,
            id="a graceful delete by someone else is PodForceDeleted too",
        ),
        pytest.param(
            Pod("trainer", 0).deleted(100, grace=0),
            GONE,
            FailureKind.POD_FORCE_DELETED,
            None,
            id="an unscheduled pod deleted by someone else",
        ),
        pytest.param(
            Pod("trainer", 0).running().deleted(100, grace=0),
            NOT_READY,
            FailureKind.NODE_NOT_READY,
            None,
            id="a pod on a dead node that someone deletes is nodeNotReady",
        ),
        pytest.param(
            Pod("trainer", 0).exited(143, finished=105).deleted(100, grace=30),
            READY,
            FailureKind.POD_FORCE_DELETED,
            None,
            id="a pod that exited because someone deleted it is PodForceDeleted not its exit code",
        ),
        pytest.param(
            Pod("trainer", 0).exited(1, finished=90).deleted(100, grace=30),
            READY,
            FailureKind.EXIT_CODE,
            1,
            id="a pod that failed before someone deleted it keeps its exit code",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("PreemptionByScheduler"),
            READY,
            FailureKind.POD_PREEMPTED,
            None,
            id="DisruptionTarget PreemptionByScheduler is PodPreempted",
        ),
        pytest.param(
            Pod("trainer", 0).exited(137).disrupted("PreemptionByScheduler"),
            READY,
            FailureKind.POD_PREEMPTED,
            None,
            id="preemption wins over the exit code it caused",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("EvictionByEvictionAPI").deleted(100, 30),
            READY,
            FailureKind.POD_EVICTED,
            None,
            id="DisruptionTarget EvictionByEvictionAPI is PodEvicted not PodForceDeleted",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("EvictionByEvictionAPI").deleted(100, 30),
            CORDONED,
            FailureKind.NODE_NOT_READY,
            None,
            id="an eviction from a cordoned node is a drain and so nodeNotReady",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("PreemptionByScheduler"),
            CORDONED,
            FailureKind.POD_PREEMPTED,
            None,
            id="a preemption on a cordoned node stays PodPreempted",
        ),
        pytest.param(
            Pod("trainer", 0).exited(137).evicted_by_kubelet(),
            CORDONED,
            FailureKind.POD_EVICTED,
            None,
            id="a kubelet node-pressure eviction stays PodEvicted even on a cordoned node",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("TerminationByKubelet"),
            READY,
            FailureKind.POD_EVICTED,
            None,
            id="DisruptionTarget TerminationByKubelet is PodEvicted",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("DeletionByTaintManager"),
            NOT_READY,
            FailureKind.NODE_NOT_READY,
            None,
            id="a taint manager deletion on a NotReady node is nodeNotReady",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("DeletionByTaintManager"),
            READY,
            FailureKind.POD_EVICTED,
            None,
            id="a taint manager deletion on a Ready node is PodEvicted",
        ),
        pytest.param(
            Pod("trainer", 0).exited(137).evicted_by_kubelet(),
            READY,
            FailureKind.POD_EVICTED,
            None,
            id="status reason Evicted is PodEvicted whatever the exit code",
        ),
        pytest.param(
            Pod("trainer", 0).running(),
            None,
            FailureKind.NODE_NOT_READY,
            None,
            id="a bound pod whose node is not in the mapping has lost its node",
        ),
    ],
)
def test_a_failed_pod_is_classified_by_its_cause_and_exit_code(
    pod: Pod, node_view: NodeView | None, kind: FailureKind | None, code: int | None
) -> None:
    failure = classify(pod.view(), node_view)
    assert (failure.kind if failure else None, failure.exit_code if failure else None) == (kind, code)


def test_a_pod_failed_without_exit_code_is_pod_failed_with_its_reason() -> None:
    pod = Pod("trainer", 0).on("node-a")
    pod.raw["status"] = {"phase": "Failed", "reason": "UnexpectedAdmissionError"}
    failure = classify(pod.view(), READY)
    assert failure is not None and failure.kind is FailureKind.POD_FAILED
    assert "UnexpectedAdmissionError" in failure.description


def test_a_failure_says_when_it_happened() -> None:
    exited = classify(Pod("launcher", 0).exited(1, finished=77).view(), READY)
    dead = classify(Pod("trainer", 0).running().view(), NOT_READY)
    deleted = classify(Pod("trainer", 0).running().deleted(100, grace=30).view(), READY)
    assert exited is not None and exited.at == at(77)
    assert dead is not None and dead.at == at(50)
    assert deleted is not None and deleted.at == at(100)


def test_descriptions_name_the_container_code_and_node() -> None:
    exited = classify(Pod("launcher", 0).exited(129).view(), READY)
    dead = classify(Pod("trainer", 0).running(node="node-z").view(), None)
    assert exited is not None and exited.description == "container aitj-0 exited with code 129"
    assert exited.cause == "exitCode 129"
    assert dead is not None and dead.description == "node node-z is gone" and dead.cause == "nodeNotReady"


# ---------------------------------------------------------------------------------------------
# restartTimeout


@pytest.mark.parametrize(
    ("pod", "now", "timed_out"),
    [
        pytest.param(
            Pod("trainer", 0, 1, created=0), 599, False, id="a replacement pending within the timeout"
        ),
        pytest.param(Pod("trainer", 0, 1, created=0), 600, True, id="a replacement pending at the timeout"),
        pytest.param(Pod("trainer", 0, 0, created=0), 9999, False, id="a first pod is not a replacement"),
        pytest.param(
            Pod("trainer", 0, 1, created=0).running(5), 9999, False, id="a replacement that runs is fine"
        ),
    ],
)
def test_a_replacement_not_running_within_restart_timeout_has_failed(
    pod: Pod, now: float, timed_out: bool
) -> None:
    failure = restart_timed_out(pod.view(), trainer(restart_timeout=600), at(now))
    assert (failure is not None) is timed_out
    if failure is not None:
        assert failure.kind is FailureKind.RESTART_TIMEOUT and "restartTimeout 600s" in failure.description


def test_no_restart_timeout_means_wait_forever() -> None:
    assert restart_timed_out(Pod("trainer", 0, 1).view(), trainer(restart_timeout=None), at(10**7)) is None


# ---------------------------------------------------------------------------------------------
# decide: every replica restartPolicy against every failure kind

FAILURES = {
    "exitCode": Failure(FailureKind.EXIT_CODE, "container exited with code 7", exit_code=7),
    "nodeNotReady": Failure(FailureKind.NODE_NOT_READY, "node is not ready"),
    "PodForceDeleted": Failure(FailureKind.POD_FORCE_DELETED, "deleted"),
    "PodEvicted": Failure(FailureKind.POD_EVICTED, "evicted"),
    "PodPreempted": Failure(FailureKind.POD_PREEMPTED, "preempted"),
    "PodFailed": Failure(FailureKind.POD_FAILED, "failed without an exit code"),
}
# faultTolerant with two rules: every exit code restarts scope Replica, every event scope All.
RULES = (
    exit_rule("1-255", RestartScope.REPLICA),
    event_rule("nodeNotReady,PodForceDeleted,PodEvicted,PodPreempted", RestartScope.ALL),
)
R, A, N, M = "Replica", "All", FailReason.NOT_RESTARTABLE.value, FailReason.NO_MATCHING_RULE.value
# Columns in FAILURES order: exitCode, nodeNotReady, PodForceDeleted, PodEvicted, PodPreempted, PodFailed.
WITH_RULES = {
    RestartPolicy.NEVER: (N, N, N, N, N, N),
    RestartPolicy.ALWAYS: (R, A, A, A, A, M),
    RestartPolicy.ON_FAILURE: (R, A, A, A, A, M),
    RestartPolicy.EXIT_CODE: (R, N, N, N, N, N),
    RestartPolicy.ON_NODE_FAIL: (N, A, A, A, A, N),
    RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE: (R, A, A, A, A, N),
}
P = "Pod"  # faultTolerant off: the replica's restartScope (Pod here)
WITHOUT_RULES = {
    RestartPolicy.NEVER: (N, N, N, N, N, N),
    RestartPolicy.ALWAYS: (P, P, P, P, P, P),
    RestartPolicy.ON_FAILURE: (P, P, P, P, P, P),
    RestartPolicy.EXIT_CODE: (P, N, N, N, N, N),
    RestartPolicy.ON_NODE_FAIL: (N, P, P, P, P, N),
    RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE: (P, P, P, P, P, N),
}


def bare(decision: Decision) -> Decision:
    """bare: the decision without its trace (the trace has tests of its own)."""
    return dataclasses.replace(decision, trace=())


def outcome_of(replica: ReplicaSpec, fault_tolerant: bool, failure: Failure) -> str:
    decision = decide(replica, fault_tolerant, failure)
    return decision.scope.value if isinstance(decision, RestartDecision) else decision.reason.value


def matrix(table: Mapping[RestartPolicy, tuple[str, ...]]) -> list[object]:
    return [
        pytest.param(policy, kind, want, id=f"restartPolicy {policy} with {kind} gives {want}")
        for policy, row in table.items()
        for kind, want in zip(FAILURES, row, strict=True)
    ]


@pytest.mark.parametrize(("policy", "kind", "want"), matrix(WITH_RULES))
def test_fault_tolerant_rules_under_every_restart_policy(policy: RestartPolicy, kind: str, want: str) -> None:
    replica = trainer(restart_policy=policy, rules=RULES)
    assert outcome_of(replica, True, FAILURES[kind]) == want


@pytest.mark.parametrize(("policy", "kind", "want"), matrix(WITHOUT_RULES))
def test_without_fault_tolerance_the_restart_policy_alone_decides(
    policy: RestartPolicy, kind: str, want: str
) -> None:
    replica = trainer(restart_policy=policy, rules=RULES, restart_scope=RestartScope.POD)
    assert outcome_of(replica, False, FAILURES[kind]) == want


def test_without_fault_tolerance_the_replica_restart_scope_is_used() -> None:
    replica = trainer(restart_policy=RestartPolicy.ALWAYS, restart_scope=RestartScope.ALL)
    assert bare(decide(replica, False, FAILURES["exitCode"])) == RestartDecision(
        RestartScope.ALL, "restartPolicy Always"
    )


def test_allows_never_lets_a_restart_timeout_restart() -> None:
    assert not any(allows(p, FailureKind.RESTART_TIMEOUT) for p in RestartPolicy)
    timeout = Failure(
        FailureKind.RESTART_TIMEOUT, "replacement pod x was not Running within restartTimeout 5s"
    )
    decision = decide(trainer(restart_policy=RestartPolicy.ALWAYS), True, timeout)
    assert isinstance(decision, Fail) and decision.reason is FailReason.RESTART_TIMEOUT


# ---------------------------------------------------------------------------------------------
# decide: the seed's rules, rule order, exit-code lists and ranges


def code(n: int) -> Failure:
    return Failure(FailureKind.EXIT_CODE, f"container aitj-0 exited with code {n}", exit_code=n)


@pytest.mark.parametrize(
    ("failure", "want"),
    [
        pytest.param(
            code(129), RestartDecision(RestartScope.POD, "exitCodes 129,101"), id="129 matches the first rule"
        ),
        pytest.param(
            code(101), RestartDecision(RestartScope.POD, "exitCodes 129,101"), id="101 matches the first rule"
        ),
        pytest.param(code(1), "NoMatchingRule", id="exit code 1 matches no launcher rule"),
        pytest.param(code(128), "NoMatchingRule", id="edge code 128 matches no launcher rule"),
        pytest.param(code(137), "NoMatchingRule", id="edge code 137 matches no launcher rule"),
        pytest.param(code(255), "NoMatchingRule", id="edge code 255 matches no launcher rule"),
        pytest.param(
            FAILURES["nodeNotReady"],
            RestartDecision(RestartScope.POD, "exceptionalEvent nodeNotReady"),
            id="nodeNotReady matches the second rule",
        ),
        pytest.param(
            FAILURES["PodForceDeleted"], "NoMatchingRule", id="PodForceDeleted is not a launcher rule"
        ),
        pytest.param(FAILURES["PodEvicted"], "NoMatchingRule", id="PodEvicted is not a launcher rule"),
    ],
)
def test_the_seeds_launcher_rules(failure: Failure, want: object) -> None:
    decision = decide(launcher(), True, failure)
    assert (bare(decision) if isinstance(decision, RestartDecision) else decision.reason.value) == want


@pytest.mark.parametrize(
    ("failure", "restarted"),
    [
        pytest.param(FAILURES["nodeNotReady"], True, id="trainer nodeNotReady restarts"),
        pytest.param(FAILURES["PodForceDeleted"], True, id="trainer PodForceDeleted restarts"),
        pytest.param(FAILURES["PodPreempted"], False, id="trainer PodPreempted is not in the seed's rule"),
        pytest.param(code(129), False, id="a trainer exit code matches no trainer rule"),
    ],
)
def test_the_seeds_trainer_rule(failure: Failure, restarted: bool) -> None:
    assert isinstance(decide(trainer(), True, failure), RestartDecision) is restarted


def test_rules_are_tried_in_order_and_the_first_match_wins() -> None:
    first = exit_rule("130-140", RestartScope.REPLICA)
    second = exit_rule("137", RestartScope.ALL)
    replica = trainer(restart_policy=RestartPolicy.EXIT_CODE, rules=(first, second))
    assert bare(decide(replica, True, code(137))) == RestartDecision(
        RestartScope.REPLICA, "exitCodes 130-140"
    )
    reordered = dataclasses.replace(replica, rules=(second, first))
    assert bare(decide(reordered, True, code(137))) == RestartDecision(RestartScope.ALL, "exitCodes 137")


def test_a_rule_the_restart_policy_does_not_allow_is_skipped_for_a_later_one() -> None:
    inactive = FaultTolerantRule(
        RestartPolicy.ON_NODE_FAIL, RestartScope.ALL, exit_codes=frozenset({9}), source="odd rule"
    )
    replica = trainer(restart_policy=RestartPolicy.ON_NODE_FAIL, rules=(inactive, event_rule("nodeNotReady")))
    assert bare(decide(replica, True, code(9))) == Fail(
        FailReason.NOT_RESTARTABLE, "restartPolicy OnNodeFail of replica trainer does not restart exitCode 9"
    )


@pytest.mark.parametrize(
    ("text", "exit_code", "matches"),
    [
        pytest.param("130-140", 130, True, id="a range includes its low end"),
        pytest.param("130-140", 140, True, id="a range includes its high end"),
        pytest.param("130-140", 141, False, id="a range stops at its high end"),
        pytest.param("130-140", 129, False, id="a range starts at its low end"),
        pytest.param("0-255", 255, True, id="the widest range includes 255"),
        pytest.param("128", 128, True, id="a single code 128"),
        pytest.param("1, 3 - 7", 5, True, id="spaces inside lists and ranges"),
    ],
)
def test_exit_code_lists_and_ranges(text: str, exit_code: int, matches: bool) -> None:
    # The rule's codes come from the parser itself, not from the builders' shorthand.
    rule = FaultTolerantRule(RestartPolicy.EXIT_CODE, RestartScope.POD, exit_codes=parse_exit_codes(text))
    replica = trainer(restart_policy=RestartPolicy.EXIT_CODE, rules=(rule,))
    assert isinstance(decide(replica, True, code(exit_code)), RestartDecision) is matches


def test_no_matching_rule_says_which_cause_and_replica() -> None:
    decision = decide(launcher(), True, code(1))
    assert bare(decision) == Fail(
        FailReason.NO_MATCHING_RULE, "exitCode 1 matches no faultTolerantPolicy rule of replica launcher"
    )


def test_a_vanished_pod_is_pod_force_deleted() -> None:
    failure = vanished("p-0")
    assert failure.kind is FailureKind.POD_FORCE_DELETED and "p-0" in failure.description
    assert isinstance(decide(trainer(), True, failure), RestartDecision)


# ---------------------------------------------------------------------------------------------
# decide's trace: every rule, whether it was active, whether it matched, and why

Step = tuple[bool, bool, RuleWhy, str]  # active, matched, why, detail


@pytest.mark.parametrize(
    ("replica", "fault_tolerant", "failure", "steps"),
    [
        pytest.param(
            launcher(),
            True,
            code(129),
            [
                (True, True, RuleWhy.FIRES, "names exit code 129"),
                (True, False, RuleWhy.EARLIER_RULE_FIRED, "an earlier rule fired"),
            ],
            id="the first active rule that names the code fires; the rest are not tried",
        ),
        pytest.param(
            launcher(),
            True,
            code(1),
            [
                (True, False, RuleWhy.OTHER_EXIT_CODE, "does not name exit code 1"),
                (
                    True,
                    False,
                    RuleWhy.NOT_AN_EVENT,
                    "an exceptionalEvent rule, and the failure is exit code 1",
                ),
            ],
            id="an exit code no rule names",
        ),
        pytest.param(
            launcher(),
            True,
            FAILURES["PodEvicted"],
            [
                (True, False, RuleWhy.NOT_AN_EXIT_CODE, "an exit-code rule, and the failure is PodEvicted"),
                (True, False, RuleWhy.OTHER_EVENT, "does not name PodEvicted"),
            ],
            id="an event no rule names",
        ),
        pytest.param(
            launcher(),
            True,
            FAILURES["PodFailed"],
            [
                (True, False, RuleWhy.NOT_AN_EXIT_CODE, "an exit-code rule, and the failure is PodFailed"),
                (
                    True,
                    False,
                    RuleWhy.NOT_AN_EVENT,
                    "an exceptionalEvent rule, and PodFailed is not an exceptional event",
                ),
            ],
            id="a failure without exit code or event matches no rule",
        ),
        pytest.param(
            launcher(restart_policy=RestartPolicy.ON_NODE_FAIL),
            True,
            code(129),
            [
                (False, True, RuleWhy.INACTIVE, "restartPolicy OnNodeFail does not allow exit-code rules"),
                (
                    True,
                    False,
                    RuleWhy.NOT_AN_EVENT,
                    "an exceptionalEvent rule, and the failure is exit code 129",
                ),
            ],
            id="an inactive rule that names the code does not fire",
        ),
        pytest.param(
            launcher(),
            False,
            code(129),
            [
                (True, True, RuleWhy.IGNORED, "faultTolerant is false: rules are not used"),
                (True, False, RuleWhy.IGNORED, "faultTolerant is false: rules are not used"),
            ],
            id="with faultTolerant false every rule is ignored",
        ),
        pytest.param(
            launcher(),
            True,
            Failure(
                FailureKind.RESTART_TIMEOUT, "replacement pod x was not Running within restartTimeout 5s"
            ),
            [
                (True, False, RuleWhy.RESTART_TIMEOUT, "no rule restarts a RestartTimeout"),
                (True, False, RuleWhy.RESTART_TIMEOUT, "no rule restarts a RestartTimeout"),
            ],
            id="no rule is tried for a RestartTimeout",
        ),
    ],
)
def test_the_trace_says_what_each_rule_made_of_the_failure(
    replica: ReplicaSpec, fault_tolerant: bool, failure: Failure, steps: list[Step]
) -> None:
    trace = decide(replica, fault_tolerant, failure).trace
    assert [(c.active, c.matched, c.why, c.detail) for c in trace] == steps
    assert [(c.index, c.rule, c.scope) for c in trace] == [
        (i, rule_text(rule), rule.restart_scope) for i, rule in enumerate(replica.rules)
    ]


@pytest.mark.parametrize(("policy", "kind", "want"), matrix(WITH_RULES))
def test_a_restart_is_the_rule_its_trace_fired(policy: RestartPolicy, kind: str, want: str) -> None:
    decision = decide(trainer(restart_policy=policy, rules=RULES), True, FAILURES[kind])
    fired = [(c.rule, c.scope) for c in decision.trace if c.fired]
    assert fired == ([(decision.rule, decision.scope)] if isinstance(decision, RestartDecision) else [])


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        pytest.param(exit_rule("129,101"), "exitCodes 129,101", id="a rule is named as written"),
        pytest.param(
            FaultTolerantRule(RestartPolicy.EXIT_CODE, RestartScope.POD, exit_codes=frozenset({101, 129})),
            "exitCodes 101,129",
            id="a rule without its source is named by its sorted codes",
        ),
        pytest.param(
            dataclasses.replace(event_rule("PodForceDeleted,nodeNotReady"), source=""),
            "exceptionalEvent PodForceDeleted,nodeNotReady",
            id="a rule without its source is named by its sorted events",
        ),
    ],
)
def test_a_rule_reads_as_it_is_written_in_the_manifest(rule: FaultTolerantRule, text: str) -> None:
    assert rule_text(rule) == text
