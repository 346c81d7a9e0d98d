"""Where a pass's time went, from the watch event that kicked it to its pods' creates answered
(issue 26: the recovery latency's tail in one large job, docs/bench.md "One large job").

A few wall-clock stamps per pass (``time.time``: a harness on the same machine dates its delete
and the replacement's ADDED event with the same clock), kept in the job's ``Trace`` and logged
at debug level (``aitj run --log-level debug``) for each pass that created pods, as ms between
the stages: the informer's thread reading the event that woke the loop (``read``), the loop
taking that batch (``drained``), the job kicked for it (``kicked``), the pass begun (after any
wait for the job's pace, its backoff or its pass in flight: ``started``), the snapshot, triage
and plan done (``planned``), the pass thread begun on the calls (``began``), the first pod's
create answered (``created``); with every kick's event read (``reads``: a kick during the pass
in flight is the next pass's) and the executor's steps in ms (``steps``). Every pass that
reaches the executor logs one (``pods=0``: it created none). ``hack/recoverycost.py`` splits
each recovery with them. Stamps cost a clock read each; the line is not rendered at info.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from dataclasses import dataclass, field

from aitj.controller.logs import log

now = time.time


@dataclass
class Handing:
    """Handing: the batch of watch events the loop is handing to the cache now (set around the
    sink's call by ``Informer._drain``, on the loop only): when the informer's thread read the
    event that woke the loop, and when the loop took the batch (0: no batch, a timer's kick)."""

    read: float = 0.0
    drained: float = 0.0


HANDING = Handing()
_STEPS = threading.local()  # the running pass thread's steps: (name, ms) (``Trace.began``)


def step(name: str, began: float) -> None:
    """step: the executor's step ``name``, begun at ``began``, is over (on a pass thread)."""
    steps = getattr(_STEPS, "steps", None)
    if steps is not None:
        steps.append(f"{name}:{1000 * (now() - began):.1f}")


def begin() -> list[str]:
    """begin: the steps of the pass this thread begins to carry out are kept in the list."""
    _STEPS.steps = []
    return _STEPS.steps  # type: ignore[no-any-return]


def _collections() -> tuple[int, ...]:
    return tuple(s["collections"] for s in gc.get_stats())


@dataclass
class Trace:
    """Trace: one pass's stamps (0: not reached), from the first kick after the last pass began."""

    read: float = 0.0
    drained: float = 0.0
    kicked: float = 0.0
    reads: list[float] = field(default_factory=list)  # each kick's event read (a timer's: the kick)
    busy: bool = False  # a pass of the job was in flight when it was kicked
    paced: bool = False  # the pass waited for the job's pace (PACED_PLAN_SECONDS)
    started: float = 0.0
    planned: float = 0.0
    plan_cpu: float = 0.0
    began: float = 0.0
    gcs: tuple[int, ...] = field(default_factory=tuple)  # collections per generation when kicked
    steps: list[str] = field(default_factory=list)  # the executor's steps and their ms

    def kick(self, busy: bool) -> None:
        """kick: the job is kicked; the first kick since the last pass began is this pass's
        (``reads``: when each kick's event was read, up to 16)."""
        if len(self.reads) < 16:
            self.reads.append(HANDING.read or now())
        if self.kicked:
            return
        self.read, self.drained = HANDING.read, HANDING.drained
        self.kicked, self.busy, self.gcs = now(), busy, _collections()

    def start(self) -> bool:
        """start: the pass begins; True when it waited for its job's pace (counted)."""
        if not self.kicked:  # begun by no kick of its own (one more pass after one in flight)
            self.kicked, self.gcs = now(), _collections()
        self.started = now()
        return self.paced

    def logged(self, namespace: str, job: str, created: float, pods: int, status: bool) -> None:
        """logged: the debug line of a pass whose first create was answered at ``created``
        (``pods`` 0: a pass that created none, ``created`` when its calls ended)."""
        if not log.is_enabled_for(logging.DEBUG):  # at info: not even its fields are made
            return
        read = self.read or self.kicked
        log.debug(
            "pass timed",
            namespace=namespace,
            job=job,
            pods=pods,
            read=round(read, 4),
            reads=",".join(f"{r:.4f}" for r in self.reads),
            started=round(self.started, 4),
            created=round(created, 4),
            ended=round(now(), 4),
            status=status,
            steps=",".join(self.steps),
            to_loop_ms=_ms(read, self.drained or read),
            to_kick_ms=_ms(self.drained or read, self.kicked),
            to_start_ms=_ms(self.kicked, self.started),
            plan_ms=_ms(self.started, self.planned),
            plan_cpu_ms=round(1000 * self.plan_cpu, 2),
            to_thread_ms=_ms(self.planned, self.began),
            create_ms=_ms(self.began, created),
            busy=self.busy,
            paced=self.paced,
            gcs="/".join(str(b - a) for a, b in zip(self.gcs, _collections(), strict=False)),
        )


def _ms(a: float, b: float) -> float:
    return round(1000 * (b - a), 2) if a and b else -1.0
