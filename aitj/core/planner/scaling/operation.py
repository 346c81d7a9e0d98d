"""A scale operation as the job's status keeps it (``status.scaling.<r>``), the index sets, and
what a pass makes of the operations (``Scaling``).

Pure. The status form is read defensively: anything unreadable is no operation.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from aitj.core.api import MAX_REPLICAS, JobStatus, ReplicaSpec, ScaleOperation, ScaleOperationStatus
from aitj.core.planner.quick import once, quick_init
from aitj.core.planner.survey import Shape
from aitj.core.planner.types import ReplicasPatch
from aitj.core.wire import format_time, parse_time

# scaleHistory[].reason
SUCCEEDED = "ScaleSucceeded"
TIMED_OUT = "ScaleTimeout"
FAILED = "ScaleFailed"
CANCELLED = "ScaleCancelled"


@dataclass(frozen=True)
class Op:
    """Op: one scale operation of one replica, as kept in ``status.scaling.<replica>``.

    ``indices``: added (scaleout, rollback) or leaving (scalein). ``deadline``: when a
    scale-out is rolled back, or when a scale-in's pods are deleted. ``draining``: scale-in
    pods out of the host list, kept alive until the deadline. ``reason``/``message``: why a
    rollback happened."""

    replica: str
    operation: ScaleOperation
    version: int
    generation: int
    source: int  # replicas before ("from")
    target: int  # replicas asked for ("to")
    indices: tuple[int, ...]
    started: datetime
    deadline: datetime
    pods: tuple[str, ...] = ()
    draining: tuple[str, ...] = ()
    reason: str = ""
    message: str = ""

    def to_status(self) -> ScaleOperationStatus:
        """to_status: the operation as ``status.scaling.<replica>`` keeps it."""
        return ScaleOperationStatus(
            operation=self.operation,
            version=self.version,
            generation=self.generation,
            source=self.source,
            target=self.target,
            indices=self.indices,
            pods=self.pods,
            started=format_time(self.started),
            deadline=format_time(self.deadline),
            draining=self.draining or None,
            reason=self.reason or None,
            message=self.message or None,
        )

    @classmethod
    def from_status(cls, replica: str, value: ScaleOperationStatus) -> Op | None:
        """from_status reads ``status.scaling.<replica>``; anything unreadable is no operation."""
        started, deadline = parse_time(value.started), parse_time(value.deadline)
        numbers = [n for n in (value.version, value.generation, value.source, value.target) if n is not None]
        if value.operation is None or started is None or deadline is None or len(numbers) != 4:
            return None
        if value.indices is None or not all(i >= 0 for i in value.indices):
            return None
        version, generation, source, target = numbers
        return cls(
            replica=replica,
            operation=value.operation,
            version=version,
            generation=generation,
            source=source,
            target=target,
            indices=tuple(sorted(set(value.indices))),
            started=started,
            deadline=deadline,
            pods=value.pods or (),
            draining=value.draining or (),
            reason=value.reason or "",
            message=value.message or "",
        )


class Kind(enum.Enum):
    """Kind: what happened to an operation in this pass."""

    BEGAN = "began"
    SUCCEEDED = "succeeded"
    ROLLED_BACK = "rolledback"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Happening:
    """Happening: an operation began, finished, was rolled back or was replaced by an edit
    (``by``: the replicas the edit asked for)."""

    kind: Kind
    op: Op
    by: int | None = None


@quick_init
@dataclass(frozen=True)
class ReplicaScale:
    """ReplicaScale: one replica in this pass. ``current``: its current indices after the
    pass; ``slots``: the indices surveyed; ``joining``: slots kept out of the host list;
    ``keep``: scale-in pods kept alive out of the list; ``op``: in flight after the pass."""

    replica: ReplicaSpec
    current: tuple[int, ...]
    slots: tuple[int, ...]
    joining: tuple[int, ...] = ()
    keep: tuple[str, ...] = ()
    op: Op | None = None


@quick_init
@dataclass(frozen=True)
class Scaling:
    """Scaling: every replica's ReplicaScale, what happened, and the rollback spec patches."""

    replicas: tuple[ReplicaScale, ...]
    happenings: tuple[Happening, ...] = ()
    patches: tuple[ReplicasPatch, ...] = ()

    @once
    def shape(self) -> Shape:
        """shape: what the survey needs: slots per replica, pods kept, joining slots. Made once
        per Scaling (it is frozen): a pass asks for it four times."""
        return Shape(
            indices={rs.replica.name: rs.slots for rs in self.replicas},
            keep=frozenset(n for rs in self.replicas for n in rs.keep),
            joining=frozenset((rs.replica.name, i) for rs in self.replicas for i in rs.joining),
        )

    @property
    def ops(self) -> tuple[Op, ...]:
        """ops: the operations in flight after this pass, in replica order."""
        return tuple(rs.op for rs in self.replicas if rs.op is not None)


# ---------------------------------------------------------------------------------------------
# Index sets


def current_indices(status: JobStatus, replica: str) -> tuple[int, ...] | None:
    """current_indices: the replica's current indices from status (None: not recorded yet)."""
    count = (status.current_replicas or {}).get(replica)
    if count is None or not 0 <= count <= MAX_REPLICAS:
        return None
    vacant = set((status.vacant_indices or {}).get(replica) or ())
    if not vacant:
        return _ranges(count)  # what the loop below makes with none vacant, made once
    out: list[int] = []
    i = 0
    while len(out) < count:
        if i not in vacant:
            out.append(i)
        i += 1
    return tuple(out)


def vacant_indices(current: Sequence[int]) -> list[int]:
    """vacant_indices: the indices below the highest current one that are not current."""
    if tuple(current) == _ranges(len(current)):
        return []  # most jobs, every pass: told in C without a set of a large job's indices
    have = set(current)
    top = max(current, default=0)
    if len(have) == top + 1 and min(current, default=0) >= 0:
        return []  # every index up to the highest is current (most jobs): none to look for
    return [i for i in range(top) if i not in have]


# A job's indices are 0 .. n-1 every pass but while it scales or a failure stands: the tuple is
# made once per n, and compared with (issue 26: a set of 4,096 indices was 0.4 ms a pass).
@functools.lru_cache(maxsize=64)
def _ranges(n: int) -> tuple[int, ...]:
    """_ranges: ``tuple(range(n))``."""
    return tuple(range(n))
