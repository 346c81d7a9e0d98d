"""``aitj explain`` on the recovery rules (issue 15): budgets left, backoff timers and excluded
nodes per rule, and the verdict of an index waiting out its backoff."""

from __future__ import annotations

from aitj.cli.explain_text import render
from aitj.core.api import Backoff
from aitj.core.explain import Explanation, Verdict, explain
from tests.unit.builders import Cluster, at, name_of
from tests.unit.test_planner_recovery import exit_at, job_with, rule, run, running


def explained(cluster: Cluster, now: float) -> Explanation:
    pods = [p.view() for p in cluster.pods.values()]
    return explain(cluster.job, pods, cluster.nodes, at(now))


def test_explain_shows_the_budget_left_the_backoff_and_the_excluded_node_per_rule() -> None:
    job = job_with(rule(restart_limit=2, restart_window=600, backoff=Backoff(2, 8), exclude_node_seconds=600))
    cluster = running(job)
    exit_at(cluster, 100)
    cluster.step(100)
    run(cluster, 101, node="node-b")
    cluster.step(101)
    exit_at(cluster, 110)
    cluster.step(110)
    e = explained(cluster, 111)
    assert e.recovery[0] == (
        "replica trainer rule 1 exitCodes 101: restartLimit 2 within 600s: 2 used, 0 left, one frees at "
        "2022-01-14T09:13:32Z; backoff 2s doubling to 8s, reset after 600s (index 0 failed 2 in a row); "
        "replacements keep off the failed pod's node for 600s"
    )
    kept_off = "keeps off node node-a until 2022-01-14T09:13:32Z (rule exitCodes 101, exitCode 101)"
    assert f"replica trainer index 0 {kept_off}" in e.recovery
    assert any("held back (Backoff): waiting 2 s before recreating index 0" in line for line in e.recovery)
    (waiting,) = [p for p in e.pods if p.name == name_of("trainer", 0, 2)]
    assert (
        waiting.verdict is Verdict.CREATE and "create once its backoff ends: waiting 2 s" in waiting.summary
    )
    text = "\n".join(render(e))
    assert "recovery rules:\n  - replica trainer rule 1 exitCodes 101: restartLimit 2" in text


def test_a_job_without_recovery_fields_explains_as_before() -> None:
    cluster = running(job_with(rule()))
    e = explained(cluster, 20)
    assert e.recovery == ()
    assert "recovery rules:" not in "\n".join(render(e))
