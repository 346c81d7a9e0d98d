"""Refusals and errors end in a clear state, never a loop (issue 24, section 3): what tells a
stale status write from a refused one (the apiserver's answers, as measured on v1.36), what a
failed pass says (``failed_pass``: one Event and ``status.passFailure`` per way of failing), and
the reconciler's handling: a refused status write or an exception in a pass backs off and
reports, and the first pass that goes through removes the report. The real apiserver with a
real ValidatingAdmissionPolicy: tests/e2e/test_refusals.py."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from aitj.controller.executor import StatusRefused, StepFailed
from aitj.controller.executor.answers import version_test_failed
from aitj.controller.retries import failure_reason
from aitj.core.api import PassFailure
from aitj.core.planner import failed_pass
from aitj.core.planner.failed_pass import FailureReason, Report
from aitj.core.planner.types import Event
from tests.unit.test_reconciler import KEY, WRITE, Recorder, body, reconciler

NOW = dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.UTC)
LATER = NOW + dt.timedelta(minutes=5)

# The apiserver's answers to the status write's JSON patch (v1.36, measured: kube-apiserver of
# the local control plane), cut to what matters.
STALE = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Invalid",
    "code": 422,
    "details": {},
    "message": "the server rejected our request due to an error in our request",
}
SCHEMA = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Invalid",
    "code": 422,
    "message": 'AITrainingJob.kongming.cce.baiudbce.com "j" is invalid: [status.phase: Unsupported value]',
    "details": {
        "name": "j",
        "group": "kongming.cce.baiudbce.com",
        "kind": "AITrainingJob",
        "causes": [{"reason": "FieldValueNotSupported", "field": "status.phase"}],
    },
}
POLICY = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Invalid",
    "code": 422,
    "message": "ValidatingAdmissionPolicy 'p' with binding 'p' denied request: no",
    "details": {
        "name": "j",
        "group": "kongming.cce.baiudbce.com",
        "kind": "aitrainingjobs",
        "causes": [{"message": "ValidatingAdmissionPolicy 'p' denied request: no"}],
    },
}


def answer(doc: Any, status: int = 422) -> ApiException:
    e = ApiException(status=status, reason="Unprocessable Entity")
    e.body = doc if isinstance(doc, str) else json.dumps(doc)
    return e


@pytest.mark.parametrize(
    ("doc", "stale"),
    [
        pytest.param(STALE, True, id="a failed version test names no object: the job changed"),
        pytest.param(SCHEMA, False, id="a schema rule refuses the patched object, naming it"),
        pytest.param(POLICY, False, id="so does a ValidatingAdmissionPolicy"),
        pytest.param("<html>bad gateway</html>", False, id="an answer that cannot be read is a refusal"),
    ],
)
def test_a_stale_status_write_is_told_from_a_refused_one(doc: Any, stale: bool) -> None:
    assert version_test_failed(answer(doc)) is stale


def refused_by_policy() -> StatusRefused:
    try:
        raise StatusRefused("writing status: denied request: no") from answer(POLICY)
    except StatusRefused as e:
        return e


def refused_call() -> StepFailed:
    try:
        raise StepFailed("creating pod p: exceeded quota") from answer({}, 403)
    except StepFailed as e:
        return e


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        pytest.param(refused_by_policy(), FailureReason.STATUS_REFUSED, id="a refused status write"),
        pytest.param(refused_call(), FailureReason.CALL_REFUSED, id="another refused call"),
        pytest.param(StepFailed("no answer from the API server"), None, id="no answer: nobody to tell"),
        pytest.param(ValueError("not a whole number"), FailureReason.PASS_ERROR, id="an error in a pass"),
    ],
)
def test_a_failed_pass_is_reported_by_why_it_failed(error: Exception, reason: FailureReason | None) -> None:
    assert failure_reason(error) is reason


SAID = PassFailure(reason="StatusRefused", message="denied", since="2026-11-22T10:00:00Z")


@pytest.mark.parametrize(
    ("prev", "reason", "message", "want"),
    [
        pytest.param(
            None,
            FailureReason.STATUS_REFUSED,
            "denied",
            Report(SAID, Event("Warning", "StatusRefused", "denied (retrying with a backoff)")),
            id="the first failure posts an Event and records why",
        ),
        pytest.param(
            SAID, FailureReason.STATUS_REFUSED, "denied", None, id="the same failure again says nothing"
        ),
        pytest.param(
            SAID,
            FailureReason.PASS_ERROR,
            "ValueError: x",
            Report(
                PassFailure(reason="PassError", message="ValueError: x", since="2026-11-22T10:05:00Z"),
                Event("Warning", "PassError", "ValueError: x (retrying with a backoff)"),
            ),
            id="another way of failing is said again, since now",
        ),
    ],
)
def test_what_a_failed_pass_says(
    prev: PassFailure | None, reason: FailureReason, message: str, want: Report | None
) -> None:
    assert failed_pass.on_failure(prev, reason, message, NOW if prev is None else LATER) == want


def test_a_long_message_is_cut_to_what_an_event_holds() -> None:
    report = failed_pass.on_failure(None, FailureReason.PASS_ERROR, "x" * 5000, NOW)
    assert report is not None and report.event is not None and report.failure is not None
    assert len(report.event.message) <= failed_pass.MAX_MESSAGE >= len(report.failure.message or "")


def test_a_pass_that_goes_through_removes_the_recorded_failure_and_only_then() -> None:
    assert failed_pass.on_success(SAID) == Report(None, None)
    assert failed_pass.on_success(None) is None


def test_a_refused_status_write_backs_off_and_is_reported_once() -> None:
    rec = Recorder(refused_by_policy(), refused_by_policy())
    r, planner, _ = reconciler(rec, body())

    async def run() -> None:
        await r.kick(KEY)
        state = r._jobs[KEY]
        assert state.failures == 1 and state.retry_at > asyncio.get_running_loop().time()
        await r.kick(KEY)  # its watch event: waits for the backoff, no pass
        await r.close()

    asyncio.run(run())
    assert len(planner.calls) == 1 and rec.plans == [WRITE]
    (report,) = rec.reports
    assert report.failure is not None and report.failure.reason == "StatusRefused"
    assert report.event is not None and "denied request: no" in report.event.message


def test_an_exception_in_a_pass_is_a_failed_pass_not_a_dead_task() -> None:
    rec = Recorder()
    r, _, _ = reconciler(rec, body())

    def crash(*_: Any, **__: Any) -> Any:
        raise ValueError("container 'c' nvidia.com/gpu: GPU quantity '1.5' is not a whole number")

    r.planner = crash

    async def run() -> None:
        await r.kick(KEY)  # raised out of kick before: the task died, with no retry
        state = r._jobs[KEY]
        assert state.failures == 1 and state.timer is not None
        await r.close()

    asyncio.run(run())
    (report,) = rec.reports
    assert report.failure is not None and report.failure.reason == "PassError"
    assert "ValueError: container 'c'" in (report.failure.message or "")


def test_the_first_pass_that_goes_through_removes_the_recorded_failure() -> None:
    doc = body()
    doc["status"] = {"passFailure": SAID.to_json()}
    rec = Recorder()
    r, _, _ = reconciler(rec, doc)
    asyncio.run(r.kick(KEY))
    assert rec.reports == [Report(None, None)]
    rec2 = Recorder()
    r2, _, _ = reconciler(rec2, body())
    asyncio.run(r2.kick(KEY))
    assert rec2.reports == []  # nothing recorded: nothing sent
