"""A feature's part of a live job's Plan: what it is given (``Context``), what it gives back
(``Part``), and how the parts make one Plan (``combine``).

Pure. For a job that goes on, ``plan`` (aitj.core.planner.core) builds one Context per pass
(aitj.core.planner.context.build) and hands it to every feature's ``part(ctx)``, in the fixed
order of ``core.PARTS``. A part reads the Context and returns the steps it fills, its edit of
the status and when it wants the job planned again; it sees no other part's result. So a new
feature is a module with a ``part``, its tests, and one line in ``core.PARTS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from aitj.core.api import Job, JobStatus
from aitj.core.observed import NodeView
from aitj.core.planner.discovery_texts import Texts
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.quick import quick_init
from aitj.core.planner.scaling.operation import Scaling
from aitj.core.planner.shortfall import Shortfall
from aitj.core.planner.status import Condition
from aitj.core.planner.survey import Survey
from aitj.core.planner.types import Gang, HostLists, Owned, Plan, RestartRecord, Settings, SshKeys


@quick_init
@dataclass(frozen=True)
class Context:
    """Context: what every part of a live job's pass is given. First what ``plan`` was given
    and what the assessment made of it; then the facts several parts share, computed once
    (``context.build``), so that no part recomputes, or worse, decides again, another's."""

    job: Job
    prev: JobStatus  # the status the pass started from
    found: Survey  # every index's verdict (the assessment's survey)
    scale: Scaling  # the scale operations, as the assessment settled them
    now: datetime
    owned: Owned | None  # the job's own objects the cache holds (None: not observed)
    foreign: Owned  # objects under the job's names held by another (aitj.core.planner.objects)
    keys: SshKeys | None  # a key pair for a missing ssh Secret
    settings: Settings
    nodes: Mapping[str, NodeView]
    condition: Condition  # the condition the job is in after this pass (its phase)
    started: datetime | None  # when the job first ran: ``now`` in the pass it starts running
    records: tuple[RestartRecord, ...]  # the restarts this pass records (late ones first)
    ledger: Ledger  # the restart ledger this pass writes: ``records`` marked, pruned
    shortfalls: tuple[Shortfall, ...]  # the slots' shortfalls: backoff, budget, exclusion
    lists: HostLists | None  # plugin.discovery's lists (None without it)
    gang: Gang | None  # the native gang this pass's new pods join (None: not gang-scheduled)
    texts: Texts | None = None  # the discovery texts the job's Memo keeps (hostfiles.part)

    @property
    def joining(self) -> frozenset[tuple[str, int]]:
        """joining: the scale-out slots not yet in the job (aitj.core.planner.scaling)."""
        return self.scale.shape.joining


def unchanged(status: JobStatus) -> JobStatus:
    """unchanged: the status edit of a part that writes none of the status."""
    return status


# The steps the combiner makes itself: the status, from the parts' edits, and the wake-up,
# from their wakes. A part's plan leaves them unset.
_COMBINED = ("status", "requeue_after")

# The plan of a part that fills no step: one shared, frozen Plan, which ``combine`` skips
# without looking at its fields (most parts of most passes fill none).
NOTHING = Plan()

# The Plan's steps that are tuples (the parts' one after the other), and those that take one
# value (set by one part at most), worked out once: ``combine`` reads only these.
_TUPLES = tuple(f.name for f in fields(Plan) if f.default == ())
_TUPLE_SET = frozenset(_TUPLES)
_SINGLES = tuple(f.name for f in fields(Plan) if f.default != () and f.name not in _COMBINED)


def steps(**given: Any) -> Plan:
    """steps: ``Plan(**given)``, or ``NOTHING`` when it fills no step (every tuple empty,
    every other value None): the same Plan to ``combine``, which skips it unread. A part
    whose steps are mostly empty builds its plan with it."""
    for name, value in given.items():
        if value if name in _TUPLE_SET else value is not None:
            return Plan(**given)
    return NOTHING


@quick_init
@dataclass(frozen=True)
class Part:
    """Part: one feature's share of a live job's Plan. ``plan``: the steps it fills (never
    ``status`` nor ``requeue_after``); ``edit``: its change to the status (the fields it owns),
    applied after the edits of the parts before it; ``wake``: seconds after which it wants the
    job planned again even if nothing changes. The default is a part that does nothing."""

    plan: Plan = NOTHING
    edit: Callable[[JobStatus], JobStatus] = unchanged
    wake: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.plan is NOTHING:
            return
        taken = [name for name in _COMBINED if getattr(self.plan, name) is not None]
        if taken:
            raise ValueError(f"a part's plan sets {', '.join(taken)}: the combiner makes it")


def combine(prev: JobStatus, parts: Sequence[Part]) -> Plan:
    """combine: one Plan from the parts, in their order. A step that is a tuple is the parts'
    tuples one after the other; a step that takes one value (the discovery ConfigMap, the
    PodGroup to rewrite, the host list) is set by one part at most, else ValueError. A pod's
    finalizer is released once however many parts name it. The status is ``prev`` with every
    part's edit applied in order (None: unchanged); the job is planned again at the soonest
    wake."""
    steps = _steps(parts)
    status = prev
    for p in parts:
        status = p.edit(status)
    if status != prev:
        steps["status"] = status
    wakes = [w for p in parts for w in p.wake]
    if wakes:
        steps["requeue_after"] = min(wakes)
    return Plan(**steps)


def _steps(parts: Sequence[Part]) -> dict[str, Any]:
    """_steps: the steps the parts' plans fill, gathered (``combine``). Only those: a pass of a
    dozen parts fills a few of the Plan's twenty, and reading every step of every part was a
    tenth of a small job's pass."""
    steps: dict[str, Any] = {}
    for plan in [p.plan for p in parts if p.plan is not NOTHING]:
        for name in _TUPLES:
            value = getattr(plan, name)
            if value:
                steps[name] = steps[name] + value if name in steps else value
        for name in _SINGLES:
            value = getattr(plan, name)
            if value is not None:
                if name in steps:
                    given = sum(getattr(p.plan, name) is not None for p in parts)
                    raise ValueError(f"{given} parts set the Plan's {name}, which takes one value")
                steps[name] = value
    if "release" in steps:
        steps["release"] = tuple(dict.fromkeys(steps["release"]))
    return steps
