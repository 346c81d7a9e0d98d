"""The progress monitor (aitj.controller.progress): what it asks the apiserver for, what it makes
of the answer, when it kicks a pass, and the views it hands the planner. The log read itself is
a stand-in here; tests/e2e/real/test_hang.py reads a real kubelet's log."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
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


# --- a tenant's pattern and log (issue 47, HIGH 1) ---------------------------------------------


@pytest.mark.timeout(60)  # Python's re took hours here (each extra "a" doubled the time)
def test_a_catastrophic_pattern_against_its_worst_line_costs_a_read_no_more(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    m, _, reads = made({"replica": "launcher", "stallSeconds": 60, "stepPattern": "^(a+)+$"}, pods, 100)
    monkeypatch.setattr(monitor, "raw_get", reads)
    reads.text = line(99, "a" * 40 + "!") * 100
    started = time.perf_counter()
    _period, stalled = m.read(KEY)
    took = time.perf_counter() - started
    print(f"^(a+)+$ against 100 lines of 40 a and a !: {took * 1000:.1f} ms")
    assert stalled and m.watches[KEY].seen.line_at is None  # no line matched: silence, judged
    assert took < 5.0


def test_the_tenants_pattern_is_matched_off_the_event_loop(
    pods: list[PodView], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan that takes long (a slow log, a long match) holds its read's thread, not the loop:
    a timer on the loop keeps ticking while it runs."""
    m, _, reads = made({"replica": "launcher", "stallSeconds": 60, "stepPattern": "step"}, pods, 100)
    monkeypatch.setattr(monitor, "raw_get", reads)
    reads.text = line(99, "step 1")
    real_scan = monitor.scan

    def slow_scan(text: str, pattern: str | None, began: Any) -> Any:
        time.sleep(0.5)
        return real_scan(text, pattern, began)

    monkeypatch.setattr(monitor, "scan", slow_scan)

    async def go() -> int:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        ticker = asyncio.create_task(tick())
        await m._read(KEY, asyncio.Semaphore(1), asyncio.Semaphore(1))
        ticker.cancel()
        return ticks

    ticks = asyncio.run(go())
    assert ticks >= 10  # 0.5 s of scan: ~25 ticks of 20 ms; a scan on the loop would allow none
    assert m.watches[KEY].seen.line_at == at(99)


def test_the_namespaces_take_turns_and_none_holds_more_than_its_share_of_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = [("busy", f"job-{k}") for k in range(6)] + [("quiet", "job-0"), ("other", "job-0")]
    order = monitor.fair_order(keys)
    assert order[:3] == [("busy", "job-0"), ("other", "job-0"), ("quiet", "job-0")]
    assert sorted(order) == sorted(keys)

    # The monitor's loop: every read blocks until released; count what is in flight per namespace.
    release = threading.Event()
    in_flight: dict[str, int] = {}
    most: dict[str, int] = {}
    lock = threading.Lock()

    def blocking_scan(m: Any, pod: PodView, progress: Any, began: Any) -> Any:
        ns = pod.namespace
        with lock:
            in_flight[ns] = in_flight.get(ns, 0) + 1
            most[ns] = max(most.get(ns, 0), in_flight[ns])
        release.wait(5)
        with lock:
            in_flight[ns] -= 1
        return None

    seed = running_seed()
    pods_by_key = {key: [dataclasses.replace(p, namespace=key[0]) for p in views(seed)] for key in keys}
    body = {"spec": {"progress": {"replica": "launcher", "stallSeconds": 60}}}
    m = monitor.ProgressMonitor(None, lambda _k: body, pods_by_key.__getitem__, lambda _k: None)  # type: ignore[arg-type]
    monkeypatch.setattr(monitor.ProgressMonitor, "_scan", blocking_scan)

    async def go() -> None:
        runner = asyncio.create_task(m.run(lambda: keys))
        for _ in range(100):
            await asyncio.sleep(0.02)
            with lock:
                if in_flight.get("quiet") and in_flight.get("other"):
                    break
        release.set()
        await asyncio.sleep(0.1)
        runner.cancel()

    asyncio.run(go())
    assert most.get("quiet") == 1 and most.get("other") == 1  # not kept waiting behind "busy"
    assert most["busy"] == monitor.READS_PER_NAMESPACE
