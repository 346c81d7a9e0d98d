"""A job whose pods all run while its training runs short (aitj.core.planner.width, issue 46):
the workers out of the ring, as a table over what the master's log shows, then whole passes:
the job degraded with cause OutOfRing, the Event, and back once the worker steps again."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from aitj.core.api import ShortfallCause
from aitj.core.observed import PodView
from aitj.core.planner import plan, width
from aitj.core.planner.core import assess
from aitj.core.planner.types import Settings
from aitj.core.trainlog import HostSeen, TrainingSeen
from tests.unit.builders import Cluster, at, name_of, node, nodes, running_seed, seed_job

NOW = 200.0  # seconds after T0: the read
T = at(NOW).timestamp()
PODS = [name_of("trainer", i) for i in range(3)]


def hosts(*steps: float | None) -> dict[str, HostSeen]:
    """hosts: each trainer's newest step line, seconds before the read (None: never)."""
    return {
        name: HostSeen(step=None if ago is None else T - ago, rank=i)
        for i, (name, ago) in enumerate(zip(PODS, steps, strict=True))
        if ago is not None
    }


def training(found: Mapping[str, HostSeen], width_seen: int = 2, last_ago: float = 0.5) -> TrainingSeen:
    return TrainingSeen(T, T - last_ago, width_seen, found, (0.1,) * 10)


def pass_views(seen: TrainingSeen | None, running_since: float = 1) -> list[PodView]:
    cluster = Cluster(seed_job(), running_seed(since=running_since))
    cluster.step(10)
    out = []
    for p in cluster.pods.values():
        v = p.view()
        out.append(dataclasses.replace(v, training=seen) if "-launcher-" in v.name else v)
    return out


@pytest.mark.parametrize(
    ("case", "seen", "want"),
    [
        ("trainer 2 silent 40 s while the ring steps at 2 of 3", training(hosts(0.5, 0.5, 40)), {2}),
        ("silent 20 s: not yet", training(hosts(0.5, 0.5, 20)), set()),
        ("never stepped, its pod ran long ago", training(hosts(0.5, 0.5, None)), {2}),
        ("the ring at full width", training(hosts(0.5, 0.5, 40), width_seen=3), set()),
        ("the ring does not step: a stall's business", training(hosts(15, 15, 40), last_ago=15), set()),
        ("no log read", None, set()),
        ("no step line ever", TrainingSeen(T), set()),
    ],
)
def test_the_workers_out_of_the_ring(case: str, seen: TrainingSeen | None, want: set[int]) -> None:
    result = plan(seed_job(), pass_views(seen), {"node-a": node()}, at(NOW))
    status = result.status
    assert status is not None, case
    got = {i.index for i in (status.degraded.indices if status.degraded else ()) or ()}
    assert got == want, case
    if want:
        assert status.degraded is not None and status.degraded.reason == "trainer[2] OutOfRing"
        (entry,) = status.degraded.indices or ()
        assert entry.cause is ShortfallCause.OUT_OF_RING and "world size 2 of 3" in (entry.message or "")
        assert [e.reason for e in result.events] == ["Degraded"]


def test_a_pod_that_ran_lately_is_out_since_it_ran() -> None:
    seen = training(hosts(0.5, 0.5, None))
    views = pass_views(seen, running_since=NOW - 10)  # its pods ran 10 s before the read
    result = plan(seed_job(), views, {"node-a": node()}, at(NOW))
    assert result.status is not None and result.status.degraded is None
    assert result.requeue_after == pytest.approx(20, abs=1)  # planned again 30 s after it ran


def test_the_job_is_no_longer_degraded_once_the_worker_steps() -> None:
    short = plan(seed_job(), pass_views(training(hosts(0.5, 0.5, 40))), {"node-a": node()}, at(NOW))
    assert short.status is not None and short.status.degraded is not None
    job = dataclasses.replace(seed_job(), status=short.status)
    back = plan(
        job, pass_views(training(hosts(0.5, 0.5, 0.5), width_seen=3)), {"node-a": node()}, at(NOW + 5)
    )
    assert back.status is not None and back.status.degraded is None
    assert [e.reason for e in back.events] == ["Recovered"]


def test_a_scale_outs_joining_pod_is_the_scale_operations() -> None:
    found = assess(seed_job(), pass_views(training(hosts(0.5, 0.5, 40))), nodes(), at(NOW), Settings()).found
    short, _ = width.out_of_ring(found)
    assert [(s.replica, s.index) for s in short] == [("trainer", 2)]
    assert width.out_of_ring(found, frozenset({("trainer", 2)})) == ((), None)
