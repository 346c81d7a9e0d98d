"""Workers that start running together join the discovery host list together
(aitj.core.planner.hostfiles, WAVE and HOLD): Horovod elastic can lose a worker that joins its
list while it re-forms around another, so one node's loss, or several deletes at once, must make
one change to the list, not one per replacement; a straggler keeps the others out for HOLD at
most, and a worker of another wave keeps no one out."""

from __future__ import annotations

from aitj.core.explain import explain
from aitj.core.planner.hostfiles import HOLD
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


def lose(cluster: Cluster, *indices: int, at: float = 100) -> None:
    """lose: the trainers at ``indices`` are force-deleted at once (as a lost node's are
    replaced in one pass) and their replacements created."""
    for i in indices:
        cluster.pods[OLD[i]].deleted(at, 0)
    created = cluster.step(at)
    assert sorted(c.name for c in created.creates) == [NEW[i] for i in indices]
    assert not {OLD[i] for i in indices} & set(hosts(cluster))  # deleted pods leave at once


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
