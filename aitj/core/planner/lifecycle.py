"""The passes that are not ``plan``: a job being deleted, a spec the model refuses, a
namespace being deleted, the pods of a job that is gone. Each is a Plan too, so the
controller decides none of it and the executor carries all of it out the same way.

Pure. ``triage`` comes first in every pass: it returns either the parsed Job to ``plan``, or
the Plan that ends the pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aitj.core.api import FINISHED_PHASES, InvalidJob, Job, Phase, parse_job, parse_phase
from aitj.core.observed import PodView
from aitj.core.planner.status import Condition, advance
from aitj.core.planner.types import Event, Outcome, Plan
from aitj.core.wire import format_time

REASON_INVALID = "InvalidSpec"


@dataclass(frozen=True)
class JobRef:
    """JobRef: what names a job whose spec may not parse, with the version its plan was made
    from (the executor's status write tests it). An ``api.Job`` has the same four fields."""

    namespace: str
    name: str
    uid: str
    resource_version: str = ""


def job_ref(body: Mapping[str, Any]) -> JobRef:
    """job_ref: the JobRef of a job's raw body."""
    meta = body.get("metadata") or {}
    return JobRef(
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
        str(meta.get("resourceVersion") or ""),
    )


def phase_of(status: Mapping[str, Any] | None) -> Phase | None:
    """phase_of: the phase a status records, None when it records none we know."""
    return parse_phase((status or {}).get("phase"))


def finished(job: Job) -> bool:
    """finished: the job's status says Succeeded, Failed or Timeout: only cleanup is left."""
    return phase_of(job.status) in FINISHED_PHASES


def triage(body: Mapping[str, Any], pods: Sequence[PodView], now: datetime) -> Job | Plan:
    """triage: the Job to plan, or the Plan of a job that is not planned. Being deleted
    (foreground): let its tracked pods go and plan nothing else, or the pods garbage
    collection removes would look lost and be replaced. A spec the apiserver accepted but
    the model refuses: ``plan_invalid``."""
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return release_tracked(pods)
    try:
        return parse_job(body)
    except InvalidJob as e:
        return plan_invalid(body, str(e), now)


def plan_invalid(body: Mapping[str, Any], message: str, now: datetime) -> Plan:
    """plan_invalid: record, once, that the job's spec cannot be run and why: phase Failed, an
    InvalidSpec condition, a Warning Event. Nothing when the last condition already says so."""
    status = dict(body.get("status") or {})
    history = status.get("conditions") or []
    conditions = advance(history, Condition(Phase.FAILED, REASON_INVALID, message), format_time(now))
    if conditions == history:
        return Plan()
    status.update(phase=Phase.FAILED.value, conditions=conditions)
    # An Outcome like any job that ends: counted in aitj_jobs_finished_total (reason InvalidSpec).
    return Plan(
        status=status,
        events=(Event("Warning", REASON_INVALID, message),),
        outcome=Outcome(Phase.FAILED, REASON_INVALID, message),
    )


def release_tracked(pods: Sequence[PodView]) -> Plan:
    """release_tracked: let every pod that carries the operator's finalizer go. For a job being
    deleted, and for one whose namespace is being deleted (nothing can be created there, so
    none of its pods can be replaced)."""
    return Plan(release=tuple(p.name for p in pods if p.tracked))


def plan_orphans(pods: Sequence[PodView]) -> Plan:
    """plan_orphans: the pods of a job no longer in the cache that are being deleted and still
    tracked: release them, once the controller has confirmed the job is gone (the cache may
    only be late). Pods not being deleted are left for garbage collection to start on."""
    return Plan(release=tuple(p.name for p in pods if p.deleting and p.tracked))
