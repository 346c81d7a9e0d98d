"""The decision that a pass's own echoes make no more pass (``written.confirms``), table-tested:
an event of the job or of one of its pods that came while the pass ran is an echo only when it
brings the very version one of the pass's calls returned, or deletes a pod a call left with
nothing holding it. Everything else is news: a version the pass did not write (older or newer),
a pod deleted that the pass left in place (a restart's graceful delete), a pod a 404 found gone.
How the reconciler uses it: tests/unit/test_reconciler.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from aitj.controller.written import Seen, Written, confirms, others_changed, pod_gone, returned_news
from aitj.core.observed import PodView


def obj(uid: str, rv: int, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": f"name-{uid}", "uid": uid, "resourceVersion": str(rv), **meta}}


DELETING = {"deletionTimestamp": "2026-11-26T20:00:00Z"}
RELEASED = obj("p", 12, **DELETING, finalizers=[])  # a force-deleted pod's finalizer let go: gone
GRACEFUL = obj("p", 12, **DELETING, finalizers=[], deletionGracePeriodSeconds=30)  # the kubelet's still
HELD = obj("p", 12, **DELETING, finalizers=["f"], deletionGracePeriodSeconds=0)  # a restart's delete
CREATED = obj("q", 20)
STATUS = obj("job", 7)
RECOVERY = Written(jobs=[STATUS], pods=[RELEASED, CREATED])  # a recovery's pass: release, create, status


@pytest.mark.parametrize(
    ("wrote", "seen", "echoes"),
    [
        pytest.param([RECOVERY], [], True, id="nothing came"),
        pytest.param([RECOVERY], [Seen("q", "20")], True, id="the replacement's ADDED"),
        pytest.param([RECOVERY], [Seen("p", "13", deleted=True)], True, id="the released pod's DELETED"),
        pytest.param([RECOVERY], [Seen("job", "7")], True, id="the status write's echo"),
        pytest.param(
            [RECOVERY],
            [Seen("q", "20"), Seen("p", "13", deleted=True), Seen("job", "7")],
            True,
            id="all three",
        ),
        pytest.param(
            [Written(pods=[CREATED]), Written(jobs=[STATUS])],
            [Seen("q", "20"), Seen("job", "7")],
            True,
            id="writes of two calls of the pass (its report's status)",
        ),
        pytest.param([RECOVERY], [Seen("q", "21")], False, id="the replacement bound since: news"),
        pytest.param(
            [RECOVERY], [Seen("q", "19")], False, id="an older version: a change the pass did not see"
        ),
        pytest.param([RECOVERY], [Seen("job", "8")], False, id="the job changed by someone"),
        pytest.param([RECOVERY], [Seen("r", "5")], False, id="another pod's change"),
        pytest.param([RECOVERY], [Seen("r", "5", deleted=True)], False, id="another pod deleted"),
        pytest.param(
            [RECOVERY], [Seen("q", "20"), Seen("q", "21")], False, id="one echo and one news: news wins"
        ),
        pytest.param(
            [Written(pods=[HELD])],
            [Seen("p", "12"), Seen("p", "14", deleted=True)],
            False,
            id="a restart's graceful delete: its echo, then the DELETED it waits for",
        ),
        pytest.param([Written(pods=[HELD])], [Seen("p", "12")], True, id="the delete's echo alone"),
        pytest.param(
            [Written(pods=[GRACEFUL])],
            [Seen("p", "14", deleted=True)],
            False,
            id="released during a graceful deletion: the kubelet's DELETED is news",
        ),
        pytest.param(
            [Written(gone_pods=["name-p"])],
            [Seen("p", "14", deleted=True)],
            False,
            id="a pod a 404 found gone went behind the pass's back",
        ),
        pytest.param([Written()], [Seen("q", "20")], False, id="a pass that wrote nothing"),
        pytest.param([], [Seen("job", "7")], False, id="a pass that made no call"),
        pytest.param([Written(pods=[obj("", 20)])], [Seen("", "20")], False, id="no uid: never an echo"),
        pytest.param(
            [Written(pods=[obj("q", 0) | {"metadata": {"uid": "q"}}])],
            [Seen("q", "")],
            False,
            id="no version",
        ),
    ],
)
def test_what_only_echoes_a_pass_s_writes(wrote: list[Written], seen: list[Seen], echoes: bool) -> None:
    assert confirms(wrote, seen) is echoes


@pytest.mark.parametrize(
    ("meta", "gone"),
    [
        pytest.param(RELEASED["metadata"], True, id="force-deleted, released"),
        pytest.param(GRACEFUL["metadata"], False, id="graceful: the kubelet has it still"),
        pytest.param(HELD["metadata"], False, id="a finalizer holds it"),
        pytest.param(CREATED["metadata"], False, id="not deleted"),
    ],
)
def test_when_a_call_leaves_a_pod_gone(meta: dict[str, Any], gone: bool) -> None:
    assert pod_gone(meta) is gone


BEFORE = PodView(name="p", uid="uid-p", phase="Running", node_name="n1")


@pytest.mark.parametrize(
    ("old", "new", "news"),
    [
        pytest.param(None, BEFORE, False, id="a pod the cache did not hold (created)"),
        pytest.param(BEFORE, replace(BEFORE, uid="uid-q"), False, id="another pod of that name"),
        pytest.param(BEFORE, replace(BEFORE, finalizers=()), False, id="its finalizer let go: the pass's"),
        pytest.param(BEFORE, replace(BEFORE, hosts_annotation="d"), False, id="a nudge: the pass's"),
        pytest.param(BEFORE, replace(BEFORE, ledger_annotation="l"), False, id="a ledger stamp: the pass's"),
        pytest.param(
            BEFORE, replace(BEFORE, phase="Failed", reason="Evicted"), True, id="failed by the kubelet"
        ),
        pytest.param(BEFORE, replace(BEFORE, exit_code=137), True, id="an exit code"),
        pytest.param(BEFORE, replace(BEFORE, restarts=1), True, id="a container restarted"),
        pytest.param(BEFORE, replace(BEFORE, node_name="n2"), True, id="bound elsewhere"),
        pytest.param(
            BEFORE, replace(BEFORE, deleted_at=datetime(2026, 11, 26, tzinfo=UTC)), True, id="deleted"
        ),
    ],
)
def test_what_a_call_s_response_brings_that_others_wrote(
    old: PodView | None, new: PodView, news: bool
) -> None:
    assert others_changed(old, new) is news


def pod_body(uid: str, rv: int, phase: str = "Running", **meta: Any) -> dict[str, Any]:
    return {**obj(uid, rv, **meta), "spec": {"nodeName": "n1"}, "status": {"phase": phase}}


PLANNED = [PodView.from_dict(pod_body("p", 10)), PodView.from_dict(pod_body("q", 10))]


@pytest.mark.parametrize(
    ("wrote", "news"),
    [
        pytest.param(Written(), False, id="no pod returned"),
        pytest.param(
            Written(pods=[pod_body("p", 12, annotations={"n": "1"})]), False, id="a nudge: the pass's"
        ),
        pytest.param(Written(pods=[pod_body("r", 12)]), False, id="a pod created: not planned from"),
        pytest.param(
            Written(pods=[pod_body("p", 11, "Failed")]),
            True,
            id="a patch that changed nothing returned the kubelet's failure",
        ),
        pytest.param(Written(pods=[pod_body("q", 12), pod_body("p", 13, "Failed")]), True, id="one of two"),
        pytest.param(
            Written(pods=[pod_body("p", 12, "Failed", **DELETING, finalizers=[])]), False, id="gone"
        ),
    ],
)
def test_what_a_pass_s_calls_returned_that_others_changed(wrote: Written, news: bool) -> None:
    assert returned_news(PLANNED, wrote) is news
