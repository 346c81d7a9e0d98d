"""The degraded state (aitj.core.planner.degraded): a job that has run and goes on with fewer
pods than it wants says why, per index and since when, in status.degraded, and an Event marks
entering and leaving it, once each (docs/semantics.md, "A visible degraded state")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from aitj.cli import jobview
from aitj.cli.explain_text import header_lines
from aitj.core.api import MAX_LISTED
from aitj.core.explain import explain
from aitj.core.planner import degraded
from aitj.core.planner.core import assess
from aitj.core.planner.shortfall import Shortfall, ShortfallCause
from aitj.core.planner.types import Settings
from aitj.core.wire import format_time
from tests.unit.builders import (
    Cluster,
    Pod,
    as_json,
    at,
    name_of,
    nodes,
    running_seed,
    running_status,
    seed_job,
    trainer,
    views,
)

SAID = "0/2 nodes are available: 2 Insufficient cpu."


def unschedulable(pod: Pod, message: str = SAID) -> Pod:
    """unschedulable: the scheduler's verdict on a pod it cannot place."""
    pod.raw["spec"].pop("nodeName", None)
    pod.raw["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ],
    }
    return pod


def degraded_events(cluster: Cluster) -> list[str]:
    """degraded_events: the reasons of the degraded state's Events the cluster holds."""
    return [
        e.reason
        for e in cluster.events.values()
        if e.reason in (degraded.EVENT_DEGRADED, degraded.EVENT_RECOVERED)
    ]


def short_of_trainer_1() -> Cluster:
    """short_of_trainer_1: the seed, Running, whose trainer 1 was force-deleted at 20 and whose
    replacement (created at 20) the scheduler cannot place; planned once since (at 21)."""
    job = seed_job()
    pods = running_seed()
    cluster = Cluster(seed_job(status=running_status(job, pods)), pods)
    cluster.pods[name_of("trainer", 1)].deleted(19, 0)
    cluster.step(20)
    unschedulable(cluster.pods[name_of("trainer", 1, 1)])
    cluster.step(21)
    return cluster


def test_an_index_whose_replacement_cannot_be_placed_makes_a_job_that_ran_degraded() -> None:
    cluster = short_of_trainer_1()
    state = cluster.status["degraded"]
    assert state["since"] == format_time(at(20))
    assert state["reason"] == "trainer[1] Unschedulable"
    assert state["count"] == 1
    assert state["indices"] == [
        {
            "replica": "trainer",
            "index": 1,
            "cause": "Unschedulable",
            "message": f"pod {name_of('trainer', 1, 1)}: {SAID}",
            "since": format_time(at(20)),
        }
    ]
    assert state["message"] == (
        f"replica trainer runs 2 of 3 pods: index 1 Unschedulable (pod {name_of('trainer', 1, 1)}: {SAID})"
    )


def test_the_discovery_host_list_has_only_the_running_trainers_meanwhile() -> None:
    cluster = short_of_trainer_1()
    assert cluster.status["discoveryHosts"] == [name_of("trainer", 0), name_of("trainer", 2)]


def test_entering_the_degraded_state_is_one_warning_event_however_many_passes_follow() -> None:
    cluster = short_of_trainer_1()
    entered = [e for p in cluster.history for e in p.events if e.reason == degraded.EVENT_DEGRADED]
    assert [(e.type, e.name) for e in entered] == [
        ("Warning", f"test-horovod-elastic.e4b904c7.degraded-{at(20):%Y%m%d%H%M%S}")
    ]
    for t in (30, 40, 50):
        later = cluster.step(t)
        assert later.events == () and later.status is None
    assert degraded_events(cluster) == ["Degraded"]


def test_an_operator_restarted_while_the_job_is_degraded_sends_no_second_event() -> None:
    cluster = short_of_trainer_1()
    fresh = Cluster(cluster.job, [p.copy() for p in cluster.pods.values()])
    assert not any(e.reason == degraded.EVENT_DEGRADED for e in fresh.step(60).events)


def test_a_status_write_that_failed_has_the_next_pass_send_the_same_event() -> None:
    job = seed_job()
    pods = running_seed()
    cluster = Cluster(seed_job(status=running_status(job, pods)), pods)
    cluster.pods[name_of("trainer", 1)].deleted(19, 0)
    cluster.step(20)
    unschedulable(cluster.pods[name_of("trainer", 1, 1)])
    lost = cluster.step(21, status=False, rest=False)
    again = cluster.step(22)
    assert [e.name for e in lost.events] == [e.name for e in again.events]
    assert degraded_events(cluster) == ["Degraded"]


def test_the_job_regrows_when_the_replacement_runs_and_says_so_once() -> None:
    cluster = short_of_trainer_1()
    cluster.run_all(since=70)
    back = cluster.step(71)
    assert "degraded" not in cluster.status
    (left,) = [e for e in back.events if e.reason == degraded.EVENT_RECOVERED]
    assert left.type == "Normal"
    assert left.message == (
        f"no longer degraded (since {format_time(at(20))}): every index the job wants runs again"
    )
    assert name_of("trainer", 1, 1) in cluster.status["discoveryHosts"]
    cluster.step(72)
    assert degraded_events(cluster) == ["Degraded", "Recovered"]


def test_since_holds_across_passes_while_the_scheduler_message_changes() -> None:
    cluster = short_of_trainer_1()
    unschedulable(cluster.pods[name_of("trainer", 1, 1)], "0/3 nodes are available: 3 Insufficient cpu.")
    cluster.step(90)
    state = cluster.status["degraded"]
    assert (state["since"], state["indices"][0]["since"]) == (format_time(at(20)), format_time(at(20)))
    assert "0/3 nodes" in state["indices"][0]["message"]
    assert degraded_events(cluster) == ["Degraded"]


def test_a_job_still_starting_is_not_degraded_whatever_the_scheduler_says() -> None:
    pods = [Pod("trainer", 0).running(), Pod("trainer", 1).running(), unschedulable(Pod("trainer", 2))]
    cluster = Cluster(seed_job(), pods)
    result = cluster.step(5)
    assert cluster.status["phase"] == "Creating"
    assert "degraded" not in cluster.status and result.events == ()


def test_a_job_of_which_nothing_runs_is_not_degraded() -> None:
    job = seed_job()
    pods = running_seed()
    status = running_status(job, pods)
    stuck = [unschedulable(Pod("trainer", i, 1, created=30)) for i in range(3)]
    stuck.append(unschedulable(Pod("launcher", 0, 1, created=30)))
    ledger: dict[str, Any] = {
        "trainer": {"epoch": 0, "seen": [1, 1, 1], "ended": {"0": 0, "1": 0, "2": 0}},
        "launcher": {"epoch": 0, "seen": [1], "ended": {"0": 0}},
    }
    result = Cluster(seed_job(status={**status, "restartLedger": ledger}), stuck).step(31)
    assert result.status is not None and "degraded" not in as_json(result.status)


def test_leaving_because_nothing_runs_any_more_says_so() -> None:
    cluster = short_of_trainer_1()
    for name in (name_of("trainer", 0), name_of("trainer", 2), name_of("launcher", 0)):
        cluster.pods[name].raw["status"]["phase"] = "Pending"
    result = cluster.step(40)
    (left,) = [e for e in result.events if e.reason == degraded.EVENT_RECOVERED]
    assert "no pod of the job runs" in left.message
    assert "degraded" not in cluster.status


def test_a_job_that_finishes_while_degraded_drops_the_state_without_a_recovered_event() -> None:
    cluster = short_of_trainer_1()
    cluster.pods[name_of("launcher", 0)].exited(0, finished=40)
    result = cluster.step(41)
    assert cluster.status["phase"] == "Succeeded"
    assert "degraded" not in cluster.status
    assert not any(e.reason == degraded.EVENT_RECOVERED for e in result.events)


def test_a_scale_out_pod_that_cannot_be_placed_is_the_scale_operations_business() -> None:
    job = seed_job()
    pods = running_seed()
    status = running_status(job, pods)
    cluster = Cluster(seed_job(trainer(replicas=4), status=status, generation=2), pods)
    cluster.step(20)
    unschedulable(cluster.pods[name_of("trainer", 3)])
    cluster.step(21)
    assert cluster.status["phase"] == "Scaling"
    assert "degraded" not in cluster.status


# ---------------------------------------------------------------------------------------------
# The Shortfalls the restart rules hand in (a backoff, a budget used up, a node excluded)


def survey_of(cluster: Cluster, now: float) -> Any:
    """survey_of: the survey the planner makes of the cluster's job and pods at ``now``."""
    return assess(cluster.job, views(cluster.pods.values()), nodes(), at(now), Settings()).found


def test_a_shortfall_handed_in_wins_over_the_unschedulable_pod_of_its_index() -> None:
    cluster = short_of_trainer_1()
    excluded = Shortfall("trainer", 1, ShortfallCause.NODE_EXCLUDED, "node node-a excluded", at(20), at(320))
    (sf,) = degraded.shortfalls(survey_of(cluster, 30), [excluded], at(30))
    assert sf is excluded


@pytest.mark.parametrize(
    ("index", "counted"),
    [
        pytest.param(1, True, id="an index without a Running pod"),
        pytest.param(0, False, id="an index whose pod runs"),
        pytest.param(7, False, id="an index the job does not want"),
    ],
)
def test_a_shortfall_handed_in_counts_only_for_an_index_that_should_run_and_does_not(
    index: int, counted: bool
) -> None:
    cluster = short_of_trainer_1()
    backoff = Shortfall("trainer", index, ShortfallCause.BACKOFF, "rule backoff 30s", at(20), at(50))
    found = degraded.shortfalls(survey_of(cluster, 30), [backoff], at(30))
    assert (backoff in found) is counted


def test_an_index_in_backoff_shows_until_when() -> None:
    cluster = short_of_trainer_1()
    backoff = Shortfall("trainer", 1, ShortfallCause.BACKOFF, "rule exitCodes 1: backoff 30s", at(25), at(55))
    written, events = degraded.update(
        cluster.job.status, cluster.job, survey_of(cluster, 30), [backoff], cluster.job.status, at(30)
    )
    status = as_json(written)
    (entry,) = status["degraded"]["indices"]
    assert (entry["cause"], entry["since"], entry["until"]) == (
        "Backoff",
        format_time(at(25)),
        format_time(at(55)),
    )
    assert status["degraded"]["since"] == format_time(at(20))  # the state's since holds
    assert events == ()


def test_the_message_says_when_fewer_than_min_replicas_run() -> None:
    job = seed_job(trainer(min_replicas=3))
    pods = running_seed()
    cluster = Cluster(seed_job(trainer(min_replicas=3), status=running_status(job, pods)), pods)
    cluster.pods[name_of("trainer", 1)].deleted(19, 0)
    cluster.step(20)
    unschedulable(cluster.pods[name_of("trainer", 1, 1)])
    cluster.step(21)
    assert cluster.status["degraded"]["message"].startswith(
        "replica trainer runs 2 of 3 pods, fewer than minReplicas 3:"
    )


# ---------------------------------------------------------------------------------------------
# The reason (the kubectl column) and the bounds


def short(replica: str, index: int, cause: ShortfallCause = ShortfallCause.UNSCHEDULABLE) -> Shortfall:
    """short: a Shortfall of ``replica``'s ``index`` for ``cause``."""
    return Shortfall(replica, index, cause, "why", at(0))


@pytest.mark.parametrize(
    ("given", "said"),
    [
        pytest.param([short("trainer", 1)], "trainer[1] Unschedulable", id="one index"),
        pytest.param([short("trainer", 1), short("trainer", 2)], "trainer[1 2] Unschedulable", id="two"),
        pytest.param(
            [short("trainer", 1), short("trainer", 2, ShortfallCause.BACKOFF)],
            "trainer[1] Unschedulable, trainer[2] Backoff",
            id="two causes",
        ),
        pytest.param(
            [short("trainer", i) for i in range(10)]
            + [short("launcher", 0, ShortfallCause.BUDGET_EXHAUSTED)],
            "11 short: 10 Unschedulable, 1 BudgetExhausted",
            id="too long for the column: counts",
        ),
    ],
)
def test_the_reason_is_short_enough_for_a_kubectl_column(given: list[Shortfall], said: str) -> None:
    assert degraded.reason(given) == said
    assert len(said) <= degraded.MAX_REASON


def test_the_status_lists_at_most_max_listed_indices_and_counts_them_all() -> None:
    n = MAX_LISTED + 8
    job = seed_job(trainer(replicas=n))
    pods = [Pod("trainer", i).running() for i in range(n)] + [Pod("launcher", 0).running(2)]
    status = running_status(job, pods)
    for i in range(1, n):
        pods[i] = unschedulable(Pod("trainer", i, 1, created=30))
    ledger = dict(status["restartLedger"])
    ledger["trainer"] = {
        **ledger["trainer"],
        "seenRuns": [[0, 1], [1, n - 1]],
        "ended": {str(i): 0 for i in range(n)},
    }
    cluster = Cluster(seed_job(trainer(replicas=n), status={**status, "restartLedger": ledger}), pods)
    cluster.step(31)
    state = cluster.status["degraded"]
    assert state["count"] == n - 1 and len(state["indices"]) == MAX_LISTED
    assert state["reason"] == f"{n - 1} short: {n - 1} Unschedulable"


def test_a_long_scheduler_message_is_cut() -> None:
    cluster = short_of_trainer_1()
    unschedulable(cluster.pods[name_of("trainer", 1, 1)], "x" * 5000)
    cluster.step(30)
    assert len(cluster.status["degraded"]["indices"][0]["message"]) < 600


def test_the_state_since_is_the_oldest_shortfall_but_never_later_than_now() -> None:
    cluster = short_of_trainer_1()
    ahead = Shortfall("trainer", 1, ShortfallCause.BACKOFF, "why", at(30) + timedelta(hours=1))
    state = degraded.state(cluster.job, survey_of(cluster, 30), [ahead], None, at(30))
    assert state.since == format_time(at(30))


# ---------------------------------------------------------------------------------------------
# Where the job's story is told: aitj explain, aitj get / list / describe


def test_aitj_explain_shows_the_degraded_state_the_next_pass_writes() -> None:
    cluster = short_of_trainer_1()
    told = explain(cluster.job, views(cluster.pods.values()), nodes(), at(30))
    assert told.degraded is not None
    assert (told.degraded.reason, told.degraded.count) == ("trainer[1] Unschedulable", 1)
    (index,) = told.degraded.indices
    assert (index.replica, index.index, index.cause, index.since) == (
        "trainer",
        1,
        "Unschedulable",
        format_time(at(20)),
    )
    text = header_lines(told)
    assert (
        f"  degraded since {format_time(at(20))}: trainer[1] Unschedulable: replica trainer runs 2 of 3"
        in ("\n".join(text))
    )
    assert told.to_json()["degraded"]["indices"][0]["cause"] == "Unschedulable"


def test_aitj_explain_of_a_job_that_runs_whole_shows_no_degraded_state() -> None:
    job = seed_job()
    pods = running_seed()
    told = explain(seed_job(status=running_status(job, pods)), views(pods), nodes(), at(30))
    assert told.degraded is None
    assert not any("degraded" in line for line in header_lines(told))


def test_aitj_get_list_and_describe_show_the_reason_and_each_index() -> None:
    cluster = short_of_trainer_1()
    body = {
        "metadata": {"name": cluster.job.name, "namespace": cluster.job.namespace},
        "spec": {"replicaSpecs": {"trainer": {"replicaType": "worker", "replicas": 3}}},
        "status": cluster.status,
    }
    assert jobview.job_row(body, [], at(30)).degraded == "trainer[1] Unschedulable"
    (row,) = jobview.shortfall_rows(body)
    assert (row.time, row.what, row.reason) == (format_time(at(20)), "trainer 1", "Unschedulable")
    assert row.message == f"pod {name_of('trainer', 1, 1)}: {SAID}"
    body["status"] = {}
    assert jobview.job_row(body, [], at(30)).degraded == ""
    assert jobview.shortfall_rows(body) == []
