"""The planner's recovery rules (issue 15): rule budgets over windows, backoff, and keeping
replacements off the node a pod failed on. Every scenario runs passes on the simulated
cluster (builders.Cluster), so what one pass records is what the next one reads."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from aitj.core.api import LABEL_INDEX, Backoff, FaultTolerantRule, Policy
from aitj.core.observed import ANNOTATION_LEDGER
from aitj.core.planner import Plan
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.shortfall import ShortfallCause
from aitj.core.wire import format_time
from tests.unit.builders import (
    Cluster,
    as_json,
    at,
    event_rule,
    exit_rule,
    launcher,
    name_of,
    running_seed,
    seed_job,
    trainer,
)

HOSTNAME = "kubernetes.io/hostname"


def rule(text: str = "101", **changes: Any) -> FaultTolerantRule:
    """rule: an exit-code rule with the recovery fields given."""
    return dataclasses.replace(exit_rule(text), **changes)


def job_with(*rules: FaultTolerantRule, fail_policy: Policy = Policy.ANY, **changes: Any) -> Any:
    """job_with: the seed job whose trainer has ``rules`` (then the seed's event rule)."""
    spec = trainer(
        rules=(*rules, event_rule("nodeNotReady,PodForceDeleted")), fail_policy=fail_policy, **changes
    )
    return seed_job(spec, launcher())


def running(job: Any) -> Cluster:
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def current(cluster: Cluster, index: int = 0) -> str:
    """current: the live trainer pod of ``index``."""
    labels = {n: cluster.pods[n].raw["metadata"]["labels"] for n in cluster.live("trainer")}
    (name,) = [n for n, label in labels.items() if label[LABEL_INDEX] == str(index)]
    return name


def exit_at(
    cluster: Cluster, when: float, code: int = 101, index: int = 0, started: float | None = None
) -> str:
    """exit_at: the live pod of ``index`` (Running since ``started``, default just after its
    creation) exits with ``code`` at ``when``; returns its name."""
    name = current(cluster, index)
    pod = cluster.pods[name]
    created = pod.raw["metadata"]["creationTimestamp"]
    pod.exited(code, finished=when)
    state = pod.raw["status"]["containerStatuses"][0]["state"]["terminated"]
    state["startedAt"] = format_time(at(started)) if started is not None else created
    return name


def run(cluster: Cluster, since: float, node: str = "node-a") -> None:
    """run: the pods waiting to run start on ``node``."""
    cluster.run_all(since, node)


def condition(result: Plan) -> dict[str, Any]:
    assert result.status is not None
    last: dict[str, Any] = as_json(result.status)["conditions"][-1]
    return last


# ---------------------------------------------------------------------------------------------
# Rule budgets over windows


def test_a_rule_budget_of_two_in_600s_restarts_twice_and_the_third_exit_falls_to_fail_policy() -> None:
    cluster = running(job_with(rule(restart_limit=2, restart_window=600)))
    for n, t in enumerate((100, 200)):
        exit_at(cluster, t)
        result = cluster.step(t + 1)
        assert [c.generation for c in result.creates] == [n + 1]
        run(cluster, t + 2)
        cluster.step(t + 3)
    exit_at(cluster, 300)
    result = cluster.step(301)
    assert result.creates == () and result.outcome is not None
    assert result.outcome.phase == "Failed"
    assert "budget ran out" in result.outcome.message
    assert "restartLimit 2 within 600s: 2 used, 0 left" in result.outcome.message
    assert cluster.status["RestartCount"]["trainer"] == 2


def test_exits_further_apart_than_the_window_are_restarted_each_time() -> None:
    cluster = running(job_with(rule(restart_limit=1, restart_window=5)))
    for n, t in enumerate((100, 106, 112, 118)):
        exit_at(cluster, t)
        result = cluster.step(t)
        assert [c.generation for c in result.creates] == [n + 1], n
        run(cluster, t + 1)
        cluster.step(t + 1)
    assert cluster.status["RestartCount"]["trainer"] == 4


def test_a_used_up_rule_does_not_match_and_the_failure_falls_to_the_next_rule() -> None:
    cluster = running(job_with(rule(restart_limit=1), rule("100-110")))
    exit_at(cluster, 100)
    cluster.step(101)
    run(cluster, 102)
    cluster.step(103)
    exit_at(cluster, 200)
    result = cluster.step(201)
    assert [c.generation for c in result.creates] == [2]
    assert [r.rule for r in result.restarts] == ["exitCodes 100-110"]


def test_a_life_budget_counts_across_indices_and_a_budget_of_zero_never_restarts() -> None:
    cluster = running(job_with(rule(restart_limit=1), fail_policy=Policy.NONE))
    exit_at(cluster, 100, index=0)
    assert len(cluster.step(101).creates) == 1
    exit_at(cluster, 5000, index=1)
    result = cluster.step(5001)
    assert result.creates == () and result.outcome is None
    (short,) = result.shortfalls
    assert (short.replica, short.index, short.cause, short.until) == (
        "trainer",
        1,
        ShortfallCause.BUDGET_EXHAUSTED,
        None,
    )
    # The job goes on short of index 1: the degraded state's Event comes with the budget's.
    assert sorted(e.reason for e in result.events) == ["Degraded", "RuleBudgetExhausted"]
    (event,) = [e for e in result.events if e.reason == "RuleBudgetExhausted"]
    assert event.type == "Warning"
    assert event.message == f"pod {name_of('trainer', 1)}: {short.message}"
    assert (
        "but its restart budget ran out (restartLimit 1 for the job's life: 1 used, 0 left)" in event.message
    )

    zero = running(job_with(rule(restart_limit=0)))
    exit_at(zero, 100)
    assert zero.step(101).outcome is not None


def test_a_standing_failure_of_a_used_up_window_is_restarted_once_the_window_frees_a_restart() -> None:
    cluster = running(job_with(rule(restart_limit=1, restart_window=60), fail_policy=Policy.NONE))
    exit_at(cluster, 100)
    cluster.step(100)
    run(cluster, 101)
    cluster.step(101)
    exit_at(cluster, 110)
    result = cluster.step(110)
    (short,) = result.shortfalls
    assert short.cause is ShortfallCause.BUDGET_EXHAUSTED and short.until == at(160)
    assert result.requeue_after == pytest.approx(50)
    assert [c.generation for c in cluster.step(160).creates] == [2]


def test_the_replica_restart_limit_stays_the_overall_cap() -> None:
    cluster = running(job_with(rule(restart_limit=5, restart_window=600), restart_limit=1))
    exit_at(cluster, 100)
    cluster.step(101)
    run(cluster, 102)
    cluster.step(103)
    exit_at(cluster, 110)
    result = cluster.step(111)
    assert result.outcome is not None and result.outcome.reason == "RestartLimitExceeded"


def test_a_budget_is_exact_when_the_status_write_of_the_restart_was_lost() -> None:
    cluster = running(job_with(rule(restart_limit=1, restart_window=600)))
    exit_at(cluster, 100)
    cluster.step(101, status=False)  # the replacement carries the ledger; the status does not
    run(cluster, 102)
    cluster.step(103)
    exit_at(cluster, 110)
    result = cluster.step(111)
    assert result.creates == () and result.outcome is not None and "budget ran out" in result.outcome.message


def test_a_ledger_written_before_rule_budgets_or_without_times_counts_for_life_budgets_only() -> None:
    old = Ledger.from_json({"trainer": {"epoch": 0, "restarts": {"0": [0, 1]}}})
    assert old.replica("trainer").rules == ()
    timeless = Ledger.from_json(
        {
            "trainer": {
                "rules": {"0": {"exitCodes 101": {"failed": 0, "count": 2, "streak": 1, "times": {"0": "x"}}}}
            }
        }
    )
    history = timeless.replica("trainer").rule(0, "exitCodes 101")
    assert (history.count, history.times, history.last) == (2, (), None)


def test_the_ledger_rules_round_trip_through_the_wire_form_and_merge_idempotently() -> None:
    cluster = running(job_with(rule(restart_limit=3, restart_window=600, exclude_node_seconds=60)))
    exit_at(cluster, 100)
    cluster.step(101)
    ledger = Ledger.from_json(cluster.status["restartLedger"])
    assert Ledger.from_json(ledger.to_json()) == ledger
    assert ledger.merge(ledger, Ledger.from_annotation(ledger.annotation())) == ledger


# ---------------------------------------------------------------------------------------------
# Backoff


def fail_and_recreate(cluster: Cluster, t: float) -> tuple[Plan, float]:
    """fail_and_recreate: index 0 exits at ``t``; passes every second until its replacement is
    created; returns the pass that created it and when."""
    exit_at(cluster, t)
    now = t
    while True:
        result = cluster.step(now)
        if result.creates:
            return result, now
        assert result.requeue_after is not None and result.requeue_after > 0
        now += 1


def test_a_backoff_waits_initial_then_doubles_up_to_max_before_recreating_the_index() -> None:
    cluster = running(job_with(rule(backoff=Backoff(2, 8))))
    waits = []
    t = 100.0
    for _ in range(5):
        _, created = fail_and_recreate(cluster, t)
        waits.append(created - t)
        run(cluster, created + 0.5)
        t = created + 1
        cluster.step(t)
    assert waits == [0, 2, 4, 8, 8]


def test_a_held_replacement_is_a_backoff_shortfall_a_requeue_and_a_condition_message() -> None:
    cluster = running(job_with(rule(backoff=Backoff(2, 8))))
    fail_and_recreate(cluster, 100)
    run(cluster, 101)
    cluster.step(101)
    exit_at(cluster, 110)
    result = cluster.step(110)
    assert result.creates == () and result.requeue_after == pytest.approx(2)
    (short,) = result.shortfalls
    assert (short.cause, short.index, short.since, short.until) == (
        ShortfallCause.BACKOFF,
        0,
        at(110),
        at(112),
    )
    assert "waiting 2 s before recreating index 0" in short.message
    assert "waiting 2 s before recreating index 0" in condition(result)["message"]
    assert [d.reason for d in result.deletes] == ["restart"]  # the failed pod goes at once
    assert cluster.status["replicaStatuses"]["trainer"]["pending"] == 1


def test_the_backoff_starts_over_once_the_index_ran_reset_after_seconds() -> None:
    cluster = running(job_with(rule(backoff=Backoff(2, 8, reset_after=30))))
    fail_and_recreate(cluster, 100)
    run(cluster, 101)
    cluster.step(101)
    _, created = fail_and_recreate(cluster, 110)
    assert created == 112
    run(cluster, 113)
    cluster.step(113)
    _, created = fail_and_recreate(cluster, 150)  # ran 37 s >= 30: no wait
    assert created == 150


def test_node_faults_and_rules_without_backoff_are_never_delayed() -> None:
    cluster = running(job_with(rule(backoff=Backoff(60))))
    for t in (100, 110, 120):
        cluster.pods[current(cluster)].deleted(t, grace=0)
        assert len(cluster.step(t).creates) == 1
        run(cluster, t + 1)
        cluster.step(t + 1)


def test_a_backoff_whose_restart_pass_could_not_write_the_status_is_decided_again_and_counted_once() -> None:
    cluster = running(job_with(rule(backoff=Backoff(5))))
    fail_and_recreate(cluster, 100)
    run(cluster, 101)
    cluster.step(101)
    exit_at(cluster, 110)
    cluster.step(110, status=False, rest=False)  # the status write fails: the executor stops there
    assert cluster.step(111).creates == ()  # decided again, waiting from now
    assert cluster.step(115).creates == ()
    assert len(cluster.step(116).creates) == 1
    assert cluster.status["RestartCount"]["trainer"] == 2


# ---------------------------------------------------------------------------------------------
# Keeping replacements off bad nodes


def affinity_terms(result: Plan) -> list[Any]:
    (create,) = result.creates
    terms: list[Any] = create.body["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    return terms


def test_a_replacement_keeps_off_the_failed_pods_node_and_the_status_lists_the_exclusion() -> None:
    cluster = running(job_with(rule(exclude_node_seconds=600)))
    exit_at(cluster, 100)
    result = cluster.step(100)
    assert affinity_terms(result) == [
        {"matchExpressions": [{"key": HOSTNAME, "operator": "NotIn", "values": ["node-a"]}]}
    ]
    assert cluster.status["excludedNodes"] == [
        {
            "node": "node-a",
            "replica": "trainer",
            "index": 0,
            "rule": "exitCodes 101",
            "reason": "exitCode 101",
            "until": format_time(at(700)),
        }
    ]
    run(cluster, 101, node="node-b")
    assert cluster.step(101).requeue_after == pytest.approx(599)
    cluster.step(700)
    assert "excludedNodes" not in cluster.status


def test_a_second_failure_elsewhere_excludes_both_nodes_until_each_expires() -> None:
    cluster = running(job_with(rule(exclude_node_seconds=600)))
    exit_at(cluster, 100)
    cluster.step(100)
    run(cluster, 101, node="node-b")
    cluster.step(101)
    exit_at(cluster, 200)
    result = cluster.step(200)
    assert affinity_terms(result)[0]["matchExpressions"][0]["values"] == ["node-a", "node-b"]
    run(cluster, 201, node="node-c")
    cluster.step(750)
    assert [e["node"] for e in cluster.status["excludedNodes"]] == ["node-b"]


def test_a_replacement_the_scheduler_cannot_place_elsewhere_waits_pending_and_says_why() -> None:
    cluster = running(job_with(rule(exclude_node_seconds=600)))
    exit_at(cluster, 100)
    cluster.step(100)
    (pending,) = [n for n in cluster.live("trainer") if n == name_of("trainer", 0, 1)]
    cluster.pods[pending].raw["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/2 nodes are available",
        }
    ]
    result = cluster.step(105)
    (short,) = result.shortfalls
    assert (short.cause, short.until) == (ShortfallCause.NODE_EXCLUDED, at(700))
    assert "keeps off [node-a]" in short.message and "0/2 nodes are available" in short.message
    assert cluster.status["excludedNodes"][0]["message"] == short.message
    assert result.creates == () and result.deletes == ()


def test_an_unschedulable_replacement_whose_exclusion_expired_is_replaced_without_it_and_counts_nothing() -> (
    None
):
    cluster = running(job_with(rule(exclude_node_seconds=60)))
    exit_at(cluster, 100)
    cluster.step(100)
    pending = name_of("trainer", 0, 1)
    cluster.pods[pending].raw["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
    ]
    assert cluster.step(159).deletes == ()
    result = cluster.step(160)
    assert [(d.name, d.message) for d in result.deletes] == [
        (
            pending,
            f"its node exclusion expired and it cannot be scheduled: replaced by {name_of('trainer', 0, 2)}",
        )
    ]
    (create,) = result.creates
    assert create.generation == 2 and "affinity" not in create.body["spec"]
    assert cluster.status["RestartCount"]["trainer"] == 1 and "excludedNodes" not in cluster.status


def test_a_budget_over_indices_is_exact_when_a_later_status_write_was_lost() -> None:
    cluster = running(job_with(rule(restart_limit=2, restart_window=600)))
    exit_at(cluster, 100, index=0)
    cluster.step(100)
    exit_at(cluster, 110, index=1)
    cluster.step(110, status=False)  # its replacement carries index 1's history, the status index 0's
    run(cluster, 111)
    cluster.step(111)
    exit_at(cluster, 120, index=2)
    result = cluster.step(120)
    assert result.creates == () and result.outcome is not None and "2 used, 0 left" in result.outcome.message


def test_a_pod_carries_the_rule_histories_of_the_indices_its_pass_restarted_only() -> None:
    cluster = running(job_with(rule(restart_limit=5, exclude_node_seconds=60)))
    exit_at(cluster, 100, index=0)
    cluster.step(100)
    exit_at(cluster, 110, index=1)
    (create,) = cluster.step(110).creates
    stamp = json.loads(create.body["metadata"]["annotations"][ANNOTATION_LEDGER])["trainer"]
    assert set(stamp["rules"]) == {"1"} and set(stamp["excluded"]) == {"1"}
    assert set(cluster.status["restartLedger"]["trainer"]["rules"]) == {"0", "1"}


def test_rules_without_recovery_fields_leave_the_ledger_as_it_was() -> None:
    cluster = running(job_with(rule()))
    exit_at(cluster, 100)
    (create,) = cluster.step(100).creates
    assert "rules" not in cluster.status["restartLedger"]["trainer"]
    assert "excluded" not in cluster.status["restartLedger"]["trainer"]
    assert "rules" not in json.loads(create.body["metadata"]["annotations"][ANNOTATION_LEDGER])["trainer"]
