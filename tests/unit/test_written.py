"""What a pass's calls returned, judged: a pod left with nothing holding it (``pod_gone``), and
a pod returned showing what only others write changed since the pass's snapshot
(``others_changed``, ``returned_news``: one more pass). Table-tested."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from aitj.controller.written import Written, others_changed, pod_gone, returned_news
from aitj.core.observed import PodView


def obj(uid: str, rv: int, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": f"name-{uid}", "uid": uid, "resourceVersion": str(rv), **meta}}


DELETING = {"deletionTimestamp": "2026-11-26T20:00:00Z"}
RELEASED = obj("p", 12, **DELETING, finalizers=[])  # a force-deleted pod's finalizer let go: gone
GRACEFUL = obj("p", 12, **DELETING, finalizers=[], deletionGracePeriodSeconds=30)  # the kubelet's still
HELD = obj("p", 12, **DELETING, finalizers=["f"], deletionGracePeriodSeconds=0)  # a restart's delete
CREATED = obj("q", 20)


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


PLANNED = {v.name: v for v in (PodView.from_dict(pod_body("p", 10)), PodView.from_dict(pod_body("q", 10)))}


@pytest.mark.parametrize(
    ("wrote", "news"),
    [
        pytest.param(Written(), False, id="no pod returned"),
        pytest.param(
            Written(pods=[pod_body("p", 12, annotations={"n": "1"})]), False, id="a nudge: the pass's"
        ),
        pytest.param(Written(pods=[pod_body("r", 12)]), False, id="a pod created: not planned from"),
        pytest.param(
            Written(
                pods=[
                    {
                        **pod_body("p2", 11, "Failed"),
                        "metadata": {**obj("p2", 11)["metadata"], "name": "name-p"},
                    }
                ]
            ),
            False,
            id="another pod of a planned one's name (created again): not planned from",
        ),
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
