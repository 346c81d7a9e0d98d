"""A restart the job's end interrupts (issue 24, section 2, LOW): the old pods go.

A Replica-scope restart creates every pod of the replica anew, writes the status, then deletes
the old pods. A pass that stops between the two (the operator dies, or the status write is
refused as stale) leaves the old pods running next to their successors; if the job ends before
another pass finishes the restart, the end's cleanup must still delete them, whatever
cleanPodPolicy keeps: they are no longer the job's pods. Runs on the simulated cluster of
tests/unit/builders.py, stopping the restart's pass after each step of the executor's STEPS.
"""

from __future__ import annotations

import pytest

from aitj.controller.executor import STEPS
from aitj.core.api import CleanPodPolicy, RestartScope
from aitj.core.planner import retire
from aitj.core.planner.ledger import IndexHistory, Ledger
from aitj.core.planner.types import DeleteReason
from tests.unit.builders import (
    Cluster,
    Pod,
    exit_rule,
    launcher,
    name_of,
    running_seed,
    seed_job,
    trainer,
    views,
)

OLD = [name_of("trainer", i) for i in range(3)]
NEW = [name_of("trainer", i, 1) for i in range(3)]
# The steps after which the restart's creates have gone out and its deletes have not.
BEFORE_DELETES = [s.field for s in STEPS][
    [s.field for s in STEPS].index("creates") : [s.field for s in STEPS].index("deletes")
]


def _ended(stop_after: str | None, policy: CleanPodPolicy) -> Cluster:
    """_ended: trainer-1 exits 1 and its Replica-scope restart's pass stops after
    ``stop_after`` (None: its status write is refused as stale, which stops the pass); then
    the launcher succeeds and the job ends (two passes: the end, and one after it)."""
    job = seed_job(
        trainer(rules=(exit_rule("1", RestartScope.REPLICA),)), launcher(), clean_pod_policy=policy
    )
    cluster = Cluster(job, running_seed())
    cluster.step(10)
    cluster.pods[OLD[1]].exited(1, finished=19)
    if stop_after is None:
        cluster.step(20, status=False, rest=False)
    else:
        cluster.apply(cluster.plan(20), 20, stop_after=stop_after)
    assert sorted(n for n in NEW if n in cluster.pods) == sorted(NEW)  # the successors exist
    cluster.pods[name_of("launcher", 0)].exited(0, finished=25)
    cluster.step(26)
    cluster.step(27)
    assert cluster.status["phase"] == "Succeeded"
    return cluster


def _left_running(cluster: Cluster) -> list[str]:
    """_left_running: the old trainers that are not being deleted and have not finished."""
    return [
        n
        for n in OLD
        if n in cluster.pods
        and "deletionTimestamp" not in cluster.pods[n].raw["metadata"]
        and cluster.pods[n].raw["status"]["phase"] == "Running"
    ]


@pytest.mark.parametrize("policy", list(CleanPodPolicy), ids=lambda p: f"cleanPodPolicy {p}")
@pytest.mark.parametrize(
    "stop_after",
    [
        *(pytest.param(s, id=f"stopped after {s}") for s in BEFORE_DELETES),
        pytest.param(None, id="stale status"),
    ],
)
def test_the_old_pods_of_a_restart_the_end_interrupted_do_not_outlive_the_job(
    stop_after: str | None, policy: CleanPodPolicy
) -> None:
    cluster = _ended(stop_after, policy)
    assert _left_running(cluster) == []


def test_clean_pod_policy_none_still_keeps_the_job_s_own_pods() -> None:
    cluster = _ended("creates", CleanPodPolicy.NONE)
    kept = [n for n in NEW if "deletionTimestamp" not in cluster.pods[n].raw["metadata"]]
    assert kept == NEW and "deletionTimestamp" not in cluster.pods[name_of("launcher", 0)].raw["metadata"]


@pytest.mark.parametrize(
    ("pods", "seen", "deleted"),
    [
        pytest.param([Pod("trainer", 0), Pod("trainer", 0, 1)], -1, [OLD[0]], id="an older generation goes"),
        pytest.param([Pod("trainer", 0)], 1, [OLD[0]], id="so does one the ledger has seen a successor of"),
        pytest.param([Pod("trainer", 0, 1)], 1, [], id="the newest generation of its index stays"),
        pytest.param(
            [Pod("trainer", 0).deleted(5, 30), Pod("trainer", 0, 1)], -1, [], id="one being deleted is left"
        ),
    ],
)
def test_superseded_names_the_pods_whose_index_has_a_newer_generation(
    pods: list[Pod], seen: int, deleted: list[str]
) -> None:
    ledger = Ledger().with_index("trainer", 0, IndexHistory(seen=seen))
    found = retire.superseded(views(pods), ledger)
    assert [d.name for d in found] == deleted and all(d.reason is DeleteReason.RESTART for d in found)
