"""The Context of a live job's pass: what ``plan`` was given, what the assessment made of it,
and the facts several parts share, computed once (``build``).

Pure. The facts: the condition the job is in after the pass (the live condition, with the
Scaling one a scale operation sets) and when it first ran; the restarts the pass records and
the restart ledger it writes; the slots' shortfalls; plugin.discovery's lists; the native gang.
aitj.core.planner.part says what a part does with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from aitj.core.api import Job, JobStatus, Phase
from aitj.core.observed import NodeView
from aitj.core.planner import gang, hostfiles, rule_budgets, scaling
from aitj.core.planner.discovery_texts import Texts
from aitj.core.planner.part import Context
from aitj.core.planner.quick import quick_init
from aitj.core.planner.status import live_condition
from aitj.core.planner.survey import Survey
from aitj.core.planner.types import HostLists, Owned, Settings, SshKeys


@quick_init
@dataclass(frozen=True)
class Given:
    """Given: plan's inputs about the world beyond the job's pods, for a live job."""

    owned: Owned | None  # the job's own objects (objects.split)
    keys: SshKeys | None
    settings: Settings
    nodes: Mapping[str, NodeView]
    foreign: Owned  # objects under the job's names held by another
    # plugin.discovery's lists: hostfiles.host_lists, or the job's Memo's (the same lists)
    host_lists: Callable[..., HostLists | None] = hostfiles.host_lists
    texts: Texts | None = None  # the job's Memo's discovery texts (None: rendered whole)


def build(
    job: Job,
    prev: JobStatus,
    found: Survey,
    scale: scaling.Scaling,
    started: datetime | None,
    now: datetime,
    given: Given,
) -> Context:
    """build: the Context of a pass of ``job``, which started from ``prev``; ``found``,
    ``scale`` and ``started`` are the assessment's (aitj.core.planner.core.assess)."""
    began, busy = scaling.conditions(job, scale)
    joining = scale.shape.joining
    condition = live_condition(job, found, prev.phase, started is not None, began, busy, joining)
    if condition.type is Phase.RUNNING and started is None:
        started = now
    # What this pass records: restarts earlier passes decided and did not get to record, and its own.
    records = found.ledger.unrecorded() + found.restarts
    return Context(
        job=job,
        prev=prev,
        found=found,
        scale=scale,
        now=now,
        owned=given.owned,
        foreign=given.foreign,
        keys=given.keys,
        settings=given.settings,
        nodes=given.nodes,
        condition=condition,
        started=started,
        records=records,
        ledger=rule_budgets.prune(job, found.ledger.recording(records), now),
        shortfalls=tuple(s.shortfall for s in found.astir if s.shortfall is not None),  # none runs
        lists=given.host_lists(job, found, joining, prev, now),
        gang=gang.plan_gang(job, found, given.owned, given.settings),
        texts=given.texts,
    )
