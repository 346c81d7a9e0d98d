"""The recovery fields of a faultTolerantPolicy rule (issue 15) as parsed, as the rule engine
uses a used-up budget, and as a replacement's node affinity renders."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aitj.core.api import Backoff, FaultTolerantRule, parse_job
from aitj.core.policy import FailReason, Failure, FailureKind, RestartDecision, RuleWhy, decide
from aitj.core.render.avoid import exclude_nodes
from tests.seeds import seed_job
from tests.unit.builders import exit_rule, trainer


def launcher_rule(**fields: Any) -> FaultTolerantRule:
    """launcher_rule: the seed's launcher's first rule (exitCodes 129,101) with ``fields`` added."""
    doc = seed_job()
    doc["spec"]["replicaSpecs"]["launcher"]["faultTolerantPolicy"][0].update(fields)
    return parse_job(doc).spec.replica("launcher").rules[0]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({}, (None, None, None, None), id="the seed's rule has no recovery field"),
        pytest.param(
            {"restartLimit": 2, "restartWindowSeconds": 600},
            (2, 600, None, None),
            id="a budget over a window",
        ),
        pytest.param({"restartLimit": 0}, (0, None, None, None), id="a life budget of zero"),
        pytest.param(
            {"backoff": {"initialSeconds": 2, "maxSeconds": 8, "resetAfterSeconds": 30}},
            (None, None, Backoff(2, 8, 30), None),
            id="a backoff as written",
        ),
        pytest.param(
            {"backoff": {"initialSeconds": 2}},
            (None, None, Backoff(2, 300, 600), None),
            id="backoff defaults",
        ),
        pytest.param(
            {"backoff": {"initialSeconds": 900}},
            (None, None, Backoff(900, 900, 600), None),
            id="an unset maxSeconds is never below initialSeconds",
        ),
        pytest.param({"excludeNodeSeconds": 600}, (None, None, None, 600), id="a node exclusion"),
    ],
)
def test_the_recovery_fields_of_a_rule_parse_into_the_model(
    fields: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    r = launcher_rule(**fields)
    assert (r.restart_limit, r.restart_window, r.backoff, r.exclude_node_seconds) == expected


@pytest.mark.parametrize(
    ("streak", "seconds"),
    [(0, 0), (1, 0), (2, 2), (3, 4), (4, 8), (5, 8), (100, 8)],
)
def test_a_backoff_waits_nothing_first_then_initial_doubling_up_to_max(streak: int, seconds: int) -> None:
    assert Backoff(2, 8).delay(streak) == seconds


EXIT_101 = Failure(FailureKind.EXIT_CODE, "container exited with code 101", exit_code=101)


def test_a_rule_whose_budget_is_used_up_does_not_match_and_the_next_rule_fires() -> None:
    replica = trainer(rules=(exit_rule("101"), exit_rule("100-110")))
    decision = decide(replica, True, EXIT_101, {0: "restartLimit 1 for the job's life: 1 used, 0 left"})
    assert isinstance(decision, RestartDecision) and decision.rule == "exitCodes 100-110"
    assert [c.why for c in decision.trace] == [RuleWhy.BUDGET_SPENT, RuleWhy.FIRES]


def test_a_failure_only_used_up_rules_match_stands_saying_the_budget_ran_out() -> None:
    decision = decide(
        trainer(rules=(exit_rule("101"),)), True, EXIT_101, {0: "restartLimit 2 within 600s: 2 used"}
    )
    assert not isinstance(decision, RestartDecision)
    assert decision.reason is FailReason.BUDGET_EXHAUSTED
    assert decision.message == (
        "exitCode 101 matches rule exitCodes 101 of replica trainer, but its restart budget ran out "
        "(restartLimit 2 within 600s: 2 used) and no later rule restarts it"
    )


NOT_IN = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-a", "node-b"]}


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        pytest.param(None, [{"matchExpressions": [NOT_IN]}], id="no affinity: one term"),
        pytest.param(
            {
                "podAntiAffinity": {"x": 1},
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
            },
            [{"matchExpressions": [NOT_IN]}],
            id="other affinities are kept",
        ),
        pytest.param(
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]},
                        ]
                    }
                }
            },
            [
                {"matchExpressions": [{"key": "gpu", "operator": "Exists"}, NOT_IN]},
                {
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}],
                    "matchExpressions": [NOT_IN],
                },
            ],
            id="ANDed into every term of the template's, none dropped",
        ),
    ],
)
def test_an_exclusion_is_anded_into_every_required_node_selector_term(
    affinity: Any, expected: list[Any]
) -> None:
    spec: dict[str, Any] = {"containers": []}
    if affinity is not None:
        spec["affinity"] = copy.deepcopy(affinity)
    exclude_nodes(spec, ["node-b", "node-a", "node-a"])
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == expected
    if affinity is not None and "podAntiAffinity" in affinity:
        assert spec["affinity"]["podAntiAffinity"] == {"x": 1}
        assert spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == []
