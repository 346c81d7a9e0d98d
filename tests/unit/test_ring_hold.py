"""Horovod's host list held while its ring re-forms after a worker died
(aitj.core.planner.ring_hold, docs/semantics.md section 27): horovodrun's driver tells rank 0 of
every change to the list with a connect that has no timeout, and a dead rank 0's address is gone
with its pod, so no change is made until the training's log shows the ring re-formed around a
live rank 0. The decision as a table, then whole passes: the list kept while held, rewritten
once the re-forming is read, and a delete (which lets Horovod release its worker in order)
never held, but a force delete of rank 0's pod (killed 2 s later, before the driver may tell it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from aitj.core.api import Job, RestartEntry
from aitj.core.explain import explain
from aitj.core.observed import PodView
from aitj.core.planner import ring_hold
from aitj.core.policy import classify, vanished
from aitj.core.trainlog import HostSeen, TrainingSeen
from aitj.core.wire import format_time
from tests.unit.builders import Cluster, Pod, at, exit_rule, launcher, name_of, seed_job, trainer, views

FAULT = 100.0  # seconds after T0: the fault behind the latest restart
T = at(FAULT).timestamp()
SEED_COMMAND = (
    "export HOROVOD_GLOO_TIMEOUT_SECONDS=300 && horovodrun -np 3 --min-np=1 --max-np=5 --verbose "
    "--host-discovery-script /etc/edl/discover_hosts.sh python train.py"
)


def horovod_job(command: str = SEED_COMMAND, discovery: bool = True) -> Job:
    template = {"spec": {"containers": [{"name": "aitj-0", "command": ["/bin/bash", "-c", command]}]}}
    rules = (exit_rule("137"),)
    return seed_job(
        trainer(rules=(*trainer().rules, *rules)), launcher(template=template), discovery=discovery
    )


def exited(
    at_seconds: float = FAULT,
    code: int | None = 137,
    cause: str = "exitCode 137",
    pod: str | None = None,
    message: str | None = None,
) -> RestartEntry:
    return RestartEntry(
        time=format_time(at(at_seconds + 2)),
        pod=pod,
        cause=cause,
        exit_code=code,
        message=message,
        failure_time=format_time(at(at_seconds)),
    )


def force_deleted(pod: str, grace: int = 0) -> RestartEntry:
    """force_deleted: the restart of ``pod`` deleted by someone else, as the operator records it
    (a graceful delete has the same cause: only its words tell)."""
    view = PodView(name=pod, phase="Running", deleted_at=at(FAULT), deletion_grace_seconds=grace)
    failure = classify(view, None)
    assert failure is not None
    return exited(code=None, cause=failure.kind.value, pod=pod, message=failure.description)


def rank_0_moved(read: float, old_until: float, new_from: float | None, reset: float | None) -> TrainingSeen:
    """rank_0_moved: w0 stepped as rank 0 until ``old_until``; w1 reset at ``reset`` and
    stepped as rank 0 from ``new_from`` (None: not yet)."""
    hosts = {
        "w0": HostSeen(step=at(old_until).timestamp(), rank=0, reset=at(10).timestamp()),
        "w1": HostSeen(
            step=at(new_from if new_from is not None else old_until).timestamp(),
            rank=0 if new_from is not None else 1,
            reset=at(reset if reset is not None else 10).timestamp(),
        ),
    }
    last = at(max(old_until, new_from or 0)).timestamp()
    return TrainingSeen(at(read).timestamp(), last, 3, hosts, (0.2,) * 10)


def seen(read: float, last_step: float | None, reset: float | None = None) -> TrainingSeen:
    """seen: a log read at ``read`` seconds whose newest step line is at ``last_step`` (rank 0
    stepping every 0.2 s before it), and a host's reset line at ``reset``."""
    hosts = {"w0": HostSeen(step=None if last_step is None else at(last_step).timestamp(), rank=0)}
    if reset is not None:
        hosts["w1"] = HostSeen(reset=at(reset).timestamp())
    step = None if last_step is None else at(last_step).timestamp()
    return TrainingSeen(at(read).timestamp(), step, 3, hosts, (0.2,) * 10)


def until(offset: float) -> float:
    return T + offset


CASES: list[tuple[str, Job, Sequence[RestartEntry], TrainingSeen | None, float, float | None]] = [
    ("no restart", horovod_job(), (), None, 101, None),
    (
        "an exit, nothing read yet: held until the first read",
        horovod_job(),
        (exited(),),
        None,
        101,
        until(10),
    ),
    ("an exit, read before it only", horovod_job(), (exited(),), seen(99, 99), 101, until(10)),
    ("unread for PROBE_SECONDS: not held", horovod_job(), (exited(),), None, 111, None),
    ("read since, no step line: no signal", horovod_job(), (exited(),), seen(103, None), 104, None),
    ("read since, no step since: held", horovod_job(), (exited(),), seen(103, 99.8), 104, until(60)),
    (
        "a step just after the fault is the old ring's",
        horovod_job(),
        (exited(),),
        seen(103, 101),
        104,
        until(60),
    ),
    ("a step after the fault: re-formed", horovod_job(), (exited(),), seen(105, 104), 105, None),
    (
        "a reset line alone: re-forming, still held",
        horovod_job(),
        (exited(),),
        seen(103, 99, 102),
        104,
        until(60),
    ),
    ("a step after the latest reset: re-formed", horovod_job(), (exited(),), seen(106, 105, 104), 106, None),
    ("a step before the latest reset: held", horovod_job(), (exited(),), seen(106, 104, 105), 106, until(60)),
    ("held no longer than the bound and grace", horovod_job(), (exited(),), seen(159, 99), 160, None),
    (
        "a stall restart (the watchdog's) holds",
        horovod_job(),
        (exited(code=None, cause="stall"),),
        None,
        101,
        until(10),
    ),
    ("a force delete, nothing read: no rank 0 known", horovod_job(), (force_deleted("w0"),), None, 101, None),
    (
        "a force delete of a pod not rank 0's does not",
        horovod_job(),
        (force_deleted("w1"),),
        rank_0_moved(99, 99, None, None),
        101,
        None,
    ),
    (
        "a force delete of rank 0's pod holds until the log is read since",
        horovod_job(),
        (force_deleted("w0"),),
        rank_0_moved(99, 99, None, None),
        101,
        until(10),
    ),
    (
        # Not the rank-0 hold: the pods of one fault leave together, after the settle (below).
        "two force-deleted in the same second, rank 0's recorded second: not held",
        horovod_job(),
        (force_deleted("w1"), force_deleted("w0")),
        rank_0_moved(99, 99, None, None),
        101,
        None,
    ),
    (
        "two force-deleted in the same second, rank 0's recorded first: not held either",
        horovod_job(),
        (force_deleted("w0"), force_deleted("w1")),
        rank_0_moved(99, 99, None, None),
        101,
        None,
    ),
    (
        "a graceful delete of rank 0's pod does not: Horovod lets its worker go in order",
        horovod_job(),
        (force_deleted("w0", grace=300),),
        rank_0_moved(99, 99, None, None),
        101,
        None,
    ),
    (
        "its old ring steps on until the kill, no reset since: held",
        horovod_job(),
        (force_deleted("w0"),),
        rank_0_moved(103, 102.5, None, None),
        103,
        until(60),
    ),
    (
        "re-formed without it, the new rank 0 steps: no longer held",
        horovod_job(),
        (force_deleted("w0"),),
        rank_0_moved(106, 102, 105, 104),
        106,
        None,
    ),
    ("a node loss does not", horovod_job(), (exited(code=None, cause="nodeNotReady"),), None, 101, None),
    (
        "no horovodrun: MPI's loop wants the list now",
        horovod_job("mpiexec -n 3 train.py"),
        (exited(),),
        None,
        101,
        None,
    ),
    (
        "horovodrun without discovery script",
        horovod_job("horovodrun -np 3 -H a:1 x"),
        (exited(),),
        None,
        101,
        None,
    ),
    ("no plugin.discovery", horovod_job(discovery=False), (exited(),), None, 101, None),
]


@pytest.mark.parametrize(
    ("recorded", "now", "expected"),
    [
        ((force_deleted("w1"),), 101, 101 + ring_hold.SETTLE_SECONDS),
        ((force_deleted("w1", grace=300),), 101, None),  # a graceful delete leaves at once
        ((exited(code=None, cause="nodeNotReady"),), 101, None),
        ((), 101, None),  # recorded by an earlier pass: that pass held it
    ],
    ids=["force delete", "graceful delete", "node lost", "an earlier pass's"],
)
def test_a_pass_that_records_a_force_delete_keeps_the_list_a_moment(
    recorded: Sequence[RestartEntry], now: float, expected: float | None
) -> None:
    restarts = (force_deleted("w1"), *recorded)
    training = rank_0_moved(99, 99, None, None)
    got = ring_hold.held_until(horovod_job(), restarts, training, at(now).timestamp(), recorded)
    assert got == (pytest.approx(at(expected).timestamp()) if expected is not None else None)
    mpi = horovod_job("mpiexec -n 3 train.py")
    assert ring_hold.held_until(mpi, restarts, training, at(now).timestamp(), recorded) is None


@pytest.mark.parametrize(
    ("job", "restarts", "training", "now", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_when_the_list_is_held(
    job: Job,
    restarts: Sequence[RestartEntry],
    training: TrainingSeen | None,
    now: float,
    expected: float | None,
) -> None:
    got = ring_hold.held_until(job, restarts, training, at(now).timestamp())
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_an_exits_hold_ends_at_a_step_after_a_reset_since_the_fault() -> None:
    """A training that prints reset lines re-forms after a fault: its steps with none since are
    the old ring's (a force-deleted rank 0 steps until its kill)."""
    stepping = dataclasses.replace(seen(104, 103), hosts={"w0": HostSeen(step=T + 3, rank=0, reset=T - 50)})
    assert not ring_hold.reformed(stepping, T)
    assert ring_hold.reformed(seen(104, 103, reset=102.5), T)
    assert ring_hold.reformed(seen(104, 103), T)  # no reset line ever: the steps alone


@pytest.mark.parametrize(
    ("failure_words", "want"),
    [
        (force_deleted("w0").message, True),
        (force_deleted("w0", grace=300).message, False),
        (vanished("w0").description, True),
        ("container aitj-0 exited with code 137", False),
    ],
)
def test_a_kill_at_once_is_told_from_the_recorded_words(failure_words: str | None, want: bool) -> None:
    assert ring_hold.killed_at_once("PodForceDeleted", failure_words) is want
    assert not ring_hold.killed_at_once("exitCode 137", failure_words)


def test_the_latest_restart_decides() -> None:
    earlier = exited(50)
    later_delete = exited(90, code=None, cause="PodForceDeleted")
    assert ring_hold.fault_at([earlier, later_delete]) is None
    assert ring_hold.fault_at([later_delete, exited()]) == pytest.approx(T)


OLD = [name_of("trainer", i) for i in range(3)]
NEW = [name_of("trainer", i, 1) for i in range(3)]


def running() -> Cluster:
    pods = [Pod("trainer", i).running() for i in range(3)] + [Pod("launcher", 0).running(2)]
    cluster = Cluster(horovod_job(), pods)
    cluster.step(10)
    assert list(cluster.status["discoveryHosts"]) == OLD
    return cluster


def test_a_killed_worker_stays_listed_and_its_replacement_waits_until_the_ring_re_forms() -> None:
    cluster = running()
    cluster.training = seen(99.9, 99.9)  # read before the fault: rank 0 stepping
    cluster.pods[OLD[0]].exited(137, finished=FAULT)
    first = cluster.step(101)
    assert [c.name for c in first.creates] == [NEW[0]]  # replaced at once, as ever
    assert first.discovery is None and list(cluster.status["discoveryHosts"]) == OLD
    assert first.list_held == pytest.approx(9) and first.requeue_after == pytest.approx(9)
    said = explain(cluster.job, views(cluster.pods.values()), cluster.nodes, at(101)).next_pass
    assert "keep Horovod's host list as it is (9.0 s at most: until its ring re-forms" in " ".join(said)
    cluster.pods[NEW[0]].running(103)
    cluster.training = seen(103, 99.9)  # read since: no step yet, Horovod's driver still waits
    waiting = cluster.step(103)
    assert waiting.discovery is None and list(cluster.status["discoveryHosts"]) == OLD
    cluster.training = seen(106, 105.5)  # the survivors step at width 2: rank 0 lives
    joined = cluster.step(106)
    assert joined.discovery is not None and joined.list_held is None
    assert list(cluster.status["discoveryHosts"]) == [NEW[0], OLD[1], OLD[2]]


def test_with_no_read_the_hold_ends_after_the_probe() -> None:
    cluster = running()
    cluster.pods[OLD[2]].exited(137, finished=FAULT)
    cluster.step(101)
    cluster.pods[NEW[2]].running(103)
    assert cluster.step(103).discovery is None
    late = cluster.step(FAULT + ring_hold.PROBE_SECONDS)
    assert late.discovery is not None and list(cluster.status["discoveryHosts"]) == [OLD[0], OLD[1], NEW[2]]


def test_a_gracefully_deleted_worker_leaves_the_list_at_once() -> None:
    cluster = running()
    cluster.training = seen(99.9, 99.9)
    cluster.pods[OLD[1]].deleted(FAULT, 30)
    result = cluster.step(101)
    assert result.list_held is None and OLD[1] not in cluster.status["discoveryHosts"]


def test_a_force_deleted_worker_leaves_the_list_one_settle_after_the_pass_that_read_it() -> None:
    cluster = running()
    cluster.training = seen(99.9, 99.9)
    cluster.pods[OLD[1]].deleted(FAULT, 0)
    first = cluster.step(101)
    assert first.discovery is None and first.list_held == pytest.approx(ring_hold.SETTLE_SECONDS)
    assert first.requeue_after == pytest.approx(ring_hold.SETTLE_SECONDS)
    after = cluster.step(101 + ring_hold.SETTLE_SECONDS)
    assert after.list_held is None and OLD[1] not in cluster.status["discoveryHosts"]


@pytest.mark.parametrize("rank_0_first", [False, True])
def test_the_pods_of_one_force_delete_leave_the_list_in_one_change(rank_0_first: bool) -> None:
    """The deletes of one ``kubectl delete --force`` of two pods, rank 0's among them, reach the
    operator 0.1 s apart: taken out one pass apart, Horovod re-formed with the dying rank 0 after
    the first change and was told of the second once its address was gone (146 s); the pass that
    reads a force delete keeps the list SETTLE_SECONDS, and the one after takes both out."""
    cluster = running()
    rank_0 = HostSeen(step=at(99.9).timestamp(), rank=0)
    cluster.training = dataclasses.replace(seen(99.9, 99.9), hosts={f"{OLD[0]}.j": rank_0})
    first, second = (OLD[0], OLD[1]) if rank_0_first else (OLD[1], OLD[0])
    cluster.pods[first].deleted(FAULT, 0)
    one = cluster.step(100.5)
    assert one.discovery is None and list(cluster.status["discoveryHosts"]) == OLD
    cluster.pods[second].deleted(FAULT + 0.1, 0)
    two = cluster.step(100.6)
    assert two.discovery is None and list(cluster.status["discoveryHosts"]) == OLD
    assert two.list_held == pytest.approx(ring_hold.SETTLE_SECONDS)  # not the rank-0 hold: two pods
    both = cluster.step(100.6 + ring_hold.SETTLE_SECONDS)
    assert both.discovery is not None and list(cluster.status["discoveryHosts"]) == [OLD[2]]


def test_a_job_whose_launcher_is_not_horovodrun_is_never_held() -> None:
    mpi = dataclasses.replace(horovod_job("mpiexec -n 3 python train.py"))
    pods = [Pod("trainer", i).running() for i in range(3)] + [Pod("launcher", 0).running(2)]
    cluster = Cluster(mpi, pods)
    cluster.step(10)
    cluster.pods[OLD[0]].exited(137, finished=FAULT)
    result = cluster.step(101)
    assert result.list_held is None and OLD[0] not in cluster.status["discoveryHosts"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (SEED_COMMAND, 5),
        ("horovodrun --max-np 8 --host-discovery-script d.sh python x", 8),
        ("horovodrun --max-num-proc=4 --host-discovery-script d.sh python x", 4),
        ("horovodrun -np 3 --host-discovery-script d.sh python x", None),
    ],
)
def test_horovodruns_max_np_is_read_from_the_launchers_command(command: str, expected: int | None) -> None:
    template = horovod_job(command).spec.replica("launcher").template
    found = ring_hold.horovodrun_command([template])
    assert found is not None and ring_hold.max_np(found) == expected
    assert (
        ring_hold.horovodrun_command([horovod_job("mpiexec -n 3 x").spec.replica("launcher").template])
        is None
    )
