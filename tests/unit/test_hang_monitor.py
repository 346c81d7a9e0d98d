"""The progress monitor (aitj.controller.progress): what it asks the apiserver for, what it makes
of the answer, when it kicks a pass, and the views it hands the planner. The log read itself is
a stand-in here; tests/e2e/real/test_hang.py reads a real kubelet's log."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from aitj.controller import progress as monitor
from aitj.core.observed import PodView
from tests.unit.builders import JOB, NAMESPACE, Pod, at, running_seed, views

KEY = (NAMESPACE, JOB)


class Reads:
    """Reads: the stand-in for ``raw_get``: each call is recorded and answered with ``text``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, str]]]] = []
        self.text = ""
        self.status = 200

    def __call__(self, _api: Any, path: str, *, query: Sequence[tuple[str, str]], accept: str) -> Any:
        self.calls.append((path, list(query)))
        return self.status, self.text.encode()


def made(progress: dict[str, Any] | None, pods: list[PodView], now: float) -> tuple[Any, list[Any], Reads]:
    kicks: list[Any] = []
    body = {"spec": {"progress": progress}} if progress is not None else {"spec": {}}
    m = monitor.ProgressMonitor(None, lambda _k: body, lambda _k: pods, kicks.append, clock=lambda: at(now))  # type: ignore[arg-type]
    return m, kicks, Reads()


@pytest.fixture
def pods() -> list[PodView]:
    return views(running_seed())  # the launcher runs since 2 s


def line(second: float, text: str = "step") -> str:
    return f"{at(second).strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {text}\n"


def test_the_tail_of_the_watched_pods_log_is_asked_for_with_timestamps(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    m, _, reads = made({"replica": "launcher", "stallSeconds": 60}, pods, 10)
    monkeypatch.setattr(monitor, "raw_get", reads)
    reads.text = line(9)
    assert m.read(KEY) == (3.0, False)  # period stallSeconds/20; a fresh line: no pass
    path, query = reads.calls[0]
    name = next(p.name for p in pods if p.replica == "launcher")
    assert path == f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/log"
    assert dict(query) == {"tailLines": "1", "timestamps": "true", "limitBytes": "65536"}


def test_a_step_pattern_reads_more_lines_and_keeps_the_newest_match(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = {"replica": "launcher", "stallSeconds": 60, "stepPattern": r"step \d+", "container": "aitj-0"}
    m, _kicks, reads = made(spec, pods, 100)
    monkeypatch.setattr(monitor, "raw_get", reads)
    reads.text = line(30, "step 7") + line(99, "eval")
    _period, stalled = m.read(KEY)
    assert dict(reads.calls[0][1])["tailLines"] == "100" and dict(reads.calls[0][1])["container"] == "aitj-0"
    assert stalled  # 70 s since the last step line
    seen = m.watches[KEY].seen
    assert seen.line_at == at(30) and seen.checked_at == at(100)
    reads.text = line(99, "eval")  # the step line scrolled out: the newest seen is kept
    m.read(KEY)
    assert m.watches[KEY].seen.line_at == at(30)


def test_the_views_carry_what_was_read_and_stay_the_same_objects_between_reads(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    m, _, reads = made({"replica": "launcher", "stallSeconds": 60}, pods, 10)
    monkeypatch.setattr(monitor, "raw_get", reads)
    assert m.views(KEY, pods) is pods  # nothing read yet
    reads.text = line(9)
    m.read(KEY)
    first = m.views(KEY, pods)
    watched = next(p for p in first if p.replica == "launcher")
    assert watched.progress is not None and watched.progress.line_at == at(9)
    assert [p for p in first if p.replica != "launcher"] == [p for p in pods if p.replica != "launcher"]
    again = m.views(KEY, pods)
    assert next(p for p in again if p.replica == "launcher") is watched  # the memo keeps its verdicts
    m.read(KEY)
    assert next(p for p in m.views(KEY, pods) if p.replica == "launcher") is not watched  # a new read


@pytest.mark.parametrize(
    ("status", "text"),
    [(400, "container not found"), (200, "")],
)
def test_a_read_that_finds_nothing_decides_nothing_but_an_empty_log_counts_as_silence(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch, status: int, text: str
) -> None:
    m, _, reads = made({"replica": "launcher", "stallSeconds": 60}, pods, 100)
    monkeypatch.setattr(monitor, "raw_get", reads)
    reads.status, reads.text = status, text
    _period, stalled = m.read(KEY)
    if status != 200:  # unreadable: no fact, no pass, no hang
        assert not stalled and KEY not in m.watches
    else:  # read, and no line at all: the planner judges it from the clock
        assert stalled and m.watches[KEY].seen.line_at is None


def test_no_read_without_spec_progress_or_before_the_watched_pod_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = Reads()
    monkeypatch.setattr(monitor, "raw_get", reads)
    m, _, _ = made(None, views(running_seed()), 10)
    assert m.read(KEY) == (None, False)
    pending = [Pod("launcher", 0).view()]
    m, _, _ = made({"replica": "launcher", "stallSeconds": 600}, pending, 10)
    assert m.read(KEY) == (monitor.WAIT_SECONDS, False)  # looked at again soon, not in 30 s
    assert reads.calls == []


def test_the_watched_pod_is_the_current_generation_of_index_0() -> None:
    old = dataclasses.replace(Pod("launcher", 0).running(1).view(), deleted_at=at(5))
    new = Pod("launcher", 0, generation=1).running(6).view()
    worker = Pod("launcher", 1).running(1).view()
    assert monitor.watched_pod([old, new, worker], "launcher") is new
    assert monitor.watched_pod([old], "launcher") is None
    assert monitor.watched_pod([Pod("launcher", 0, generation=2).view(), new], "launcher") is None
