"""Shorter pauses of Python's cyclic garbage collector in the operator.

CPython's collector stops the process while it looks at every object of the generation it
collects. Its full collections (the oldest generation) come when the objects promoted there
since the last one reach a quarter of those it kept, and look at all of them: in an operator
holding 1,000 pods' views, caches and the planners' memos, a full collection took 100 to 230 ms
(measured with ``gc.callbacks`` on the local control plane, 125 jobs of 8; 140 to 165 ms of
CPU), and a recovery that arrived meanwhile waited that long: the slowest of 400 recoveries
(246 ms against a p50 of 58 ms) was the one that met such a pause.

Most of what a full collection looks at has survived the ones before and will survive this
one: the modules, the informers' caches, the jobs' memos. So after each full collection its
survivors are frozen (``gc.freeze``: moved where no collection looks), and the next looks only
at what came since, about a quarter of the heap: in the same runs, once the first was frozen,
full collections took 21 to 38 ms of CPU. Reference counting still frees frozen objects as
soon as nothing refers to them; only a frozen object that later becomes part of an unreachable
cycle would be kept, so once an hour the frozen objects are thawed and the next full collection
looks at everything again.

The frequency of collections is left as CPython sets it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

WHOLE_EVERY_SECONDS = 3600.0
OLDEST = 2  # CPython's generations are 0, 1 and 2


class FreezeAfterFull:
    """FreezeAfterFull: the ``gc.callbacks`` entry that freezes a full collection's survivors,
    and thaws them all once every ``whole_every`` seconds (``clock``'s)."""

    def __init__(
        self, whole_every: float = WHOLE_EVERY_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.whole_every = whole_every
        self.clock = clock
        self.thawed_at = clock()

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != OLDEST:
            return
        now = self.clock()
        if now - self.thawed_at >= self.whole_every:
            # The next full collection looks at every object once, cycles among old ones too.
            self.thawed_at = now
            gc.unfreeze()
        else:
            gc.freeze()


def install(whole_every: float = WHOLE_EVERY_SECONDS) -> FreezeAfterFull:
    """install adds the callback to this process's collector (once per process: ``aitj run``)."""
    callback = FreezeAfterFull(whole_every)
    gc.callbacks.append(callback)
    return callback


def uninstall(callback: FreezeAfterFull) -> None:
    """uninstall removes ``callback`` and thaws what it froze."""
    gc.callbacks.remove(callback)
    gc.unfreeze()
