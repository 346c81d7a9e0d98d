"""``aitj explain`` says when a rule's budget was not charged because the fault was the
infrastructure's and the rule says ``infrastructureFaults: Exempt`` (docs/semantics.md section
25): in the verdict of the restart it decides, and in the rule's recovery line once restarts are
recorded. Through the planner on the simulated cluster (builders.Cluster)."""

from __future__ import annotations

import pytest

from aitj.cli.explain_text import render
from aitj.core.explain import explain
from tests.unit.builders import Cluster, at, name_of, node, running_seed, with_replica
from tests.unit.builders import seed_job as built_seed
from tests.unit.test_infra_faults import node_b_fails, trainer_rule

NOTE = "nodeNotReady, an infrastructure fault: not charged to its restartLimit (infrastructureFaults Exempt)"


def cluster_with(mode: str) -> Cluster:
    rule = trainer_rule(restartLimit=1, infrastructureFaults=mode)  # nodeNotReady,PodForceDeleted
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    cluster = Cluster(with_replica(built_seed(), "trainer", rules=(rule,)), pods)
    cluster.step(10)
    return cluster


def told(cluster: Cluster, now: float) -> str:
    views = [p.view() for p in cluster.pods.values()]
    return "\n".join(render(explain(cluster.job, views, cluster.nodes, at(now))))


@pytest.mark.parametrize("mode", ["Exempt", "Charge"])
def test_explain_says_an_exempt_rule_does_not_charge_an_infrastructure_fault(mode: str) -> None:
    cluster = cluster_with(mode)
    cluster.nodes = {n.name: n for n in (node("node-a"), node("node-b", "False", since=100))}
    text = told(cluster, 101)  # the restart the next pass decides
    assert name_of("trainer", 2) in text
    assert (NOTE in text) is (mode == "Exempt")
    assert ("infrastructureFaults Exempt: infrastructure faults restart" in text) is (mode == "Exempt")


def test_explain_says_an_exempt_rule_lets_a_spent_budget_through_and_what_it_kept_off() -> None:
    cluster = cluster_with("Exempt")
    cluster.pods[name_of("trainer", 0)].deleted(50, grace=0)  # the application's: the budget's one
    cluster.step(51)
    cluster.terminate_deleted()
    cluster.run_all(52, node_name="node-a")
    cluster.step(53)
    node_b_fails(cluster, 100)  # recorded, not charged
    cluster.nodes = {n.name: n for n in (node("node-a"), node("node-b", "False", since=200))}
    text = told(cluster, 201)
    assert NOTE + "; its budget is used up (" in text
    assert "which refuses only the application's" in text
    # the one recorded and the one the next pass records (explain shows the status after it)
    assert "(its 2 in status.restarts (nodeNotReady) charged nothing)" in text
