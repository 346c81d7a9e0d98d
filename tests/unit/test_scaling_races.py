"""Scaling races (issue 24, section 2): a scale edit that lands while pods of an earlier one are
still on their way out.

A scale-in deletes the pods it takes away; a pod with a grace period keeps running (and
terminating) for a while. A scale-out into the same index before it is gone must not take it
for a pod that was lost: no restart counted, no ScaleFailed, no job failed. That the pod is
being deleted, and the ledger says the operator ended its generation, is what tells this case
from a pod someone else deleted (a real PodForceDeleted). Each scenario runs the planner pass
by pass on the simulated cluster of tests/unit/builders.py; the survey's verdicts are a table.
"""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core.api import Policy
from aitj.core.planner import plan
from aitj.core.planner.ledger import IndexHistory, Ledger
from aitj.core.planner.survey import State, survey
from aitj.core.policy import FailureKind
from tests.unit.builders import (
    Cluster,
    Pod,
    at,
    name_of,
    nodes,
    seed_job,
    trainer,
    views,
    with_replica,
)
from tests.unit.test_scaling import history, hosts, running, scale

T = [name_of("trainer", i) for i in range(4)]
T2_NEXT = name_of("trainer", 2, 1)


# ---------------------------------------------------------------------------------------------
# The survey's verdict on the pod of an index, by what the ledger and the pod say


def _verdict(deleting: bool, ledger: IndexHistory) -> tuple[State, int, FailureKind | None, list[str]]:
    """_verdict: (state, generation, failure kind, retire reasons) of trainer-2's slot when its
    generation-0 pod runs, maybe being deleted (grace 30 s), and the ledger holds ``ledger``."""
    job = seed_job()
    pod = Pod("trainer", 2).running()
    if deleting:
        pod.deleted(80, grace=30)
    pods = [Pod("trainer", i).running() for i in range(2)] + [pod, Pod("launcher", 0).running(2)]
    found = survey(job, views(pods), nodes(), Ledger().with_index("trainer", 2, ledger), at(85))
    (slot,) = [s for s in found.of("trainer") if s.index == 2]
    kind = slot.failure.kind if slot.failure is not None else None
    return slot.state, slot.generation, kind, [t.reason.value for t in found.retirees]


@pytest.mark.parametrize(
    ("deleting", "ledger", "expected"),
    [
        pytest.param(
            True,
            IndexHistory(seen=0, ended=0),
            (State.CREATE, 1, None, ["Ended"]),
            id="a terminating pod whose generation the operator ended is passed over: a new generation",
        ),
        pytest.param(
            True,
            IndexHistory(seen=0),
            (State.REPLACE, 1, FailureKind.POD_FORCE_DELETED, ["Restart"]),
            id="a terminating pod the operator did not end was deleted by someone else: a restart",
        ),
        pytest.param(
            False,
            IndexHistory(seen=0, ended=0),
            (State.RUNNING, 0, None, []),
            id="a live pod stays the index's pod whatever the ledger says of its generation",
        ),
        pytest.param(
            True,
            IndexHistory(seen=0, ended=0, failed=0, restarts=1),
            (State.REPLACE, 1, FailureKind.POD_FORCE_DELETED, ["RestartCounted"]),
            id="a terminating pod whose failure was counted is replaced without counting it again",
        ),
    ],
)
def test_the_survey_tells_a_pod_the_operator_ended_from_one_that_was_lost(
    deleting: bool, ledger: IndexHistory, expected: tuple[Any, ...]
) -> None:
    assert _verdict(deleting, ledger) == expected


# ---------------------------------------------------------------------------------------------
# Scale-in, then scale-out before the removed pod is gone


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({}, id="rules that restart PodForceDeleted would count a restart"),
        pytest.param({"rules": ()}, id="rules that do not restart it would raise ScaleFailed"),
        pytest.param({"scale_in_grace_period": 0}, id="a pod that was never drained: deleted at once"),
    ],
)
def test_a_scale_out_while_the_scaled_in_pod_terminates_counts_no_restart_and_succeeds(
    changes: dict[str, Any],
) -> None:
    cluster = running(3, **changes)
    scale(cluster, 2)
    cluster.step(20)
    cluster.step(80)  # the grace period is over: trainer-2 is deleted, and terminates for 30 s
    assert "deletionTimestamp" in cluster.pods[T[2]].raw["metadata"]
    scale(cluster, 3)
    result = cluster.step(85)
    assert [(c.index, c.generation) for c in result.creates] == [(2, 1)]
    cluster.run_all(86)
    cluster.step(86)
    cluster.terminate_deleted()
    cluster.step(90)
    assert cluster.counted == [] and cluster.status.get("RestartCount", {}).get("trainer", 0) == 0
    assert [h[:2] for h in history(cluster)] == [
        ("scalein", "ScaleSucceeded"),
        ("scaleout", "ScaleSucceeded"),
    ]
    assert cluster.status["phase"] == "Running" and hosts(cluster) == [T[0], T[1], T2_NEXT]
    assert T[2] not in cluster.pods


def test_an_edit_back_before_the_job_has_run_creates_the_index_again_and_fails_nothing() -> None:
    strict = trainer(fail_policy=Policy.ANY, rules=())  # any failure that stands fails the job
    job = seed_job(strict, status=plan(seed_job(strict), [], nodes(), at(0)).status)
    cluster = Cluster(job, [Pod("trainer", i) for i in range(3)])
    cluster.job = with_replica(cluster.job, "trainer", replicas=2)
    cluster.step(5)
    assert "deletionTimestamp" in cluster.pods[T[2]].raw["metadata"]
    cluster.job = with_replica(cluster.job, "trainer", replicas=3)
    result = cluster.step(6)
    assert result.outcome is None and cluster.status["phase"] != "Failed"
    assert [(c.index, c.generation) for c in result.creates] == [(2, 1)]
    cluster.terminate_deleted()
    cluster.run_all(7)
    cluster.step(7)
    cluster.step(8)
    assert cluster.status["phase"] == "Running" and cluster.counted == []


# ---------------------------------------------------------------------------------------------
# A scale-out into an index used before is judged by scaleTimeout, not restartTimeout


def _reused(**changes: Any) -> Cluster:
    """_reused: 3 -> 2 done and its pod gone, then 2 -> 3 at 90: index 2 gets generation 1,
    which stays Pending."""
    cluster = running(3, **changes)
    scale(cluster, 2)
    cluster.step(20)
    cluster.step(80)
    cluster.terminate_deleted()
    cluster.step(81)
    scale(cluster, 3)
    assert [(c.index, c.generation) for c in cluster.step(90).creates] == [(2, 1)]
    return cluster


@pytest.mark.parametrize(
    ("now", "reason"),
    [
        pytest.param(130, None, id="past restartTimeout 30 s, within scaleTimeout: still scaling"),
        pytest.param(150, None, id="no wake-up, no verdict for restartTimeout"),
        pytest.param(690, "ScaleTimeout", id="past scaleTimeout 600 s: rolled back as a scale timeout"),
    ],
)
def test_a_scale_out_into_a_used_index_is_judged_by_scale_timeout(now: int, reason: str | None) -> None:
    cluster = _reused(restart_timeout=30, scale_timeout=600)
    wake = cluster.step(100).requeue_after
    assert wake is not None and wake > 60  # the scale's deadline, not restartTimeout's
    cluster.step(now)
    outcomes = [h[1] for h in history(cluster) if h[0] != "scalein"]
    assert outcomes == ([reason] if reason else []) and cluster.counted == []
    assert cluster.status["phase"] != "Failed"
