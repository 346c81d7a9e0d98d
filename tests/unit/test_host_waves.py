"""Workers that start running together join the discovery host list together, and workers
deleted together leave it together (aitj.core.planner.hostfiles: WAVE and HOLD, LEAVE_WAVE).
Horovod elastic can lose a worker that joins its list while it re-forms around another, and can
wait minutes on telling a deleted rank 0 of its own removal, so one node's loss, or several
deletes in a row, must make one change to the list, not one per pod; a straggler keeps the
others out for HOLD at most, and a worker of another wave keeps no one out."""

from __future__ import annotations

import pytest

from aitj.core.explain import explain
from aitj.core.planner.hostfiles import HOLD, LEAVE_WAVE
from tests.unit.builders import Cluster, Pod, at, name_of, seed_job, views

OLD = [name_of("trainer", i) for i in range(3)]
NEW = [name_of("trainer", i, 1) for i in range(3)]


def running() -> Cluster:
    """running: the seed job, its 3 trainers and launcher Running and listed."""
    pods = [Pod("trainer", i).running() for i in range(3)] + [Pod("launcher", 0).running(2)]
    cluster = Cluster(seed_job(), pods)
    cluster.step(10)
    assert hosts(cluster) == OLD
    return cluster


def hosts(cluster: Cluster) -> list[str]:
    return list(cluster.status["discoveryHosts"])


WAIT = LEAVE_WAVE.total_seconds()


def lose(cluster: Cluster, *indices: int, at: float = 100) -> None:
    """lose: the trainers at ``indices`` are force-deleted at once (the operator sees them in
    one pass, as a lost node's), their replacements created, and the pass LEAVE_WAVE later has
    them leave the list."""
    before = hosts(cluster)
    for i in indices:
        cluster.pods[OLD[i]].deleted(at, 0)
    created = cluster.step(at)
    assert sorted(c.name for c in created.creates) == [NEW[i] for i in indices]
    assert hosts(cluster) == before and created.requeue_after == WAIT  # kept until the wave is over
    cluster.step(at + WAIT)
    assert not {OLD[i] for i in indices} & set(hosts(cluster))


def test_replacements_of_one_wave_join_the_list_in_one_change() -> None:
    cluster = running()
    lose(cluster, 0, 2)
    cluster.pods[NEW[0]].running(102)
    first = cluster.step(102)
    assert hosts(cluster) == [OLD[1]] and first.discovery is None  # the list is not rewritten
    assert first.requeue_after == HOLD.total_seconds()  # the hold's end plans the job again
    said = explain(cluster.job, views(cluster.pods.values()), cluster.nodes, at(102)).next_pass
    assert f"leave {NEW[0]} out of the host list until the others of its wave run" in " ".join(said)
    cluster.pods[NEW[2]].running(102.25)
    second = cluster.step(102.25)
    assert hosts(cluster) == [NEW[0], OLD[1], NEW[2]] and second.discovery is not None


def test_deletes_one_after_another_leave_the_list_in_one_change() -> None:
    cluster = running()
    cluster.pods[OLD[0]].deleted(100, 0)
    first = cluster.step(100.9)  # the first delete's event (the API keeps its time to the second)
    cluster.pods[OLD[2]].deleted(101, 0)
    second = cluster.step(101.05)  # the second's, 0.15 s later (kubectl deletes them one by one)
    assert first.discovery is None and second.discovery is None and hosts(cluster) == OLD
    assert first.requeue_after == pytest.approx(WAIT - 0.9)
    assert second.requeue_after == pytest.approx(WAIT - 0.05)  # from the newest delete
    gone = cluster.step(101 + WAIT)
    assert hosts(cluster) == [OLD[1]] and gone.discovery is not None


def test_a_pod_deleted_with_a_grace_period_leaves_once_its_wave_is_over() -> None:
    cluster = running()
    cluster.pods[OLD[1]].deleted(100, 30)  # deletionTimestamp 130: asked to go at 100
    assert cluster.step(100.1).discovery is None and hosts(cluster) == OLD
    cluster.step(100 + WAIT)
    assert OLD[1] not in hosts(cluster)


def test_a_straggler_keeps_the_others_out_for_the_hold_at_most() -> None:
    cluster = running()
    lose(cluster, 0, 2)
    cluster.pods[NEW[0]].running(102)
    cluster.pods[NEW[2]].creating()  # scheduled, its image still pulling
    waiting = cluster.step(104)
    assert hosts(cluster) == [OLD[1]] and waiting.requeue_after == 3.0
    joined = cluster.step(102 + HOLD.total_seconds())
    assert hosts(cluster) == [NEW[0], OLD[1]] and joined.discovery is not None
    cluster.pods[NEW[2]].running(130)
    cluster.step(130)
    assert hosts(cluster) == [NEW[0], OLD[1], NEW[2]]


def test_a_replacement_alone_joins_as_soon_as_it_runs() -> None:
    cluster = running()
    lose(cluster, 1)
    cluster.pods[NEW[1]].running(102)
    result = cluster.step(102)
    assert hosts(cluster) == [OLD[0], NEW[1], OLD[2]] and result.discovery is not None


def test_a_worker_pending_since_an_earlier_wave_keeps_no_one_out() -> None:
    cluster = running()
    lose(cluster, 2)  # its replacement cannot be placed: it stays Pending
    lose(cluster, 0, at=200)
    cluster.pods[NEW[0]].running(202)
    cluster.step(202)
    assert hosts(cluster) == [NEW[0], OLD[1]]
