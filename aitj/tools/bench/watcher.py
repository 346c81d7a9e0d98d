"""The harness's own watch (``aitj.tools.listwatch``: a list, then a watch from its
resourceVersion, in a thread), with counts and expectations.

Every latency ends on this watch: an expectation registered before the harness's API call is
fulfilled in the watch thread, stamped with the monotonic clock the moment the event is
decoded, so a slow main thread does not lengthen a measurement.

A ``classify`` function puts each object in classes ("bench/Running"); the watcher keeps a
count per class, so "all 1,000 pods Running" is a comparison, not a scan.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from typing import TypeVar

from aitj.tools.listwatch import Key, Lister, ListWatch, Obj, key_of

Classify = Callable[[Obj], tuple[str, ...]]
E = TypeVar("E", bound="Expectation")


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


class Watcher(ListWatch):
    """Watcher: the objects ``lister`` lists, kept current by a watch in a daemon thread."""

    watch_seconds = 3600

    def __init__(self, lister: Lister, classify: Classify, name: str) -> None:
        super().__init__(lister, name)
        self.classify = classify
        self.objects: dict[Key, Obj] = {}
        self.counts: Counter[str] = Counter()
        self.events: Counter[str] = Counter()  # events seen, by namespace
        self._lock = threading.Lock()
        self._expectations: list[Expectation] = []

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

    # ---- the watch thread's side ---------------------------------------------------------------
    def listed(self, objects: dict[Key, Obj], rv: str, now: float) -> None:
        with self._lock:
            self.objects = objects
            self.counts = Counter(c for obj in objects.values() for c in self.classify(obj))

    def changed(self, etype: str, obj: Obj, now: float) -> None:
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
