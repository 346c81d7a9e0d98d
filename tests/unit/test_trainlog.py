"""What the operator keeps of a training's own log (aitj.core.trainlog.fold): each host's newest
step and reset, the newest step's world size, and rank 0's cadence, from read after read of the
log's tail (the same lines come again), bounded."""

from __future__ import annotations

from aitj.core import trainlog
from aitj.core.trainlog import Event, HostSeen, Reset, Step, TrainingSeen, fold


def steps(host: str, rank: int, size: int, times: list[float]) -> list[Step]:
    return [Step(t, host, rank, size, k) for k, t in enumerate(times)]


def test_each_host_keeps_its_newest_step_and_reset_and_the_newest_step_its_width() -> None:
    events: list[Event] = sorted(
        [
            *steps("a", 0, 3, [1, 2, 3]),
            *steps("b", 1, 3, [1, 2]),
            Reset(4, "a", 0, 2, 3),
            Step(5, "a", 0, 2, 3),
        ],
        key=lambda e: e.t,
    )
    seen = fold(None, events, read_at=6)
    assert seen.hosts == {"a": HostSeen(step=5, reset=4, rank=0), "b": HostSeen(step=2, reset=None, rank=1)}
    assert (seen.last_step, seen.width, seen.read_at) == (5, 2, 6)


def test_lines_read_again_change_nothing_and_new_ones_move_it_on() -> None:
    first = steps("a", 0, 3, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    seen = fold(None, first, read_at=6.5)
    again = fold(seen, first, read_at=7.0)
    assert (again.hosts, again.intervals, again.last_step) == (seen.hosts, seen.intervals, seen.last_step)
    later = fold(again, [*first[-2:], Step(7.5, "a", 0, 3, 6)], read_at=8.0)
    assert later.last_step == 7.5 and later.intervals == (*seen.intervals, 1.5)


def test_the_cadence_is_rank_0s_p99_gap_and_a_re_forming_is_not_part_of_it() -> None:
    events: list[Event] = [
        *steps("a", 0, 3, [0, 1, 2, 3, 4]),
        Reset(60, "a", 0, 3, 4),
        *steps("a", 0, 3, [61, 62]),
    ]
    events += steps("b", 1, 3, [0.5, 1.5])  # another rank's steps are not rank 0's cadence
    seen = fold(None, sorted(events, key=lambda e: e.t), read_at=63)
    assert seen.intervals == (1, 1, 1, 1, 1) and seen.cadence == 1  # not the 57 s across the reset
    assert fold(None, steps("a", 0, 3, [0, 1, 2]), read_at=3).cadence is None  # too few gaps yet


def test_what_is_kept_is_bounded() -> None:
    many = [Step(float(k), f"host-{k}", 1, 3, k) for k in range(trainlog.MAX_HOSTS + 10)]
    seen = fold(None, many, read_at=1e6)
    assert len(seen.hosts) == trainlog.MAX_HOSTS and "host-0" not in seen.hosts  # the oldest dropped
    long = steps("a", 0, 3, [float(k) for k in range(trainlog.MAX_INTERVALS + 50)])
    assert len(fold(None, long, read_at=1e6).intervals) == trainlog.MAX_INTERVALS


def test_nothing_read_is_nothing_known() -> None:
    assert fold(None, [], read_at=1) == TrainingSeen(1)


def test_the_drivers_records_of_a_worker_ready_or_failed_are_read_by_its_host() -> None:
    """horovodrun's driver logs each worker that leaves a broken ring for the next (its
    barrier), and each whose process failed, naming the host; a worker's own lines carry a tag
    that a later worker may share."""
    lines = [
        "2026-11-28T10:11:20.017855970Z [2]<stdout>:[10:11:20] trainer-pz9h7-0 rank 2/3: step 410/1000000",
        "2026-11-28T10:11:20.018751615Z [2]<stdout>:[10:11:20] trainer-x82s7-2 rank 1/3: step 410/1000000",
        "2026-11-28T10:11:20.019079279Z [0]<stdout>:[10:11:20] trainer-884p4-1 rank 0/3: step 410/1000000",
        "2026-11-28T10:11:21.205251564Z INFO:root:record state: trainer-x82s7-2.watchdog[0] = FAILURE",
        "2026-11-28T10:11:21.217193858Z INFO:root:record state: trainer-884p4-1.watchdog[0] = READY",
        "2026-11-28T10:11:22.079054766Z INFO:root:start worker process: trainer-q2x8r-2.watchdog[0]",
    ]
    events = trainlog.parse_tagged(lines)
    assert [type(e).__name__ for e in events] == ["Step", "Step", "Step", "Left", "Joined", "Started"]
    seen = fold(None, events, read_at=1e10)
    assert seen.hosts["trainer-884p4-1"].joined is not None and seen.hosts["trainer-884p4-1"].left is None
    assert seen.hosts["trainer-x82s7-2"].left is not None and seen.hosts["trainer-x82s7-2"].joined is None
    assert seen.hosts["trainer-pz9h7-0"].joined is None  # blocked in the old ring: never reported
    assert seen.hosts["trainer-q2x8r-2"].started is not None  # the driver takes its host in
    assert trainlog.parse(lines) == [e for e in events if isinstance(e, Step)]  # the bench's reading


def test_the_drivers_wait_for_slots_stands_until_it_counts_them_or_resets() -> None:
    """horovodrun's driver logs its wait for slots at every reset, then, holding its hosts' lock,
    counts them (at DEBUG) and resets the workers (at INFO). A wait with neither after it is
    one its discovery thread holds it in."""
    wait = "2026-11-28T23:08:10.969698986Z INFO:root:wait for available slots: 1"
    count = "2026-11-28T23:08:10.970101914Z DEBUG:root:current available slots: 3"
    reset = "2026-11-28T23:08:10.970481198Z INFO:root:reset workers: 3"
    events = trainlog.parse_tagged([wait, count, reset])
    assert [type(e).__name__ for e in events] == ["Awaiting", "Counted", "Counted"]
    assert isinstance(events[0], trainlog.Awaiting) and events[0].slots == 1
    held = fold(None, events[:1], read_at=1e10)
    assert held.still_awaiting == events[0]
    assert fold(held, events[:1], read_at=1e10).still_awaiting == events[0]  # read again: the same
    assert fold(held, events[1:2], read_at=1e10).still_awaiting is None  # counted (DEBUG)
    assert fold(None, [events[0], events[2]], read_at=1e10).still_awaiting is None  # reset (INFO)
    later = trainlog.parse_tagged([wait.replace("10.969", "15.000")])
    assert fold(fold(None, events, read_at=1e10), later, read_at=1e10).still_awaiting == later[0]
    assert trainlog.tagged("not-a-time INFO:root:wait for available slots: 1") is None
    assert trainlog.parse(["wait for available slots: 1", wait]) == []  # not the bench's reading
