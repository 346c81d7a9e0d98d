"""aitj.controller.drainhooks carries out the hooks the planner names: the marks it writes
around the exec, once per pod however often a pass names it (docs/semantics.md section 26)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.drainhooks import DrainHooks
from aitj.core.observed import ANNOTATION_DRAIN_CHECKPOINT
from aitj.core.planner.drain_checkpoint import HookPhase, read_mark
from aitj.core.planner.types import DrainHook

HOOK = DrainHook("job-trainer-1", "uid-1", "trainer", ("sh", "-c", "true"), 30)


class Wire:
    """Wire: the pod patches sent, or refused with ``status``."""

    def __init__(self, status: int | None = None) -> None:
        self.status = status
        self.patches: list[tuple[str, Any]] = []

    def patch_pod(self, name: str, namespace: str, patch: Any) -> None:
        if self.status is not None:
            raise ApiException(status=self.status)
        self.patches.append((name, patch))


def hooks(wire: Wire, outcome: Any) -> tuple[DrainHooks, list[DrainHook]]:
    runner = DrainHooks(client.ApiClient(client.Configuration()))
    runner.wire = wire  # type: ignore[assignment]
    ran: list[DrainHook] = []

    def run(namespace: str, hook: DrainHook) -> tuple[HookPhase, str]:
        ran.append(hook)
        if isinstance(outcome, Exception):
            raise outcome
        phase, detail = outcome
        return HookPhase(phase), str(detail)

    runner._exec = run  # type: ignore[method-assign]
    return runner, ran


def phases(wire: Wire) -> list[HookPhase]:
    out = []
    for _name, patch in wire.patches:
        assert patch["metadata"]["uid"] == HOOK.uid  # a pod replaced since is not touched
        mark = read_mark(patch["metadata"]["annotations"][ANNOTATION_DRAIN_CHECKPOINT])
        assert mark is not None
        out.append(mark.phase)
    return out


@pytest.mark.parametrize(
    ("outcome", "marks"),
    [
        pytest.param((HookPhase.DONE, "exit 0"), [HookPhase.STARTED, HookPhase.DONE], id="exited 0: done"),
        pytest.param((HookPhase.TIMEDOUT, "late"), [HookPhase.STARTED, HookPhase.TIMEDOUT], id="timed out"),
        pytest.param(
            RuntimeError("no exec"), [HookPhase.STARTED, HookPhase.FAILED], id="could not run: failed"
        ),
    ],
)
def test_the_pod_is_marked_before_and_after_its_hook(outcome: Any, marks: list[HookPhase]) -> None:
    wire = Wire()
    runner, ran = hooks(wire, outcome)
    runner._run("ns", HOOK)
    assert ran == [HOOK] and phases(wire) == marks


def test_a_pod_gone_or_replaced_gets_no_exec() -> None:
    runner, ran = hooks(Wire(status=409), (HookPhase.DONE, ""))
    runner._run("ns", HOOK)
    assert ran == []


def test_a_hook_under_way_is_not_started_again() -> None:
    release = threading.Event()
    wire = Wire()
    runner, ran = hooks(wire, (HookPhase.DONE, ""))
    inner = runner._exec

    def slow(namespace: str, hook: DrainHook) -> tuple[HookPhase, str]:
        release.wait(5)
        return inner(namespace, hook)

    runner._exec = slow  # type: ignore[method-assign]
    runner.start("ns", [HOOK])
    runner.start("ns", [HOOK])
    release.set()
    runner.pool.shutdown(wait=True)
    assert ran == [HOOK]
