"""The harness's own watch: a list, then a watch from its resourceVersion, in a thread.

Every latency ends on this watch: an expectation registered before the harness's API call is
fulfilled in the watch thread, stamped with the monotonic clock the moment the event is
decoded, so a slow main thread does not lengthen a measurement. Events are decoded as plain
JSON (not the client's models, which cost milliseconds each at 10,000 pods).

A ``classify`` function puts each object in classes ("bench/Running"); the watcher keeps a
count per class, so "all 1,000 pods Running" is a comparison, not a scan.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

Obj = dict[str, Any]
Lister = Callable[..., Any]  # a kubernetes list call: list_pod_for_all_namespaces and the like
Classify = Callable[[Obj], tuple[str, ...]]
E = TypeVar("E", bound="Expectation")


def key_of(obj: Obj) -> tuple[str, str]:
    """key_of: (namespace, name) of an object."""
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


class Expectation:
    """Expectation: something the watch will see; ``times`` are when each part of it was seen."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.done = threading.Event()

    def feed(self, etype: str, obj: Obj, counts: Counter[str], now: float) -> bool:
        """feed: one event; True once the expectation is met."""
        raise NotImplementedError

    def wait(self, timeout: float) -> bool:
        """wait: True if met within ``timeout`` seconds."""
        return self.done.wait(timeout)


class Matches(Expectation):
    """Matches: ``count`` distinct keys returned by ``match(event type, object)`` (None: no match)."""

    def __init__(self, match: Callable[[str, Obj], Hashable | None], count: int = 1) -> None:
        super().__init__()
        self.match = match
        self.count = count
        self.seen: set[Hashable] = set()

    def feed(self, etype: str, obj: Obj, counts: Counter[str], now: float) -> bool:
        key = self.match(etype, obj)
        if key is not None and key not in self.seen:
            self.seen.add(key)
            self.times.append(now)
        return len(self.seen) >= self.count


class CountReaches(Expectation):
    """CountReaches: the class ``cls`` counts at least ``n`` objects."""

    def __init__(self, cls: str, n: int) -> None:
        super().__init__()
        self.cls = cls
        self.n = n

    def feed(self, etype: str, obj: Obj, counts: Counter[str], now: float) -> bool:
        if counts[self.cls] >= self.n:
            self.times.append(now)
            return True
        return False


class Watcher:
    """Watcher: the objects ``lister`` lists, kept current by a watch in a daemon thread."""

    def __init__(self, lister: Lister, classify: Classify, name: str) -> None:
        self.lister = lister
        self.classify = classify
        self.name = name
        self.objects: dict[tuple[str, str], Obj] = {}
        self.counts: Counter[str] = Counter()
        self.events: Counter[str] = Counter()  # events seen, by namespace
        self.synced = threading.Event()
        self._lock = threading.Lock()
        self._expectations: list[Expectation] = []
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"bench-watch-{name}", daemon=True)

    def start(self, timeout: float = 60) -> None:
        """start lists and begins watching; returns once the list is in."""
        self._thread.start()
        if not self.synced.wait(timeout):
            raise TimeoutError(f"the {self.name} watch did not list within {timeout:.0f}s")

    def stop(self) -> None:
        """stop ends the watch (closing its connection) and the thread."""
        self._stop.set()
        response = self._response
        if response is not None:
            # Closing a stream another thread reads: whatever it raises, it is closed.
            with contextlib.suppress(Exception):
                response.close()
        self._thread.join(timeout=5)

    def expect(self, expectation: E) -> E:
        """expect registers ``expectation`` (before the call it waits on) and returns it; one
        already met by the current counts is done at once."""
        with self._lock:
            if isinstance(expectation, CountReaches) and expectation.feed(
                "", {}, self.counts, time.monotonic()
            ):
                expectation.done.set()
            else:
                self._expectations.append(expectation)
        return expectation

    def forget(self, expectation: Expectation) -> None:
        """forget drops an expectation that timed out."""
        with self._lock:
            if expectation in self._expectations:
                self._expectations.remove(expectation)

    def snapshot(self) -> list[Obj]:
        """snapshot: the objects now (shared dicts: read them, do not change them)."""
        with self._lock:
            return list(self.objects.values())

    def count(self, cls: str) -> int:
        """count: how many objects are in the class ``cls`` now."""
        with self._lock:
            return self.counts[cls]

    def wait_until(self, probe: Callable[[Watcher], bool], timeout: float, what: str) -> None:
        """wait_until polls ``probe`` until true: for waits that are not measured (teardown)."""
        deadline = time.monotonic() + timeout
        while not probe(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.05)

    # ---- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self._list()
                rv = self._watch(rv)
            except Exception:
                if self._stop.is_set():
                    return
                rv = ""  # a broken stream or a 410 Gone: list again
                time.sleep(0.5)

    def _list(self) -> str:
        objects: dict[tuple[str, str], Obj] = {}
        token = None
        while True:
            resp = self.lister(limit=500, _continue=token, _preload_content=False)
            page = json.loads(resp.data)
            for obj in page.get("items") or []:
                objects[key_of(obj)] = obj
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                rv: str = page["metadata"]["resourceVersion"]
                break
        with self._lock:
            self.objects = objects
            self.counts = Counter(c for obj in objects.values() for c in self.classify(obj))
        self.synced.set()
        return rv

    def _watch(self, rv: str) -> str:
        self._response = self.lister(
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=3600,
            _preload_content=False,
        )
        for line in lines(self._response):
            event = json.loads(line)
            now = time.monotonic()
            etype, obj = event["type"], event["object"]
            if etype == "ERROR":
                raise RuntimeError(f"watch error: {obj.get('message')}")
            rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
            if etype != "BOOKMARK":
                self._apply(etype, obj, now)
        return rv

    def _apply(self, etype: str, obj: Obj, now: float) -> None:
        key = key_of(obj)
        with self._lock:
            old = self.objects.get(key)
            if old is not None:
                self.counts.subtract(self.classify(old))
            if etype == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = obj
                self.counts.update(self.classify(obj))
            self.events[key[0]] += 1
            for e in list(self._expectations):
                if e.feed(etype, obj, self.counts, now):
                    self._expectations.remove(e)
                    e.done.set()


def lines(response: Any) -> Iterator[bytes]:
    """lines: the newline-separated JSON events of a watch response, as they arrive."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        *complete, buffer = (buffer + chunk).split(b"\n")
        for line in complete:
            if line.strip():
                yield line
