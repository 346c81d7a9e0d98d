"""The passes that are not ``plan``: a job being deleted, a spec the model refuses, a
namespace being deleted, the pods of a job that is gone. Each is a Plan too, so the
controller decides none of it and the executor carries all of it out the same way.

Pure. ``triage`` comes first in every pass: it returns either the parsed Job to ``plan``, or
the Plan that ends the pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from aitj.core.api import FINISHED_PHASES, InvalidJob, Job, JobStatus, Phase, parse_job, parse_phase
from aitj.core.observed import PodView
from aitj.core.planner.status import Condition, advance_conditions
from aitj.core.planner.types import Event, Outcome, Plan
from aitj.core.wire import format_time, mapping

REASON_INVALID = "InvalidSpec"
# The apiserver's answers to a pod create that no retry can change: it could not decode the pod
# (400) or the pod fails validation (422). Both come from the replica's template, which admission
# of the job does not fully check (docs/semantics.md, "Input the operator cannot run").
FINAL_REFUSALS = frozenset({400, 422})
# Messages are quoted, not trusted to be short (a refused 300 kB annotation is echoed back in
# the apiserver's answer): the condition and the Event keep this much of them.
MAX_MESSAGE = 2048
MAX_REFUSED_FIELDS = 8


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


def phase_of(status: object) -> Phase | None:
    """phase_of: the phase a status as JSON records (a job's raw body's, for the controller),
    None when it records none we know."""
    return parse_phase(mapping(status).get("phase"))


def finished(job: Job) -> bool:
    """finished: the job's status says Succeeded, Failed or Timeout: only cleanup is left."""
    return job.status.phase in FINISHED_PHASES


def triage(body: Mapping[str, Any], pods: Sequence[PodView], now: datetime) -> Job | Plan:
    """triage: the Job to plan, or the Plan of a job that is not planned. Being deleted
    (foreground): let its tracked pods go and plan nothing else, or the pods garbage
    collection removes would look lost and be replaced. A spec the apiserver accepted but
    the model refuses: ``plan_invalid``."""
    if being_deleted(body):
        return release_tracked(pods)
    try:
        return parse_job(body)
    except InvalidJob as e:
        return plan_invalid(body, str(e), now)


def being_deleted(body: Mapping[str, Any]) -> bool:
    """being_deleted: the job has a deletionTimestamp (``triage`` plans it no more)."""
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def plan_invalid(body: Mapping[str, Any], message: str, now: datetime) -> Plan:
    """plan_invalid: record, once, that the job's spec cannot be run and why: phase Failed, an
    InvalidSpec condition, a Warning Event. Nothing when the last condition already says so.
    A message longer than MAX_MESSAGE is cut there, so the status stays small."""
    if len(message) > MAX_MESSAGE:
        message = f"{message[:MAX_MESSAGE]}... ({len(message)} characters)"
    status = JobStatus.from_json(body.get("status"))
    history = status.conditions or ()
    conditions = advance_conditions(
        history, Condition(Phase.FAILED, REASON_INVALID, message), format_time(now)
    )
    if conditions == history:
        return Plan()
    # A failed job runs short of nothing, as any finished one: no degraded state.
    status = status.updated(phase=Phase.FAILED, conditions=conditions, degraded=None)
    # An Outcome like any job that ends: counted in aitj_jobs_finished_total (reason InvalidSpec).
    return Plan(
        status=status,
        events=(Event("Warning", REASON_INVALID, message),),
        outcome=Outcome(Phase.FAILED, REASON_INVALID, message),
    )


@dataclass(frozen=True)
class PodRefusal:
    """PodRefusal: the apiserver refused to create pod ``pod`` of replica ``replica``: the HTTP
    status, its message, and the fields its causes name, as paths in the pod
    (``spec.containers[0].image``)."""

    pod: str
    replica: str
    code: int
    message: str
    fields: tuple[str, ...] = ()


def template_path(replica: str, pod_field: str) -> str:
    """template_path: the job's field a pod's field comes from: ``spec.containers[0].image`` of
    a trainer pod is ``spec.replicaSpecs.trainer.template.spec.containers[0].image``."""
    return (
        f"spec.replicaSpecs.{replica}.template.{pod_field}"
        if pod_field
        else f"spec.replicaSpecs.{replica}.template"
    )


def plan_refused(body: Mapping[str, Any], refusal: PodRefusal, now: datetime) -> Plan | None:
    """plan_refused: a pod create the apiserver refused for good (FINAL_REFUSALS) fails the job
    as an invalid spec, naming the template's fields, instead of retrying a create that can
    never succeed; None for any other refusal (quota, throttling, a server error: retried).
    The Plan asks for one more pass, which finds the job Failed and cleans its pods up."""
    if refusal.code not in FINAL_REFUSALS:
        return None
    named = list(dict.fromkeys(refusal.fields))[:MAX_REFUSED_FIELDS] or [""]
    fields = ", ".join(template_path(refusal.replica, f) for f in named)
    message = (
        f"{fields}: the apiserver refused pod {refusal.pod} of replica {refusal.replica}: {refusal.message}"
    )
    failed = plan_invalid(body, message, now)
    return replace(failed, requeue_after=0.0) if failed.status is not None else failed


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
