"""The chaos schedule is seeded and pure, and offers only the faults the cluster allows; the
loop spares a job a fault hit until it has cooled (``run.cooled``)."""

from __future__ import annotations

import pytest

from aitj.tools.chaos.run import cooled
from aitj.tools.chaos.schedule import ANY_CLUSTER, LOCAL_ONLY, Allowed, FaultKind, available, schedule

EVERY = Allowed(local=True, drain=True, operator_pod=True, operator_process=True)


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another() -> None:
    kinds = available(EVERY)
    assert schedule(7, kinds, 600, 10) == schedule(7, kinds, 600, 10)
    assert schedule(7, kinds, 600, 10) != schedule(8, kinds, 600, 10)


def test_every_kind_runs_once_before_any_kind_runs_twice() -> None:
    kinds = available(EVERY)
    plan = schedule(3, kinds, 600, 10)
    assert sorted(p.kind for p in plan[: len(kinds)]) == sorted(kinds)


@pytest.mark.parametrize(
    ("duration", "interval", "max_faults", "most"),
    [(60, 10, None, 6), (600, 10, 5, 5), (5, 10, None, 0), (600, 0, None, 0)],
)
def test_duration_interval_and_max_faults_bound_the_schedule(
    duration: float, interval: float, max_faults: int | None, most: int
) -> None:
    plan = schedule(1, available(EVERY), duration, interval, max_faults)
    assert len(plan) <= most
    assert all(p.at <= duration for p in plan)
    assert [p.n for p in plan] == list(range(1, len(plan) + 1))


def test_a_cluster_without_the_local_control_plane_gets_only_faults_any_cluster_allows() -> None:
    kinds = available(Allowed(drain=True, operator_pod=True))
    assert set(kinds) == set(ANY_CLUSTER)
    assert not set(kinds) & set(LOCAL_ONLY)


@pytest.mark.parametrize(
    ("allowed", "absent"),
    [
        (Allowed(local=True), {FaultKind.DRAIN, FaultKind.OPERATOR_POD_DELETE, FaultKind.OPERATOR_KILL}),
        (Allowed(local=True, operator_process=True), {FaultKind.DRAIN, FaultKind.OPERATOR_POD_DELETE}),
        (Allowed(), {FaultKind.DRAIN, FaultKind.OPERATOR_POD_DELETE, *LOCAL_ONLY}),
    ],
)
def test_drain_and_operator_faults_need_their_opt_in_or_their_operator(
    allowed: Allowed, absent: set[FaultKind]
) -> None:
    # hang and kill (issue 28) come only when asked for by name (tests/unit/test_hang_chaos.py,
    # tests/unit/test_chaos_kill.py)
    assert set(available(allowed)) == set(FaultKind) - absent - {FaultKind.HANG, FaultKind.KILL}


def test_wanted_kinds_narrow_the_schedule_but_never_add_a_kind_the_cluster_refuses() -> None:
    kinds = available(Allowed(), (FaultKind.FORCE_DELETE, FaultKind.NODE_SILENT))
    assert kinds == (FaultKind.FORCE_DELETE,)
    assert {p.kind for p in schedule(1, kinds, 100, 10)} == {FaultKind.FORCE_DELETE}


@pytest.mark.parametrize(
    ("seen", "calm", "t", "state"),
    [
        pytest.param(False, False, 11.0, (10.0, True), id="disturbed: seen so"),
        pytest.param(True, False, 30.0, (10.0, True), id="still disturbed, however long"),
        pytest.param(True, True, 11.0, None, id="seen disturbed, steady again: done"),
        pytest.param(False, True, 12.0, (10.0, False), id="steady, the fault may not show yet"),
        pytest.param(False, True, 15.5, None, id="steady 5 s after the fault: it did not show"),
    ],
)
def test_a_job_a_fault_hit_cools_once_seen_disturbed_and_steady_again(
    seen: bool, calm: bool, t: float, state: tuple[float, bool] | None
) -> None:
    assert cooled(10.0, seen, calm, t) == state
