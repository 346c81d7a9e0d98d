"""What the job shows of a checkpoint before a drain (docs/semantics.md section 26): an Event
per step of a draining pod's hook (started, then done, failed or timed out), each named so it
is recorded once, read by the planner from the pod's mark; and a line in ``aitj explain`` for
a pod whose hook ran or runs."""

from __future__ import annotations

import pytest

from aitj.cli.explain_text import render
from aitj.core.explain import explain
from aitj.core.planner.drain_checkpoint import (
    EVENT_DONE,
    EVENT_FAILED,
    EVENT_STARTED,
    EVENT_TIMED_OUT,
    HookPhase,
    exec_result,
    mark_text,
)
from aitj.core.render import ANNOTATION_MAX_UNAVAILABLE
from aitj.core.wire import format_time
from tests.unit.builders import at, name_of, views
from tests.unit.test_drain_checkpoint import hooked_job, planned, seed_pods, the_nodes

POD = name_of("trainer", 0)
T45 = format_time(at(45))


def hook_events(result: object) -> list[tuple[str, str, str]]:
    found = getattr(result, "events", ())
    return [(e.type, e.reason, e.message) for e in found if e.reason.startswith("DrainCheckpoint")]


@pytest.mark.parametrize(
    ("mark", "now", "expected", "words"),
    [
        pytest.param(None, 50, [], None, id="not yet started: nothing to say"),
        pytest.param(
            mark_text(HookPhase.STARTED, at(40)),
            50,
            [("Normal", EVENT_STARTED)],
            "started (timeoutSeconds 30)",
            id="under way",
        ),
        pytest.param(
            mark_text(HookPhase.DONE, at(45), "exit 0"),
            50,
            [("Normal", EVENT_STARTED), ("Normal", EVENT_DONE)],
            f"done at {T45} (exit 0): its eviction is let through",
            id="done (quicker than a pass: both)",
        ),
        pytest.param(
            mark_text(HookPhase.FAILED, at(45), "exit 3"),
            50,
            [("Normal", EVENT_STARTED), ("Warning", EVENT_FAILED)],
            f"failed at {T45} (exit 3): its eviction is let through all the same",
            id="failed",
        ),
        pytest.param(
            mark_text(HookPhase.TIMEDOUT, at(45), "still running after 30s"),
            50,
            [("Normal", EVENT_STARTED), ("Warning", EVENT_TIMED_OUT)],
            "(still running after 30s): its eviction is let through all the same",
            id="timed out",
        ),
        pytest.param(
            mark_text(HookPhase.STARTED, at(10)),
            50,
            [("Normal", EVENT_STARTED), ("Warning", EVENT_TIMED_OUT)],
            "no end seen within timeoutSeconds 30: its eviction is let through",
            id="started, its deadline passed (the operator that ran it died)",
        ),
    ],
)
def test_each_step_of_a_hook_is_an_event_named_once(
    mark: str | None, now: float, expected: list[tuple[str, str]], words: str | None
) -> None:
    result = planned(hooked_job(), seed_pods(mark), True, now)
    found = hook_events(result)
    assert [(t, r) for t, r, _ in found] == expected
    if words is not None:
        assert POD in found[-1][2] and "on cordoned node node-b" in found[-1][2] and words in found[-1][2]
    again = planned(hooked_job(), seed_pods(mark), True, now + 1)
    names = [e.name for e in result.events if e.reason.startswith("DrainCheckpoint")]
    assert names == [e.name for e in again.events if e.reason.startswith("DrainCheckpoint")]
    assert len(set(names)) == len(names) and all(n and ".drainhook-trainer-0-0-" in n for n in names)


def test_no_event_once_the_pod_is_off_a_cordoned_node_or_without_budgets() -> None:
    done = mark_text(HookPhase.DONE, at(45), "exit 0")
    assert hook_events(planned(hooked_job(), seed_pods(done), False)) == []  # uncordoned
    opted_out = hooked_job(**{ANNOTATION_MAX_UNAVAILABLE: "none"})
    assert hook_events(planned(opted_out, seed_pods(done), True)) == []


@pytest.mark.parametrize(
    ("mark", "line"),
    [
        (
            mark_text(HookPhase.STARTED, at(40)),
            f"checkpoint before a drain: running since {format_time(at(40))}: its eviction waits until "
            f"{format_time(at(70))} at most",
        ),
        (
            mark_text(HookPhase.DONE, at(45), "exit 0"),
            f"checkpoint before a drain: done at {T45} (exit 0): its eviction is let through",
        ),
    ],
)
def test_aitj_explain_says_where_a_pods_hook_stands(mark: str, line: str) -> None:
    text = "\n".join(render(explain(hooked_job(), views(seed_pods(mark)), the_nodes(True), at(50))))
    assert line in text
    plain = "\n".join(render(explain(hooked_job(), views(seed_pods()), the_nodes(True), at(50))))
    assert "checkpoint before a drain" not in plain


# What the apiserver sends on an exec's error channel when the command ends (a metav1.Status):
# the answers of kube-apiserver v1.37 through a real kubelet, and the one seen through kwok in
# tests/e2e/test_rbac_audit.py (its nodes run no containers), cut to what matters.
NO_EXEC = (
    'Internal error occurred: error executing command in container: no exec found for container "aitj-0"'
)


@pytest.mark.parametrize(
    ("status", "phase", "detail"),
    [
        ({"metadata": {}, "status": "Success"}, HookPhase.DONE, "exit 0"),
        (
            {
                "status": "Failure",
                "reason": "NonZeroExitCode",
                "message": "command terminated with non-zero exit code: exit code 3",
                "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
            },
            HookPhase.FAILED,
            "exit 3",
        ),
        (
            {
                "status": "Failure",
                "reason": "InternalError",
                "message": NO_EXEC,
                "details": {"causes": [{"message": NO_EXEC}]},
            },
            HookPhase.FAILED,
            f"could not run: {NO_EXEC}",
        ),
        (None, HookPhase.FAILED, "could not run: no status from the exec"),
    ],
)
def test_what_came_of_an_exec_is_read_from_its_status(status: object, phase: HookPhase, detail: str) -> None:
    assert exec_result(status) == (phase, detail)
