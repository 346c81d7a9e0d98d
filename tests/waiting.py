"""Polling with a deadline, for end-to-end tests. Deadlines are generous: they bound a hang,
they do not assert speed (speed lives in ``make bench``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | Literal[False] | None], timeout: float, what: str, interval: float = 0.2
) -> T:
    """wait_for returns the first truthy value of probe(), or fails naming what it waited for.
    A probe may answer None or False for "not yet" (``cond and value``), hence the type."""
    deadline = time.monotonic() + timeout
    last = probe()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)
        last = probe()
    return last
