"""The `aitj scaleout` / `aitj scalein` commands without a cluster: how they read a scale's
progress and outcome from the job (``follow``), their exit codes, and Arena's --timeout."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from aitj.cli.options import parse_duration
from aitj.cli.scale_progress import EXIT_DONE, EXIT_UNDONE, Progress, follow, recorded_outcome

G = 4  # metadata.generation after the command's patch
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def job(status: dict[str, Any], replicas: int = 4) -> dict[str, Any]:
    return {
        "metadata": {"generation": G},
        "spec": {"replicaSpecs": {"trainer": {"replicas": replicas}}},
        "status": {"observedGeneration": G, "phase": "Running", "startRunningTime": "t", **status},
    }


def entry(generation: int, operation: str, reason: str, message: str = "m") -> dict[str, Any]:
    return {
        "replica": "trainer",
        "generation": generation,
        "operation": operation,
        "reason": reason,
        "message": message,
    }


def op(generation: int, operation: str = "scaleout", **more: Any) -> dict[str, Any]:
    return {
        "scaling": {"trainer": {"operation": operation, "generation": generation, "from": 3, "to": 4, **more}}
    }


@pytest.mark.parametrize(
    ("status", "code", "words"),
    [
        pytest.param(
            {"observedGeneration": G - 1}, None, "waiting for the operator to see", id="the edit not seen yet"
        ),
        pytest.param(
            op(G, pods=["p3"], deadline="2026-01-01T12:01:30Z"),
            None,
            "0 of 1 new pods running, rolled back in 90s if not",
            id="a scale-out under way, its deadline counted from now",
        ),
        pytest.param(
            op(G, pods=["p3"], deadline="2026-01-01T11:59:00Z"),
            None,
            "rolled back in 0s if not",
            id="a scale-out past its deadline waits for the operator's rollback",
        ),
        pytest.param(
            op(G, "scalein", pods=["p3"], draining=["p3"], deadline="2026-01-01T12:00:05Z"),
            None,
            "left the host list (1 draining); deleted in 5s",
            id="a scale-in draining",
        ),
        pytest.param(
            op(G, "rollback", message="p4 failed"),
            None,
            "rolling back: p4 failed",
            id="a rollback under way",
        ),
        pytest.param(
            {"scaleHistory": [entry(G, "scaleout", "ScaleSucceeded", "done")]},
            EXIT_DONE,
            "done",
            id="it succeeded",
        ),
        pytest.param(
            {"scaleHistory": [entry(G, "rollback", "ScaleTimeout", "rolled back: late")]},
            EXIT_UNDONE,
            "rolled back: late",
            id="it was rolled back",
        ),
        pytest.param(
            {"scaleHistory": [entry(G, "rollback", "ScaleCancelled", "cancelled")]},
            EXIT_UNDONE,
            "cancelled",
            id="a newer edit cancelled it",
        ),
        pytest.param(
            {"scaleHistory": [entry(G + 1, "scaleout", "ScaleSucceeded", "x")]},
            EXIT_UNDONE,
            "replaced by a newer edit",
            id="a newer edit's operation finished instead",
        ),
        pytest.param(
            op(G + 1), EXIT_UNDONE, "replaced by a newer edit", id="a newer edit's operation is under way"
        ),
        pytest.param(
            {"phase": "Failed", "conditions": [{"message": "launcher failed"}]},
            EXIT_UNDONE,
            "the job ended (Failed) before the scale finished: launcher failed",
            id="the job ended first",
        ),
        pytest.param(
            {"phase": "Timeout", "conditions": [{"message": "timeLimit"}]},
            EXIT_UNDONE,
            "the job ended (Timeout)",
            id="the job timed out first",
        ),
        pytest.param(
            {"currentReplicas": {"trainer": 4}, "startRunningTime": None},
            EXIT_DONE,
            "the job has not run yet",
            id="a job that has not run takes the edit at once",
        ),
        pytest.param(
            {"scaleHistory": [entry(G - 1, "scaleout", "ScaleSucceeded")]},
            None,
            "waiting for the operator",
            id="an older operation is not this edit's",
        ),
    ],
)
def test_follow_reads_how_the_scale_of_this_edit_goes(
    status: dict[str, Any], code: int | None, words: str
) -> None:
    progress = follow(job(status), "trainer", G, lambda names: 0, NOW)
    assert progress.code == code and words in progress.text


@pytest.mark.parametrize(
    ("history", "outcome"),
    [
        pytest.param([], None, id="nothing recorded"),
        pytest.param(
            [
                entry(G, "scaleout", "ScaleSucceeded", "done"),
                {**entry(G + 1, "x", "y"), "replica": "launcher"},
            ],
            Progress("done", EXIT_DONE),
            id="another replica's newer entry is skipped",
        ),
        pytest.param(
            [entry(G, "scaleout", "ScaleSucceeded", "done"), {**entry(G, "x", "y"), "generation": "4"}],
            Progress("done", EXIT_DONE),
            id="an entry without a numeric generation is skipped",
        ),
        pytest.param(
            [entry(G, "scaleout", "ScaleSucceeded", "done"), entry(G - 1, "scaleout", "ScaleSucceeded")],
            None,
            id="only the replica's newest entry counts",
        ),
    ],
)
def test_the_scale_history_says_how_this_edit_ended(history: list[Any], outcome: Progress | None) -> None:
    assert recorded_outcome({"scaleHistory": history}, "trainer", G) == outcome


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("600", 600, id="plain seconds"),
        pytest.param("90s", 90, id="seconds"),
        pytest.param("10m", 600, id="minutes, as Arena writes it"),
        pytest.param("1h30m", 5400, id="hours and minutes"),
    ],
)
def test_timeouts_read_like_arenas(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "10d", "m"])
def test_a_timeout_that_is_not_a_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)
