"""The recovery watchdog's log reads (aitj.controller.training_watch): idle while nothing
recovers, reading the master's log after a restart until training steps again, marking the
pods whose rank still waits, handing the planner the same marked views while that stands, and
kicking the job's pass when it changes. The log read is a stand-in here; the real-node test
(tests/e2e/real/test_watchdog.py) reads a real kubelet's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from aitj.controller import progress
from aitj.controller import training_watch as watch
from aitj.core.observed import PodView
from aitj.core.wire import format_time
from tests.unit.builders import JOB, NAMESPACE, at, running_seed, views

KEY = (NAMESPACE, JOB)
RESTART = 100.0  # seconds after T0: the restart of trainer 2


def stamp(second: float) -> str:
    return at(second).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def line(second: float, host: str, rank: int, text: str) -> str:
    return f"{stamp(second)} [{rank}]<stdout>:[12:00:00] {host} rank {rank}/3: {text}\n"


class Log:
    """Log: the stand-in for ``raw_get``: answers the master's log with ``text``."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: list[list[tuple[str, str]]] = []

    def __call__(self, _api: Any, path: str, *, query: Sequence[tuple[str, str]], accept: str) -> Any:
        self.calls.append(list(query))
        return 200, self.text.encode()


def job(restarted: bool) -> dict[str, Any]:
    restarts = [{"time": format_time(at(RESTART)), "replica": "trainer", "index": 2}] if restarted else []
    return {
        "spec": {
            "replicaSpecs": {"launcher": {"replicaType": "master"}, "trainer": {"replicaType": "worker"}}
        },
        "status": {"restarts": restarts},
    }


@pytest.fixture
def pods() -> list[PodView]:
    return views(running_seed())  # created at 0: all predate the restart


def made(body: dict[str, Any], pods: list[PodView], now: float) -> tuple[watch.TrainingWatch, list[Any]]:
    kicks: list[Any] = []
    clock = [at(now).timestamp()]
    w = watch.TrainingWatch(None, lambda _k: body, lambda _k: pods, kicks.append, clock=lambda: clock[0])  # type: ignore[arg-type]
    w.now = clock  # type: ignore[attr-defined]
    return w, kicks


def trainer_hosts(pods: list[PodView]) -> list[str]:
    return sorted(p.name for p in pods if p.replica == "trainer")


def test_nothing_is_read_while_nothing_recovers(pods: list[PodView], monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log()
    monkeypatch.setattr(progress, "raw_get", log)
    w, kicks = made(job(restarted=False), pods, 50)
    w.read(KEY)
    assert log.calls == [] and kicks == []


def test_a_rank_still_waiting_after_the_bound_is_marked_and_the_job_kicked(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    log = Log()
    monkeypatch.setattr(progress, "raw_get", log)
    before = "".join(
        line(95 + k * 0.1, h, r, f"step {k}/1000") for k in range(5) for r, h in enumerate((t0, t1, t2))
    )
    log.text = before + line(104, t0, 0, "reset: world size now 2, resuming at step 4")
    w, kicks = made(job(restarted=True), pods, 120)
    w.read(KEY)  # 20 s after the restart: within the bound
    assert dict(log.calls[0])["tailLines"] == "200" and kicks == [] and w.views(KEY, pods) is pods
    w.now[0] = at(131).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert kicks == [KEY]
    marked = w.views(KEY, pods)
    waiting = [p.name for p in marked if p.waiting is not None]
    assert sorted(waiting) == [t1, t2]  # stepped before the restart, neither stepped nor re-formed since
    assert w.views(KEY, pods) == marked and [id(p) for p in w.views(KEY, pods)] == [id(p) for p in marked]
    # Training steps again: done with this recovery, the mark goes, the job is kicked once more.
    log.text += line(132, t0, 0, "step 5/1000")
    w.now[0] = at(133).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert kicks == [KEY, KEY] and w.views(KEY, pods) is pods
    calls = len(log.calls)
    w.read(KEY)
    assert len(log.calls) == calls  # recovered: not read again until the next restart


def test_a_log_with_no_line_of_a_trainings_is_left_alone_after_the_bound(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log()
    log.text = f"{stamp(99)} some other program\n"
    monkeypatch.setattr(progress, "raw_get", log)
    w, kicks = made(job(restarted=True), pods, 131)
    w.read(KEY)
    w.read(KEY)
    assert len(log.calls) == 1 and kicks == []  # no signal: nothing to judge, nothing read again


def test_the_master_is_the_running_current_pod_of_index_0(pods: list[PodView]) -> None:
    master = watch.master_pod(job(restarted=True), pods)
    assert master is not None and master.replica == "launcher" and master.index == 0
    assert watch.master_pod({"spec": {"replicaSpecs": {"trainer": {"replicaType": "worker"}}}}, pods) is None
