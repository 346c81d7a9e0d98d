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
from aitj.core.trainlog import TrainingSeen
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
        asked = dict(query)
        lines = self.text.splitlines(keepends=True)
        if "sinceTime" in asked:  # the kubelet's: the lines written from that second on
            lines = [x for x in lines if x[:19] + "Z" >= asked["sinceTime"]]
        else:
            lines = lines[-int(asked["tailLines"]) :]
        return 200, "".join(lines).encode()[: int(asked["limitBytes"])]


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Log:
    """log: the master's log, the stand-in every read of it gets."""
    stand_in = Log()
    monkeypatch.setattr(progress, "raw_get", stand_in)
    return stand_in


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


def ring_steps(*hosts: str) -> str:
    """ring_steps: five steps of the ring of ``hosts`` (rank by place), 95 to 95.4 s."""
    return "".join(line(95 + k * 0.1, h, r, f"step {k}/1000") for k in range(5) for r, h in enumerate(hosts))


def launches(body: dict[str, Any], command: str) -> None:
    """launches: the job's launcher runs ``command`` in bash."""
    container = {"name": "a", "command": ["/bin/bash", "-c", command]}
    body["spec"]["replicaSpecs"]["launcher"]["template"] = {"spec": {"containers": [container]}}


def waiting_in(w: watch.TrainingWatch, pods: list[PodView]) -> list[str]:
    return [p.name for p in w.views(KEY, pods) if p.waiting is not None]


def test_while_nothing_recovers_the_log_is_read_now_and_then(pods: list[PodView], log: Log) -> None:
    log.text = f"{stamp(49)} Horovod starting\n"
    w, kicks = made(job(restarted=False), pods, 50)
    w.read(KEY)
    w.read(KEY)
    assert len(log.calls) == 1 and kicks == []  # no step line yet: read again a minute on
    w.now[0] = at(50 + watch.NO_SIGNAL_READ_SECONDS).timestamp()  # type: ignore[attr-defined]
    t0 = trainer_hosts(pods)[0]
    log.text += line(100, t0, 0, "step 1/1000")
    w.read(KEY)
    w.now[0] += watch.IDLE_READ_SECONDS - 0.1  # type: ignore[attr-defined]
    w.read(KEY)
    assert len(log.calls) == 2 and kicks == []  # a signal: every IDLE_READ_SECONDS
    w.now[0] += 0.1  # type: ignore[attr-defined]
    w.read(KEY)
    assert len(log.calls) == 3
    assert watch.idle_seconds(w.jobs[KEY].seen, 1000) == 1000 / watch.IDLE_READS_PER_SECOND


def test_a_worker_that_died_in_a_pod_that_runs_on_is_marked_out_of_the_ring(
    pods: list[PodView], log: Log
) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    steps = ring_steps(t0, t1, t2)
    log.text = steps + f"{stamp(99.6)} INFO:root:record state: {t1}.job[0] = FAILURE\n"
    body = job(restarted=False)
    body["status"]["discoveryHosts"] = [t0, t1, t2]
    w, kicks = made(body, pods, 100)
    w.read(KEY)
    marked = {p.name: p.waiting for p in w.views(KEY, pods) if p.waiting is not None}
    assert list(marked) == [t1] and marked[t1] is not None and marked[t1].left and kicks == [KEY]
    body["status"]["discoveryHosts"] = [t0, t2]  # a pod out of the host list (a scale-in) is not
    w.now[0] = at(106).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert waiting_in(w, pods) == [] and kicks == [KEY, KEY]


def test_a_rank_still_waiting_after_the_bound_is_marked_and_the_job_kicked(
    pods: list[PodView], log: Log
) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    before = ring_steps(t0, t1, t2)
    log.text = before + line(104, t0, 0, "reset: world size now 2, resuming at step 4")
    w, kicks = made(job(restarted=True), pods, 105)
    w.read(KEY)  # 1 s after t0 moved on: within the late bound
    # Kicked once: the host list's hold reads the first read after the fault (ring_hold).
    assert dict(log.calls[0])["tailLines"] == "200" and kicks == [KEY] and not waiting_in(w, pods)
    w.now[0] = at(107).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert kicks == [KEY, KEY]
    marked = w.views(KEY, pods)
    waiting = [p.name for p in marked if p.waiting is not None]
    assert sorted(waiting) == [t1, t2]  # stepped before the restart, neither stepped nor re-formed since
    assert w.views(KEY, pods) == marked and [id(p) for p in w.views(KEY, pods)] == [id(p) for p in marked]
    # Training steps again: done with this recovery, the mark goes, the job is kicked once more.
    log.text += line(132, t0, 0, "step 5/1000")
    w.now[0] = at(133).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    # Kicked twice: the ring steps after its reset (the host list's hold ends), and the marks go.
    assert kicks == [KEY] * 4 and not waiting_in(w, pods)
    calls = len(log.calls)
    w.read(KEY)
    assert len(log.calls) == calls  # recovered: not read again until the next restart


def test_a_log_with_no_line_of_a_trainings_is_left_alone_after_the_bound(
    pods: list[PodView], log: Log
) -> None:
    log.text = f"{stamp(99)} some other program\n"
    w, kicks = made(job(restarted=True), pods, 131)
    w.read(KEY)
    w.read(KEY)
    # No signal: nothing to judge, nothing read again; one kick, for the host list's hold,
    # which held the list until this first read after the fault.
    assert len(log.calls) == 1 and kicks == [KEY]


def test_the_master_is_the_running_current_pod_of_index_0(pods: list[PodView]) -> None:
    master = watch.master_pod(job(restarted=True), pods)
    assert master is not None and master.replica == "launcher" and master.index == 0
    assert watch.master_pod({"spec": {"replicaSpecs": {"trainer": {"replicaType": "worker"}}}}, pods) is None


def test_the_master_read_carries_what_was_read_for_the_host_lists_hold(pods: list[PodView], log: Log) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    log.text = ring_steps(t0, t1, t2)
    w, kicks = made(job(restarted=True), pods, 102)
    w.read(KEY)  # read since the fault, a signal, not re-formed: the hold goes on (kicked once)
    carried = [p for p in w.views(KEY, pods) if p.training is not None]
    assert [p.replica for p in carried] == ["launcher"] and carried[0].training is w.jobs[KEY].seen
    assert [id(p) for p in w.views(KEY, pods)] == [id(p) for p in w.views(KEY, pods)]
    w.read(KEY)
    assert kicks == [KEY]  # nothing the hold reads changed
    log.text += line(104, t0, 0, "step 5/1000")
    w.now[0] = at(105).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert kicks == [KEY, KEY]  # the ring stepped after the fault: the list may change now


def test_a_launcher_that_prints_no_step_line_is_not_read_after_ten_minutes(pods: list[PodView]) -> None:
    master = watch.master_pod(job(restarted=False), pods)
    assert master is not None and master.running_since is not None
    began = master.running_since.timestamp()
    assert watch.idle_read(None, master, began + watch.NO_SIGNAL_GIVE_UP_SECONDS - 1)
    assert not watch.idle_read(None, master, began + watch.NO_SIGNAL_GIVE_UP_SECONDS)
    stepping = TrainingSeen(began, last_step=began, width=3)
    assert watch.idle_read(stepping, master, began + 10 * watch.NO_SIGNAL_GIVE_UP_SECONDS)


def noise(second: float, n: int) -> str:
    """noise: ``n`` of the lines Horovod's debug output makes at a re-forming."""
    return "".join(f"{stamp(second)} INFO:root:scope global has keys ['rank_{k}']\n" for k in range(n))


def test_a_record_followed_by_hundreds_of_lines_before_the_next_read_is_still_read(
    pods: list[PodView], log: Log
) -> None:
    """Seen on real nodes: the driver's FAILURE record, then a re-forming's debug output, pushed
    the record out of the last 200 lines before the next read; reads go on from the last one."""
    t0, t1, t2 = trainer_hosts(pods)
    log.text = ring_steps(t0, t1, t2)
    body = job(restarted=False)
    body["status"]["discoveryHosts"] = [t0, t1, t2]
    w, kicks = made(body, pods, 100)
    w.read(KEY)
    log.text += f"{stamp(101)} INFO:root:record state: {t1}.job[0] = FAILURE\n" + noise(101.5, 400)
    w.now[0] = at(106).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert dict(log.calls[1])["sinceTime"] == stamp(95.4)[:19] + "Z"  # the last line's second
    assert waiting_in(w, pods) == [t1] and kicks == [KEY]


def test_a_read_cut_at_the_byte_limit_is_behind_judges_no_silence_and_goes_on_at_once(
    pods: list[PodView], log: Log
) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    log.text = ring_steps(t0, t1, t2)
    w, _ = made(job(restarted=True), pods, 98)
    w.read(KEY)
    wide = "".join(f"{stamp(101 + k / 100)} {'x' * 400}\n" for k in range(300))  # 120 KiB of output
    log.text += wide + line(104, t0, 0, "reset: world size now 2, resuming at step 4")
    w.now[0] = at(140).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)  # cut at the byte limit: behind, so no silence is judged, though 40 s have passed
    assert w.jobs[KEY].behind and waiting_in(w, pods) == []
    assert w.due(KEY) is not None  # read again at once, whatever the pace
    for _ in range(3):
        w.read(KEY)
    assert not w.jobs[KEY].behind and sorted(waiting_in(w, pods)) == [t1, t2]


def test_a_listed_worker_that_never_joins_an_elastic_horovod_ring_is_marked(
    pods: list[PodView], log: Log
) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    log.text = "".join(
        line(100 + k, h, r, f"step {k}/1000").replace("/3:", "/2:")
        for k in range(30)
        for r, h in enumerate((t0, t1))
    )
    body = job(restarted=False)
    body["status"]["discoveryHosts"] = [t0, t1, t2]
    launches(body, "horovodrun -np 3 --max-np=5 --host-discovery-script /etc/edl/d.sh python x")
    w, kicks = made(body, pods, 110)
    w.read(KEY)  # t2 listed from this read on
    assert waiting_in(w, pods) == []
    w.now[0] = at(126).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert waiting_in(w, pods) == [t2] and kicks == [KEY]
    body["spec"]["replicaSpecs"]["launcher"]["template"] = {
        "spec": {"containers": [{"name": "a", "command": ["mpiexec"]}]}
    }
    w.now[0] = at(132).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert waiting_in(w, pods) == []  # not horovodrun: nothing is marked so


def test_the_job_is_kicked_when_its_training_runs_short_or_back(pods: list[PodView], log: Log) -> None:
    """The degraded state's OutOfRing (aitj.core.planner.width) comes from the pass: the pass
    runs when the width the log shows changes, and at the first read of a training short."""
    t0, t1, t2 = trainer_hosts(pods)
    body = job(restarted=False)
    body["spec"]["replicaSpecs"]["trainer"]["replicas"] = 3
    log.text = ring_steps(t0, t1, t2)
    w, kicks = made(body, pods, 100)
    w.read(KEY)
    assert kicks == []  # first read, at full width
    log.text += line(101, t0, 0, "step 9/1000").replace("/3:", "/2:")
    w.now[0] = at(106).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert kicks == [KEY]  # 3 -> 2
    w.now[0] = at(112).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert kicks == [KEY]  # still 2: nothing new
    short, kicked = made(body, pods, 112)
    short.read(KEY)
    assert kicked == [KEY]  # a first read that finds it short


def test_the_master_is_marked_when_nothing_steps_three_bounds_after_the_restart(
    pods: list[PodView], log: Log
) -> None:
    t0, t1, t2 = trainer_hosts(pods)
    log.text = ring_steps(t0, t1, t2)  # the ring stepped until 95.4 s; nothing since the restart
    w, _ = made(job(restarted=True), pods, 189)
    w.read(KEY)
    assert [p.name for p in w.views(KEY, pods) if p.waiting is not None] == []  # 89 s: not yet
    w.now[0] = at(190).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    marked = [p for p in w.views(KEY, pods) if p.waiting is not None]
    assert [(p.replica, p.waiting.hang) for p in marked if p.waiting is not None] == [("launcher", True)]


def test_a_horovod_driver_held_with_its_slots_listed_marks_the_master(pods: list[PodView], log: Log) -> None:
    """Two trainers force-deleted at once, the ring's rank 0 among them, killed before the
    driver read the list without them: it waits for a slot with the survivor listed, and never
    counts it (held in a call to the dead rank 0). The master is marked, alone: the watchdog's
    restart of the job."""
    t0, t1, t2 = trainer_hosts(pods)
    log.text = ring_steps(t1, t0, t2) + f"{stamp(101)} INFO:root:wait for available slots: 1\n"
    body = job(restarted=True)
    body["status"]["discoveryHosts"] = [t0]
    launches(body, "horovodrun -np 3 --host-discovery-script /etc/edl/d.sh python x")
    w, kicks = made(body, pods, 102)
    w.read(KEY)  # t0 listed from this read on
    assert waiting_in(w, pods) == []
    w.now[0] = at(107).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    marked = [p for p in w.views(KEY, pods) if p.waiting is not None]
    assert [(p.replica, p.waiting.hang, p.waiting.alone) for p in marked if p.waiting] == [
        ("launcher", True, True)
    ]
    assert kicks[-1] == KEY
    log.text += f"{stamp(107.5)} DEBUG:root:current available slots: 1\n"
    w.now[0] = at(109).timestamp()  # type: ignore[attr-defined]
    w.read(KEY)
    assert waiting_in(w, pods) == []  # it counted them: it went on
