"""Fanout: the pods of one pass created several at once, in batches that grow as they succeed.

Why: a pass that replaces the 8 trainers of a lost node, or brings a job up, sent its creates
one after the other, so the last pod waited for every create before it (a create is 5 to
20 ms on a loaded apiserver: F3 and F10 in docs/bench.md). The Job controller creates in
parallel, in batches of 1, 2, 4, ... (``slowStartBatch`` in pkg/controller/job): a first call
that is refused (a quota, an admission policy, a namespace being deleted) costs one call, not
one per pod, and a job whose creates go through is up in a few round trips.

The batches run on a pool of their own (``WORKERS`` threads, shared by every pass), so a pass's
thread waits for its batch instead of making the calls itself. What each call records (``Sent``,
``Written``, metrics, log lines) is appended from the pool's threads: list appends and
prometheus counters are safe there.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# Calls in flight for all passes together. With the passes' own 16 threads, 32: the API
# client's connection pool (kubeclient.api_client), so no connection is opened only to be
# dropped.
WORKERS = 16


def slow_start(count: int) -> list[int]:
    """slow_start: the sizes of the batches ``count`` calls are sent in: 1, then twice the
    last, the last batch what is left."""
    sizes: list[int] = []
    size = 1
    while count > 0:
        sizes.append(min(size, count))
        count -= sizes[-1]
        size *= 2
    return sizes


class Fanout:
    """Fanout sends calls batch by batch (``slow_start``), a batch's calls at once."""

    def __init__(self, workers: int = WORKERS) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="create")

    def each(self, items: Sequence[T], call: Callable[[T], None]) -> None:
        """each: ``call(item)`` for every item, batch by batch; after a batch in which a call
        raised, no other batch is sent and the first of its exceptions (in the items' order)
        is raised. A batch of one is called in this thread."""
        start = 0
        for size in slow_start(len(items)):
            batch = items[start : start + size]
            start += size
            if size == 1:
                call(batch[0])
                continue
            futures = [self.pool.submit(call, item) for item in batch]
            errors = [f.exception() for f in futures]  # waits for each
            first = next((e for e in errors if e is not None), None)
            if first is not None:
                raise first
