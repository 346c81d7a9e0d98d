"""The collector's callback: a full collection's survivors frozen, all thawed once in a while."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from aitj.controller import gcpauses


@pytest.fixture
def clock() -> Iterator[list[float]]:
    gc.unfreeze()
    now = [100.0]
    yield now
    gc.unfreeze()


def test_survivors_of_a_full_collection_are_frozen(clock: list[float]) -> None:
    callback = gcpauses.install(whole_every=60.0)
    callback.clock = lambda: clock[0]
    try:
        kept = [[i] for i in range(1000)]  # containers: the collector tracks them
        gc.collect()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gcpauses.uninstall(callback)
    assert gc.get_freeze_count() == 0


def test_younger_collections_freeze_nothing(clock: list[float]) -> None:
    callback = gcpauses.FreezeAfterFull(60.0, clock=lambda: clock[0])
    callback("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
    callback("start", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() == 0


def test_everything_is_thawed_once_per_period(clock: list[float]) -> None:
    callback = gcpauses.FreezeAfterFull(60.0, clock=lambda: clock[0])
    full = {"generation": gcpauses.OLDEST, "collected": 0, "uncollectable": 0}
    callback("stop", full)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    clock[0] += 59.0
    callback("stop", full)  # within the period: frozen still (and whatever came since)
    assert gc.get_freeze_count() >= frozen
    clock[0] += 1.0
    callback("stop", full)  # the period is over: all thawed, so the next full looks at all
    assert gc.get_freeze_count() == 0
    clock[0] += 1.0
    callback("stop", full)  # and after that one, frozen again
    assert gc.get_freeze_count() > 0
