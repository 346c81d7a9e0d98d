"""Each restart is recorded exactly once (issue 11, item 3), whatever happens to the pass that
decided it: one Event, one ``status.restarts`` entry, one count in the metrics and the log.

The test double (builders.Cluster) walks the executor's STEPS: ``stop_after`` is an operator
that dies once a step is done; ``status=False, rest=False`` is a status write that fails (a
stale job: 422 on the resourceVersion test), which stops the pass."""

from __future__ import annotations

import pytest

from aitj.controller.executor import STEPS
from aitj.core.api import RestartScope
from aitj.core.observed import ANNOTATION_LEDGER
from aitj.core.planner.ledger import Ledger
from tests.unit.builders import (
    Cluster,
    event_rule,
    name_of,
    node,
    nodes,
    running_seed,
    seed_job,
    with_replica,
    with_status,
)

TRAINERS = [name_of("trainer", i) for i in range(3)]
LAUNCHER = name_of("launcher", 0)
RESTART_EVENT = "test-horovod-elastic.e4b904c7.restart-trainer-0-0"


def running() -> Cluster:
    """running: the seed job with every pod Running, its first status written."""
    cluster = Cluster(seed_job(), running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def settle(cluster: Cluster, start: float) -> None:
    """settle: the passes that follow, with the pods running, until nothing is left to do."""
    for now in range(int(start), int(start) + 4):
        cluster.terminate_deleted()
        cluster.run_all(now)
        cluster.step(now)


def recorded(cluster: Cluster) -> list[tuple[str, int, int]]:
    """recorded: the (replica, index, generation) of each status.restarts entry."""
    return [(r["replica"], r["index"], r["generation"]) for r in cluster.status.get("restarts", [])]


def counted(cluster: Cluster) -> list[tuple[str, int, int]]:
    return [r.key for r in cluster.counted]


def restart_events(cluster: Cluster) -> list[str]:
    return sorted(name for name, e in cluster.events.items() if e.reason == "TrainingJobRestarting")


def test_a_pass_whose_status_write_fails_after_its_creates_is_recorded_once_by_the_next() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    first = cluster.step(101, status=False, rest=False)  # the pod is created; the status write fails
    assert [c.name for c in first.creates] == [name_of("trainer", 0, 1)]
    assert restart_events(cluster) == [RESTART_EVENT]  # said before the status write
    assert counted(cluster) == [] and "restarts" not in cluster.status
    second = cluster.step(102)
    assert second.restarts == first.restarts  # as decided: its time, its latency
    assert second.restarts[0].latency_seconds == 1
    assert second.creates == () and second.deletes == () and TRAINERS[0] not in cluster.pods
    settle(cluster, 103)
    assert restart_events(cluster) == [RESTART_EVENT]
    assert recorded(cluster) == [("trainer", 0, 0)] and counted(cluster) == [("trainer", 0, 0)]
    assert cluster.status["restarts"][0]["time"] == "2022-01-14T09:03:33Z"  # when it was decided
    assert cluster.status["RestartCount"]["trainer"] == 1


@pytest.mark.parametrize("step", [s.field for s in STEPS])
def test_an_operator_that_dies_after_any_step_leaves_one_event_one_record_and_at_most_one_count(
    step: str,
) -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.apply(cluster.plan(101), 101, stop_after=step)
    settle(cluster, 102)
    assert restart_events(cluster) == [RESTART_EVENT]
    assert recorded(cluster) == [("trainer", 0, 0)]
    # Counted once, but for a death between the status write and the count (when the executor
    # returns): the counters die with the process (docs/operator.md).
    fields = [s.field for s in STEPS]
    died_after_the_write = fields.index(step) >= fields.index("status")
    assert counted(cluster) == ([] if died_after_the_write else [("trainer", 0, 0)])
    assert cluster.status["RestartCount"]["trainer"] == 1


def test_a_pass_planned_twice_from_the_same_snapshot_says_it_once() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    first, replay = cluster.plan(101), cluster.plan(101)  # the cache had not caught up yet
    assert first == replay
    cluster.apply(first, 101)
    # The replay's creates meet the pods (AlreadyExists), its Event its name; its status write
    # fails the resourceVersion test (a stale job), which stops the pass before it counts.
    cluster.apply(replay, 101, status=False, rest=False)
    settle(cluster, 102)
    assert restart_events(cluster) == [RESTART_EVENT]
    assert recorded(cluster) == [("trainer", 0, 0)] and counted(cluster) == [("trainer", 0, 0)]


def test_a_second_restart_of_the_same_index_is_recorded_with_the_one_not_yet_recorded() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.step(101, status=False, rest=False)
    cluster.pods[name_of("trainer", 0, 1)].deleted(101, grace=0)  # the replacement goes too
    second = cluster.step(102)
    assert [r.key for r in second.restarts] == [("trainer", 0, 0), ("trainer", 0, 1)]
    settle(cluster, 103)
    assert recorded(cluster) == counted(cluster) == [("trainer", 0, 0), ("trainer", 0, 1)]
    assert len(restart_events(cluster)) == 2 and cluster.status["RestartCount"]["trainer"] == 2


def test_a_restart_recorded_once_is_not_recorded_again_when_the_history_drops_it() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.step(101)
    cluster.job = with_status(cluster.job, {**cluster.status, "restarts": []})
    settle(cluster, 102)
    assert recorded(cluster) == [] and counted(cluster) == [("trainer", 0, 0)]


def test_the_pass_in_which_the_job_ends_records_a_restart_an_earlier_pass_did_not() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.step(101, status=False, rest=False)
    cluster.pods[LAUNCHER].exited(0, finished=101)
    last = cluster.step(102)
    assert last.outcome is not None and [r.key for r in last.restarts] == [("trainer", 0, 0)]
    assert [e.name for e in last.restart_events] == [RESTART_EVENT]
    assert recorded(cluster) == [("trainer", 0, 0)]


def test_a_scope_all_restart_lost_with_its_status_is_recorded_once() -> None:
    job = with_replica(seed_job(), "trainer", rules=(event_rule("nodeNotReady", RestartScope.ALL),))
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    cluster = Cluster(job, pods)
    cluster.step(10)
    cluster.nodes = nodes(node("node-a"), node("node-b", "False", since=95))
    cluster.step(100, status=False, rest=False)
    settle(cluster, 101)
    assert recorded(cluster) == counted(cluster) == [("trainer", 2, 0)]
    assert restart_events(cluster) == ["test-horovod-elastic.e4b904c7.restart-trainer-2-0"]


def test_every_pod_a_pass_creates_carries_the_restarts_it_records() -> None:
    cluster = running()
    cluster.pods[TRAINERS[0]].deleted(100, grace=0)
    cluster.pods[TRAINERS[1]].deleted(100, grace=0)
    result = cluster.step(101, status=False, rest=False)
    assert len(result.creates) == 2 and len(result.restarts) == 2
    for c in result.creates:
        carried = Ledger.from_annotation(c.body["metadata"]["annotations"][ANNOTATION_LEDGER])
        assert carried.unrecorded() == result.restarts
