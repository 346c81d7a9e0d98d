"""The chaos invariant checker is honest: fed histories with violations, it reports each one;
fed the same histories without them, it reports none."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from aitj.core.api import Job, RestartPolicy
from aitj.core.observed import NodeView
from aitj.tools.chaos.expect import expected_restarts
from aitj.tools.chaos.history import (
    FaultRecord,
    History,
    JobSample,
    Leftover,
    NodeSample,
    OperatorRestart,
    PodSample,
    Probe,
)
from aitj.tools.chaos.invariants import (
    Bounds,
    Recovering,
    answering,
    leftovers,
    one_live_pod,
    recoveries,
    restart_counts,
    terminating,
)
from aitj.tools.chaos.schedule import FaultKind
from tests.unit.builders import JOB, NAMESPACE, Pod, event_rule, exit_rule, node, seed_job, trainer

KEY = (NAMESPACE, JOB)


class H:
    """H: a history built in order; every sample gets the next resourceVersion."""

    def __init__(self) -> None:
        self.h = History()
        self.rv = 0

    def _next(self) -> int:
        self.rv += 1
        return self.rv

    def pod(self, t: float, pod: Pod, *, gone: bool = False) -> H:
        self.h.pods.append(PodSample(t, self._next(), gone, pod.copy().view()))
        return self

    def node(self, t: float, view: NodeView) -> H:
        self.h.nodes.append(NodeSample(t, self._next(), False, view))
        return self

    def job(self, t: float, job: Job, **status: Any) -> H:
        status.setdefault("phase", "Running")
        status.setdefault(
            "conditions", [{"type": "Running", "reason": "R", "message": "all pods are running"}]
        )
        self.h.jobs.append(JobSample(t, self._next(), False, KEY, "uid", job, status))
        return self

    def fault(self, t: float, kind: FaultKind, *pods: Pod, healed: float | None = None) -> H:
        uids = tuple(str(p.raw["metadata"]["uid"]) for p in pods)
        n = len(self.h.faults) + 1
        self.h.faults.append(FaultRecord(n, t, kind, "x", jobs=(KEY,), pods=uids, healed=healed))
        return self

    def end(self, t: float) -> History:
        self.h.end = t
        return self.h


def one_trainer(**changes: Any) -> Job:
    return seed_job(trainer(replicas=1, **changes))


def steady_start() -> tuple[H, Pod]:
    p0 = Pod("trainer", 0).running(node="node-a")
    return H().node(0, node("node-a")).node(0, node("node-b")).job(0, one_trainer()).pod(0, p0), p0


# ---- one live pod per index -------------------------------------------------------------------
def test_two_live_pods_for_one_index_are_reported() -> None:
    h, _ = steady_start()
    h.pod(5, Pod("trainer", 0, generation=1).running(node="node-b"))
    check = one_live_pod(h.end(10))
    assert len(check.violations) == 1
    assert "2 live pods for replica trainer index 0" in check.violations[0].message


def test_a_replacement_next_to_its_terminating_or_failed_predecessor_is_fine() -> None:
    h, p0 = steady_start()
    h.pod(5, p0.deleted(5)).pod(5.1, Pod("trainer", 0, generation=1).running(node="node-b"))
    h.pod(6, Pod("trainer", 0, generation=1).exited(137)).pod(6.1, Pod("trainer", 0, generation=2))
    assert one_live_pod(h.end(10)).violations == []


def test_a_pod_once_on_a_lost_node_stays_lost_when_the_node_comes_back() -> None:
    h, _ = steady_start()
    h.node(5, node("node-a", "Unknown")).pod(6, Pod("trainer", 0, generation=1).running(node="node-b"))
    h.node(7, node("node-a", "True"))
    assert one_live_pod(h.end(10)).violations == []


# ---- RestartCount, from the faults -----------------------------------------------------------
def test_a_restart_count_off_by_one_is_reported() -> None:
    h, p0 = steady_start()
    h.fault(5, FaultKind.FORCE_DELETE, p0).pod(5, p0.deleted(5))
    h.pod(5.1, Pod("trainer", 0, generation=1).running(node="node-b"))
    history = h.job(6, one_trainer(), RestartCount={"trainer": 2}).end(10)
    check = restart_counts(history, expected_restarts(history))
    assert [v.message for v in check.violations] == ["RestartCount.trainer is 2, the faults called for 1"]


def test_a_restart_count_equal_to_what_the_faults_called_for_passes() -> None:
    h, p0 = steady_start()
    h.fault(5, FaultKind.FORCE_DELETE, p0).pod(5, p0.deleted(5))
    history = h.job(6, one_trainer(), RestartCount={"trainer": 1}).end(10)
    assert restart_counts(history, expected_restarts(history)).violations == []


def test_an_exit_code_no_rule_names_calls_for_no_restart() -> None:
    h, p0 = steady_start()
    h.fault(5, FaultKind.EXIT_CODE, p0).pod(5, p0.exited(1))
    expected = expected_restarts(h.end(10))
    assert expected.counts[KEY]["trainer"] == 0
    assert [c.restart for c in expected.failures[KEY]] == [False]


def test_an_exit_code_a_rule_names_calls_for_one_restart() -> None:
    rules = (exit_rule("137"), event_rule("nodeNotReady,PodForceDeleted"))
    p0 = Pod("trainer", 0).running(node="node-a")
    h = H().node(0, node("node-a")).job(0, one_trainer(rules=rules)).pod(0, p0)
    h.fault(5, FaultKind.EXIT_CODE, p0).pod(5, p0.exited(137))
    assert expected_restarts(h.end(10)).counts[KEY]["trainer"] == 1


def test_the_restart_limit_caps_the_count_the_faults_call_for() -> None:
    h = H().node(0, node("node-a")).job(0, one_trainer(restart_limit=1))
    for gen in range(3):
        p = Pod("trainer", 0, generation=gen).running(node="node-a")
        h.pod(gen * 10, p).fault(gen * 10 + 1, FaultKind.FORCE_DELETE, p).pod(gen * 10 + 1, p.deleted(1))
    assert expected_restarts(h.end(40)).counts[KEY]["trainer"] == 1


def test_a_deletion_the_command_did_not_make_is_the_operators_and_no_failure() -> None:
    h, p0 = steady_start()
    h.pod(5, p0.deleted(5))  # a scale-in, say: no fault aimed at it
    assert expected_restarts(h.end(10)).counts[KEY]["trainer"] == 0


def test_a_node_failure_counts_for_every_current_pod_on_the_node_once() -> None:
    h, _ = steady_start()
    h.node(5, node("node-a", "False")).node(6, node("node-a", "Unknown"))
    assert expected_restarts(h.end(10)).counts[KEY]["trainer"] == 1


def test_a_policy_that_does_not_restart_events_calls_for_nothing() -> None:
    p0 = Pod("trainer", 0).running(node="node-a")
    job = one_trainer(restart_policy=RestartPolicy.EXIT_CODE, rules=(exit_rule("137"),))
    h = H().node(0, node("node-a")).job(0, job).pod(0, p0).node(5, node("node-a", "False"))
    assert expected_restarts(h.end(10)).counts[KEY]["trainer"] == 0


def test_counts_start_from_the_restart_count_first_seen() -> None:
    p0 = Pod("trainer", 0, generation=4).running(node="node-a")
    h = H().node(0, node("node-a")).job(0, one_trainer(), RestartCount={"trainer": 4}).pod(0, p0)
    h.fault(5, FaultKind.FORCE_DELETE, p0).pod(5, p0.deleted(5))
    history = h.job(6, one_trainer(), RestartCount={"trainer": 5}).end(10)
    assert restart_counts(history, expected_restarts(history)).violations == []


# ---- recovery -----------------------------------------------------------------------------------
def test_a_job_back_at_its_replica_count_recovers_with_the_time_it_took() -> None:
    h, p0 = steady_start()
    h.fault(5, FaultKind.FORCE_DELETE, p0).pod(5.2, p0.deleted(5))
    h.pod(5.5, Pod("trainer", 0, generation=1).on("node-b")).pod(
        7, Pod("trainer", 0, generation=1).running(node="node-b")
    )
    history = h.end(20)
    check, recs = recoveries(history, expected_restarts(history), Bounds(recovery=10))
    assert check.violations == []
    assert recs[0].seconds == 2.0


def test_a_job_not_back_within_the_bound_is_reported() -> None:
    h, p0 = steady_start()
    h.fault(5, FaultKind.FORCE_DELETE, p0).pod(5.2, p0.deleted(5))
    history = h.end(60)
    check, recs = recoveries(history, expected_restarts(history), Bounds(recovery=10))
    assert len(check.violations) == 1
    assert recs[0].seconds is None


@pytest.mark.parametrize(
    ("healed", "seen", "recovered"),
    [
        pytest.param(
            None, [(5.5, True), (6.5, True), (7.5, True)], (7.5, 0.0), id="never disturbed: at once"
        ),
        pytest.param(
            None, [(5.5, False), (8, True), (8.5, True), (9, True)], (9, 3.0), id="disturbed, then held"
        ),
        pytest.param(
            None,
            [(5.5, False), (8, True), (8.5, False), (10, True), (10.5, True), (11, True)],
            (11, 5.0),
            id="a relapse restarts the hold",
        ),
        pytest.param(
            20.0, [(10, True), (20.5, True), (21.5, True), (22.5, True)], (22.5, 0.0), id="healed later"
        ),
        pytest.param(None, [(5.5, False), (8, True)], None, id="not held long enough"),
    ],
)
def test_a_fault_recovers_once_its_jobs_hold_steady(
    healed: float | None, seen: list[tuple[float, bool]], recovered: tuple[float, float] | None
) -> None:
    r = Recovering(FaultRecord(1, 5.0, FaultKind.FORCE_DELETE, "x", jobs=(KEY,), healed=healed))
    found = None
    for t, calm in seen:
        took = r.see(t, {KEY: calm}.__getitem__)
        if took is not None:
            found = (t, took)
            break
    assert found == recovered


# ---- Terminating, leftovers, answering ---------------------------------------------------------------
def test_a_pod_stuck_terminating_is_reported_and_one_that_goes_is_not() -> None:
    h, p0 = steady_start()
    stuck = Pod("trainer", 1).running(node="node-a")
    h.pod(1, stuck).pod(2, stuck.deleted(2)).pod(5, p0.deleted(5)).pod(6, p0, gone=True)
    check = terminating(h.end(200), Bounds(terminating=90))
    assert [v.message.split(" Terminating")[0] for v in check.violations] == [f"pod {stuck.name}"]


def test_a_pod_within_its_own_long_grace_period_is_not_stuck_but_past_it_is() -> None:
    # A trainer no rule replaces ends on the kubelet's clock (the seed's: 300 s).
    h, _ = steady_start()
    slow = Pod("trainer", 1).running(node="node-a")
    h.pod(1, slow).pod(2, slow.deleted(2, grace=300)).pod(303, slow, gone=True)
    assert terminating(h.end(400), Bounds(terminating=90)).violations == []
    h2, _ = steady_start()
    stuck = Pod("trainer", 1).running(node="node-a")
    h2.pod(1, stuck).pod(2, stuck.deleted(2, grace=300)).pod(340, stuck, gone=True)
    (v,) = terminating(h2.end(400), Bounds(terminating=90)).violations
    assert "Terminating for 338s (bound 330s)" in v.message


def test_objects_left_after_a_job_is_deleted_are_reported() -> None:
    history = History(
        deleted_jobs=[KEY], leftovers=[Leftover(KEY, "service", JOB), Leftover(KEY, "pod", "p")]
    )
    check = leftovers(history)
    assert check.checks == 1
    assert [v.message for v in check.violations] == [f"service {JOB} left behind", "pod p left behind"]


def test_an_operator_silent_longer_than_the_bound_is_reported_unless_a_fault_stopped_it() -> None:
    probes = [Probe(float(t), "u", not 10 <= t < 20) for t in range(30)]
    assert len(answering(History(probes=probes), Bounds(answering=5)).violations) == 1
    killed = History(probes=probes, faults=[FaultRecord(1, 9.5, FaultKind.OPERATOR_KILL, "op")])
    assert answering(killed, Bounds(answering=5, operator_restart=30)).violations == []
    restarted = History(probes=probes, restarts=[OperatorRestart(10.2, "u", 3)])
    assert answering(restarted, Bounds(answering=5, operator_restart=30)).violations == []
    elsewhere = History(probes=probes, restarts=[OperatorRestart(10.2, "other", 3)])
    assert len(answering(elsewhere, Bounds(answering=5, operator_restart=30)).violations) == 1


def test_a_pod_replayed_before_its_node_is_first_seen_is_neither_lost_nor_failed() -> None:
    p0 = Pod("trainer", 0).running(node="node-a")
    h = H().job(0, one_trainer()).pod(0, p0).node(0, node("node-a"))
    h.pod(5, Pod("trainer", 0, generation=1).running(node="node-a"))
    history = h.end(10)
    assert expected_restarts(history).counts[KEY]["trainer"] == 0
    assert len(one_live_pod(history).violations) == 1  # p0 stayed live: it was never lost


def test_a_pod_marked_for_eviction_is_not_live_beside_its_replacement() -> None:
    h, p0 = steady_start()
    h.pod(5, p0.disrupted("EvictionByEvictionAPI", 5))
    h.pod(5.1, Pod("trainer", 0, generation=1).running(node="node-b"))
    assert one_live_pod(h.end(10)).violations == []


def test_a_node_blip_makes_its_restarts_a_range_and_its_pods_live_again_unless_replaced() -> None:
    h, _ = steady_start()
    h.node(5, node("node-a", "Unknown")).node(5.5, node("node-a", "True"))
    history = h.job(9, one_trainer(), RestartCount={"trainer": 0}).end(10)
    expected = expected_restarts(history)
    assert (expected.counts[KEY]["trainer"], expected.maybe[KEY]["trainer"]) == (0, 1)
    assert restart_counts(history, expected).violations == []
    history.jobs[-1] = JobSample(9, 99, False, KEY, "uid", one_trainer(), {"RestartCount": {"trainer": 2}})
    assert "called for 0 to 1 (node blips)" in restart_counts(history, expected).violations[0].message
    _, recs = recoveries(history, expected, Bounds())
    assert recs == []


def test_a_late_relisted_sample_takes_the_time_of_what_came_after_it() -> None:
    h, p0 = steady_start()
    h.pod(9, Pod("trainer", 0, generation=1).running(node="node-b"))
    h.h.pods.append(PodSample(30, 4, False, p0.view()))  # relisted at 30 s, resourceVersion 4
    times = [s.t for s in h.end(40).timeline()]
    assert times == sorted(times)
    assert max(times) == 9


def restart_echo(*, node_fault: bool) -> History:
    """restart_echo: an apiserver restart from 3 s to 4 s; node-a not Ready from 5 s to 10 s (a
    spell past BLIP) with the operator replacing nothing; optionally a node fault aimed at it."""
    h, _ = steady_start()
    h.h.faults.append(FaultRecord(1, 3, FaultKind.APISERVER_RESTART, "kube-apiserver", healed=4))
    if node_fault:
        h.h.faults.append(FaultRecord(2, 5, FaultKind.NODE_NOT_READY, "node-a", jobs=(KEY,), healed=10))
    h.node(5, node("node-a", "Unknown")).node(10, node("node-a", "True"))
    return h.job(15, one_trainer(), RestartCount={"trainer": 0}).end(20)


def test_a_node_spell_an_apiserver_restart_echoes_is_a_blip_however_long() -> None:
    history = restart_echo(node_fault=False)
    expected = expected_restarts(history)
    assert (expected.counts[KEY]["trainer"], expected.maybe[KEY]["trainer"]) == (0, 1)
    assert restart_counts(history, expected).violations == []
    check, _ = recoveries(history, expected, Bounds(recovery=10))
    assert check.violations == []  # the pod is live again: the job is back at its count


def test_a_node_fault_during_an_apiserver_restarts_echo_still_counts() -> None:
    history = restart_echo(node_fault=True)
    expected = expected_restarts(history)
    assert (expected.counts[KEY]["trainer"], sum(expected.maybe.get(KEY, Counter()).values())) == (1, 0)
    assert "called for 1" in restart_counts(history, expected).violations[0].message
