"""A pass's creates in batches that grow as they succeed (aitj.controller.executor.fanout): the
sizes, every item called once, and a failed batch as the last one sent."""

from __future__ import annotations

import threading

import pytest

from aitj.controller.executor.fanout import Fanout, slow_start


@pytest.mark.parametrize(
    ("count", "sizes"),
    [
        (0, []),
        (1, [1]),
        (2, [1, 1]),
        (3, [1, 2]),
        (8, [1, 2, 4, 1]),
        (80, [1, 2, 4, 8, 16, 32, 17]),
        (100, [1, 2, 4, 8, 16, 32, 37]),
    ],
)
def test_batches_double_and_the_last_is_what_is_left(count: int, sizes: list[int]) -> None:
    assert slow_start(count) == sizes


def test_every_item_is_called_once_batch_after_batch() -> None:
    called: list[int] = []
    lock = threading.Lock()

    def call(item: int) -> None:
        with lock:
            called.append(item)

    Fanout(4).each(list(range(20)), call)
    assert sorted(called) == list(range(20))
    # batch by batch: each batch's items come after every item of the batches before it
    assert set(called[:3]) == {0, 1, 2} and set(called[3:7]) == {3, 4, 5, 6}


def test_a_batch_with_a_failure_is_the_last_and_its_first_failure_is_raised() -> None:
    called: list[int] = []

    def call(item: int) -> None:
        called.append(item)
        if item in (4, 5):  # both in the third batch (3..6)
            raise ValueError(f"refused {item}")

    with pytest.raises(ValueError, match="refused 4"):
        Fanout(4).each(list(range(20)), call)
    assert sorted(called) == [0, 1, 2, 3, 4, 5, 6]  # the third batch ran whole; nothing after it


def test_a_first_create_refused_costs_one_call() -> None:
    called: list[int] = []

    def call(item: int) -> None:
        called.append(item)
        raise PermissionError("quota")

    with pytest.raises(PermissionError):
        Fanout(4).each(list(range(8)), call)
    assert called == [0]
