"""The checkpoint before a drain (docs/semantics.md section 26): which pods get their hook, when
a replica's budget holds every eviction and when it lets one go, and the field's parsing."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import pytest

from aitj.core import api
from aitj.core.api import DrainCheckpoint, InvalidJob, parse_job
from aitj.core.observed import ANNOTATION_DRAIN_CHECKPOINT, NodeView
from aitj.core.planner import plan
from aitj.core.planner.drain_checkpoint import HookPhase, Mark, mark_text, read_mark
from aitj.core.render import ANNOTATION_MAX_UNAVAILABLE
from tests.seeds import seed_job as seed_manifest
from tests.unit.builders import JOB, KEYS, Pod, at, launcher, name_of, node, seed_job, trainer, views

HOOK = DrainCheckpoint(("sh", "-c", "touch /tmp/now"), 30)


def hooked_job(**annotations: str) -> api.Job:
    job = seed_job(trainer(checkpoint_on_drain=HOOK), launcher())
    return dataclasses.replace(job, annotations=annotations) if annotations else job


def seed_pods(mark: str | None = None, on_b: int = 0) -> list[Pod]:
    """seed_pods: the seed running, trainer ``on_b`` on node-b (with ``mark``), the rest on node-a."""
    pods = [Pod("trainer", i).running(node="node-b" if i == on_b else "node-a") for i in range(3)]
    if mark is not None:
        pods[on_b].raw["metadata"]["annotations"] = {ANNOTATION_DRAIN_CHECKPOINT: mark}
    return [*pods, Pod("launcher", 0).running(node="node-a")]


def the_nodes(cordoned: bool) -> dict[str, NodeView]:
    return {"node-a": node("node-a"), "node-b": node("node-b", cordoned=cordoned)}


def trainer_budget(result: Any) -> int | None:
    found = {m.name: m.body["spec"]["minAvailable"] for m in result.budgets}
    return found.get(f"{JOB}-trainer")


def planned(job: api.Job, pods: list[Pod], cordoned: bool, now: float = 50) -> Any:
    return plan(job, views(pods), the_nodes(cordoned), at(now), owned={}, keys=KEYS)


@pytest.mark.parametrize(
    ("cordoned", "mark", "hooks", "budget", "wake"),
    [
        pytest.param(False, None, [], 3, None, id="no drain: the hooked replica allows no eviction"),
        pytest.param(
            True, None, [name_of("trainer", 0)], 3, None, id="a cordon: the pod's hook starts, still held"
        ),
        pytest.param(
            True, mark_text(HookPhase.STARTED, at(40)), [], 3, 20.0, id="under way: held until its deadline"
        ),
        pytest.param(True, mark_text(HookPhase.STARTED, at(10)), [], 2, None, id="past its deadline: let go"),
        pytest.param(True, mark_text(HookPhase.DONE, at(45), "exit 0"), [], 2, None, id="done: one may go"),
        pytest.param(
            True, mark_text(HookPhase.FAILED, at(45), "exit 1"), [], 2, None, id="failed: one may go"
        ),
        pytest.param(True, mark_text(HookPhase.TIMEDOUT, at(45)), [], 2, None, id="timed out: one may go"),
        pytest.param(
            True, "something else", [name_of("trainer", 0)], 3, None, id="a mark not ours: the hook runs"
        ),
        pytest.param(
            False, mark_text(HookPhase.DONE, at(45)), [], 3, None, id="done, node uncordoned: held again"
        ),
    ],
)
def test_a_hooked_replica_is_held_until_its_pods_on_cordoned_nodes_have_had_their_hooks(
    cordoned: bool, mark: str | None, hooks: list[str], budget: int, wake: float | None
) -> None:
    result = planned(hooked_job(), seed_pods(mark), cordoned)
    assert [h.name for h in result.drain_hooks] == hooks
    assert trainer_budget(result) == budget
    if wake is not None:
        assert result.requeue_after is not None and result.requeue_after <= wake


def test_the_hook_names_the_pod_its_main_container_the_command_and_the_deadline() -> None:
    pods = seed_pods()
    (hook,) = planned(hooked_job(), pods, True).drain_hooks
    assert (hook.uid, hook.container, hook.command, hook.timeout_seconds) == (
        pods[0].view().uid,
        "aitj-0",
        HOOK.command,
        30,
    )


def test_two_pods_draining_hold_the_replica_until_both_hooks_are_finished() -> None:
    pods = seed_pods(mark_text(HookPhase.DONE, at(45)))
    pods[1].raw["spec"]["nodeName"] = "node-b"
    result = planned(hooked_job(), pods, True)
    assert [h.name for h in result.drain_hooks] == [name_of("trainer", 1)]
    assert trainer_budget(result) == 3
    pods[1].raw["metadata"]["annotations"] = {ANNOTATION_DRAIN_CHECKPOINT: mark_text(HookPhase.DONE, at(46))}
    assert trainer_budget(planned(hooked_job(), pods, True)) == 2


def test_a_replica_without_the_hook_and_a_job_without_budgets_are_unchanged() -> None:
    plain = planned(seed_job(), seed_pods(), True)
    assert plain.drain_hooks == () and trainer_budget(plain) == 2
    opted_out = planned(hooked_job(**{ANNOTATION_MAX_UNAVAILABLE: "none"}), seed_pods(), True)
    assert opted_out.drain_hooks == () and opted_out.budgets == ()


def test_the_max_unavailable_annotation_is_what_a_finished_hook_lets_go() -> None:
    job = hooked_job(**{ANNOTATION_MAX_UNAVAILABLE: "2"})
    assert trainer_budget(planned(job, seed_pods(), False)) == 3
    assert trainer_budget(planned(job, seed_pods(mark_text(HookPhase.DONE, at(45))), True)) == 1


def test_a_pod_being_deleted_or_not_running_gets_no_hook() -> None:
    pods = seed_pods()
    pods[0].raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert planned(hooked_job(), pods, True).drain_hooks == ()


@pytest.mark.parametrize(
    ("text", "mark"),
    [
        (
            "started 2026-01-01T00:00:00Z",
            Mark(HookPhase.STARTED, datetime.fromisoformat("2026-01-01T00:00:00+00:00")),
        ),
        (
            "done 2026-01-01T00:00:05Z exit 0",
            Mark(HookPhase.DONE, datetime.fromisoformat("2026-01-01T00:00:05+00:00"), "exit 0"),
        ),
        ("done", None),
        ("begun 2026-01-01T00:00:00Z", None),
        ("started yesterday", None),
        (None, None),
    ],
)
def test_marks_read(text: str | None, mark: Mark | None) -> None:
    assert read_mark(text) == mark


def test_a_mark_round_trips_and_keeps_its_detail_short() -> None:
    text = mark_text(HookPhase.FAILED, at(3), "x" * 1000)
    assert read_mark(text) == Mark(HookPhase.FAILED, at(3).replace(microsecond=0), "x" * 160)
    assert len(text) < 200


def manifest(hook: object) -> dict[str, Any]:
    doc = seed_manifest()
    doc["spec"]["replicaSpecs"]["trainer"]["checkpointOnDrain"] = hook
    return doc


def test_the_field_parses_with_its_default_deadline() -> None:
    job = parse_job(manifest({"command": ["sh", "-c", "true"]}))
    assert job.spec.replica("trainer").checkpoint_on_drain == DrainCheckpoint(("sh", "-c", "true"), 60)
    assert parse_job(seed_manifest()).spec.replica("trainer").checkpoint_on_drain is None


PATH = "spec.replicaSpecs.trainer.checkpointOnDrain"


@pytest.mark.parametrize(
    ("hook", "where", "message"),
    [
        ({}, f"{PATH}.command", "Required value"),
        ({"command": []}, f"{PATH}.command", "should have at least 1 items"),
        ({"command": "true"}, f"{PATH}.command", "must be of type array, not string"),
        ({"command": [""]}, f"{PATH}.command", api.CHECKPOINT_COMMAND_MESSAGE),
        ({"command": ["x", 1]}, f"{PATH}.command[1]", "must be of type string, not integer"),
        ({"command": ["x"] * 65}, f"{PATH}.command", "Too many: 65: must have at most 64 items"),
        (
            {"command": ["x"], "timeoutSeconds": 0},
            f"{PATH}.timeoutSeconds",
            "should be greater than or equal to 1",
        ),
        (
            {"command": ["x"], "timeoutSeconds": 601},
            f"{PATH}.timeoutSeconds",
            "should be less than or equal to 600",
        ),
        ({"command": ["x"], "signal": "USR1"}, f"{PATH}.signal", "unknown field"),
        ("sh", PATH, "must be of type object, not string"),
    ],
)
def test_a_wrong_hook_is_refused_with_its_field_path(hook: object, where: str, message: str) -> None:
    with pytest.raises(InvalidJob) as raised:
        parse_job(manifest(hook))
    assert any(e.path == where and message in e.message for e in raised.value.errors), raised.value.errors
