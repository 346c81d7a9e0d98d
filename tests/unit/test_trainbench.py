"""The recovery a user feels, read from a launcher's log (aitj.tools.trainbench): table tests
over log lines as horovodrun and the kubelet write them."""

from __future__ import annotations

import pytest

from aitj.core import trainlog
from aitj.tools.trainbench.recovery import Fault, healed, pace, recovery
from aitj.tools.trainbench.report import rows, table
from aitj.tools.trainbench.timeline import Reset, Step, parse, parse_line, ring, runtime_time

T0 = runtime_time("2026-11-25T11:52:00.000000000Z")


def stamp(seconds: float) -> str:
    whole, frac = divmod(round(seconds * 1000), 1000)
    return f"2026-11-25T11:52:{whole:02d}.{frac:03d}123456Z"


def step(at: float, rank: int, size: int, n: int, host: str = "h-0") -> str:
    return f"{stamp(at)} [{rank}]<stdout>:[11:52:00] {host} rank {rank}/{size}: step {n}/1000 loss 0.1"


def reset(at: float, rank: int, size: int, resume: int, host: str = "h-0") -> str:
    return (
        f"{stamp(at)} [{rank}]<stdout>:[11:52:00] {host} rank {rank}/{size}: "
        f"reset: world size now {size}, resuming at step {resume}"
    )


def test_runtime_stamps_keep_microseconds() -> None:
    assert runtime_time("2026-11-25T11:52:28.243919999Z") - runtime_time(
        "2026-11-25T11:52:28Z"
    ) == pytest.approx(0.243919, abs=1e-6)


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (step(1, 0, 3, 40), Step(T0 + 1, "h-0", 0, 3, 40)),
        (reset(2.5, 1, 2, 50), Reset(T0 + 2.5, "h-0", 1, 2, 50)),
        # horovodrun's own lines, Gloo's debug lines and a bare rank line are not progress.
        (f"{stamp(1)} INFO:root:record state: h-1.job[0] = FAILURE", None),
        (f"{stamp(1)} [0]<stdout>:[11:52:00] h-0 rank 0/3: start: 1000 steps, batch 32 per worker", None),
        ("no stamp [0]<stdout>:[11:52:00] h-0 rank 0/3: step 4/10 loss 1", None),
        # train.py's lines (MPI and torchrun), unprefixed, with its rate and checksum after the loss.
        (
            f"{stamp(1)} [11:52:00] t-1 rank 2/5: step 40/3000 loss 0.1 samples/s 3000 checksum -1.25",
            Step(T0 + 1, "t-1", 2, 5, 40),
        ),
        (
            f"{stamp(2.5)} [11:52:00] t-1 rank 0/2: reset: world size now 2, resuming at step 20",
            Reset(T0 + 2.5, "t-1", 0, 2, 20),
        ),
        # torchrun_launcher.py's own lines are not progress.
        (f"{stamp(1)} [11:52:00] launcher: t-1.job: session started", None),
    ],
)
def test_a_line_is_a_step_a_reset_or_nothing(line: str, want: object) -> None:
    got = parse_line(line)
    if isinstance(want, Step | Reset):
        assert got is not None and got.t == pytest.approx(want.t, abs=1e-3)
        assert got.__class__ is want.__class__ and got.__dict__ | {"t": 0} == want.__dict__ | {"t": 0}
    else:
        assert got is None


# A force delete at 10 s: the ring re-forms at 2 (12 s, resuming at the commit of step 50 after
# step 57 was done), steps at width 2, then the replacement joins (15 s), steps at width 3.
FORCE = [
    step(9, 0, 3, 50),
    step(10.5, 0, 3, 57),
    reset(12, 0, 2, 50),
    reset(12.01, 1, 2, 50, host="h-2"),
    step(13, 0, 2, 60),
    reset(15, 0, 3, 60),
    step(16, 2, 3, 70, host="h-new"),
    step(16.1, 0, 3, 70),
]


@pytest.mark.parametrize(
    ("lines", "width", "until", "again", "full", "redone", "resets"),
    [
        (FORCE, 3, 17, 3.0, 6.0, 7, 2),
        # Wanted at width 2 (a scale-in): full width is the first step after the reset to 2.
        (FORCE[:5], 2, 14, 3.0, 3.0, 7, 1),
        # A ring stuck on a dead peer: a step just after the fault, then nothing.
        (FORCE[:2], 3, 17, None, None, 0, 0),
        # Re-formed at width 2, then stuck: running again for a while, never at full width.
        (FORCE[:5], 2, 60, 3.0, None, 7, 1),
        # Re-formed, but never at the width wanted.
        (FORCE[:5], 3, 14, 3.0, None, 7, 1),
        # No reset at all (a fault training does not feel): the next step at width counts.
        ([step(9, 0, 3, 50), step(11, 0, 3, 60)], 3, 12, 1.0, 1.0, 0, 0),
        # ... unless training stopped after it.
        ([step(9, 0, 3, 50), step(11, 0, 3, 60)], 3, 30, None, None, 0, 0),
        # After a whole-job restart (a new run from step 0, before this fault), a re-forming
        # redoes what was done since the restart, not the old run's steps.
        (
            [
                step(1, 0, 3, 1000),
                reset(2, 0, 3, 0),
                step(5, 0, 3, 57),
                reset(12, 0, 3, 50),
                step(13, 0, 3, 60),
            ],
            3,
            17,
            3.0,
            3.0,
            7,
            1,
        ),
    ],
)
def test_recovery_reads_running_again_full_width_and_steps_redone(
    lines: list[str],
    width: int,
    until: float,
    again: float | None,
    full: float | None,
    redone: int,
    resets: int,
) -> None:
    got = recovery(parse(lines), Fault("force delete", T0 + 10, width, until=T0 + until))
    assert got.running_again == (None if again is None else pytest.approx(again, abs=1e-3))
    assert got.full_width == (None if full is None else pytest.approx(full, abs=1e-3))
    assert (got.steps_redone, got.resets) == (redone, resets)


def test_events_after_the_window_belong_to_the_next_fault() -> None:
    got = recovery(parse(FORCE), Fault("force delete", T0 + 10, 3, until=T0 + 14))
    assert got.running_again == pytest.approx(3.0, abs=1e-3)
    assert (got.full_width, got.resets) == (None, 1)


@pytest.mark.parametrize(
    ("lines", "until", "want"),
    [
        # rank 0 at 9 (the last before the fault), 10.5, 13, 16.1, read until 17: the longest
        # gap is 13 -> 16.1, while the replacement joined.
        (FORCE, 17, 3.1),
        # stuck after 10.5 and read until 60: the pause runs to the end of the window.
        (FORCE[:2], 60, 49.5),
        # one step line in all: nothing to measure.
        (FORCE[:1], 9.5, None),
    ],
)
def test_the_longest_pause_runs_from_the_last_step_before_the_fault(
    lines: list[str], until: float, want: float | None
) -> None:
    got = recovery(parse(lines), Fault("force delete", T0 + 10, 3, until=T0 + until)).longest_pause
    assert got == (None if want is None else pytest.approx(want, abs=1e-3))


def test_pace_counts_rank_0_progress_at_the_width_each_step_ran() -> None:
    got = pace(parse(FORCE), T0, T0 + 20, batch=32)
    assert got is not None
    # rank 0: 50 -> 57 -> 60 -> 70 over 7.1 s: 20 steps; samples 7*32*3 + 3*32*2 + 10*32*3.
    assert got.steps_per_second == pytest.approx(20 / 7.1, rel=1e-3)
    assert got.samples_per_second == pytest.approx((672 + 192 + 960) / 7.1, rel=1e-3)
    assert pace(parse(FORCE[:1]), T0, T0 + 20, batch=32) is None


def test_the_table_counts_unrecovered_faults_apart_from_the_percentiles() -> None:
    ok = recovery(parse(FORCE), Fault("force delete", T0 + 10, 3, until=T0 + 17))
    stuck = recovery(parse(FORCE[:2]), Fault("force delete", T0 + 10, 3, until=T0 + 60))
    (row,) = rows([ok, stuck])
    assert row == {
        "fault": "force delete",
        "n": 2,
        "running_again_p50_p99": "3.0 / 3.0 s",
        "full_width_p50_p99_max": "6.0 / 6.0 / 6.0 s",
        "longest_pause_p50_p99": "3.1 / 49.5 s",
        "steps_redone_p50_max": "0 / 7",
        "not_recovered": 1,
    }
    assert "| force delete | 2 |" in table([ok, stuck], None, None)
    # With each fault's cost (steady.lost), their p50 and max, and the sum under the table.
    (row,) = rows([ok, stuck], [4.0, None])
    assert row["training_lost_p50_max"] == "4.0 / 4.0 s"
    text = table([ok, stuck], None, None, [4.0, 9.0])
    assert "| 0 / 7 | 1 | 4.0 / 9.0 s |" in text
    assert "13 s in all, 6.5 s a fault" in text


@pytest.mark.parametrize(
    ("lines", "width", "want"),
    [
        (FORCE, 3, True),
        # Steps at width 3 right after the fault are the old world's, before it noticed.
        (FORCE[:2], 3, False),
        # Re-formed at 2 only.
        (FORCE[:5], 3, False),
        (FORCE[:5], 2, True),
        # Re-formed at 3, no step yet.
        (FORCE[:6], 3, False),
    ],
)
def test_healed_wants_a_reset_at_the_width_and_a_step_after_it(
    lines: list[str], width: int, want: bool
) -> None:
    assert healed(parse(lines), Fault("force delete", T0 + 10, width, until=T0 + 60)) is want


@pytest.mark.parametrize(
    ("lines", "after", "want"),
    [
        # The world of rank 0's latest step: an old host's earlier lines are not in it.
        (
            [
                *(step(1, r, 3, 30, h) for r, h in enumerate(["old", "b", "c"])),
                *(step(5 + r / 10, r, 3, 40, h) for r, h in enumerate(["new", "b", "c"])),
            ],
            0,
            ["b", "c", "new"],
        ),
        # Two pods for one index, both printing: both are in the ring (a world of 4).
        ([step(2, r, 4, 50, h) for r, h in enumerate(["old", "new", "b", "c"])], 0, ["b", "c", "new", "old"]),
        # Nothing after the time asked: no ring known.
        ([step(1, 0, 3, 30, "a")], 2, []),
    ],
)
def test_the_ring_is_the_hosts_of_rank_0s_latest_step(
    lines: list[str], after: float, want: list[str]
) -> None:
    assert ring(parse(lines), T0 + after) == want


def test_a_trainings_start_is_a_re_forming_at_step_0_for_the_bench() -> None:
    """A whole-job restart's new horovodrun prints a start line per rank and no reset line: the
    bench reads it as the world re-formed at step 0, so the fault before it heals."""
    lines = [
        "2026-11-29T02:19:39.900000000Z [0]<stdout>:[02:19:39] t-a rank 0/3: step 2000/1000000 loss 0.1",
        "2026-11-29T02:20:00.850350577Z [0]<stdout>:[02:20:00] t-b rank 0/3: start: 1000000 steps, batch 32",
        "2026-11-29T02:20:01.927076781Z [0]<stdout>:[02:20:01] t-b rank 0/3: step 10/1000000 loss 0.5779",
    ]
    events = parse(lines)
    assert [type(e).__name__ for e in events] == ["Step", "Reset", "Step"]
    assert [type(e).__name__ for e in trainlog.parse(lines)] == ["Step", "Step"]  # not the operator's
    fault_at = runtime_time("2026-11-29T02:19:40.000000Z")
    assert healed(events, Fault("two force deletes at once", fault_at, 3, until=fault_at + 60))
    assert not healed(parse([lines[0], lines[2]]), Fault("x", fault_at, 3, until=fault_at + 60))
