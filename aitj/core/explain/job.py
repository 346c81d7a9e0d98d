"""``explain``: the job as the operator sees it, what its next pass does, and each pod's verdict.

Pure and clock-free. The planner runs once (``plan_and_assessment``): its Plan is the next pass,
and the Assessment it was made from gives every pod's verdict (aitj.core.explain.verdicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from aitj.core.api import Degraded, Job, JobStatus
from aitj.core.explain.model import ConditionView, DegradedView, Explanation, ShortfallView, UnknownPod
from aitj.core.explain.rule_budgets import recovery_lines
from aitj.core.explain.verdicts import Judge, cleanup, foreign, ignored
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import Plan, Settings, SshKeys
from aitj.core.planner.core import plan_and_assessment
from aitj.core.planner.objects import pods_of
from aitj.core.planner.resources import needs_ssh_keys
from aitj.core.planner.types import Owned


def explain(
    job: Job,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    now: datetime,
    pod_name: str | None = None,
    *,
    deleting: bool = False,
    settings: Settings | None = None,
    owned: Owned | None = None,
) -> Explanation:
    """explain: the job, what the next pass does, and each pod's verdict (only ``pod_name``'s
    when given; UnknownPod if the job has no such pod). ``deleting``: the job has a
    deletionTimestamp, for which the operator plans nothing and lets its pods go. ``settings``:
    the operator's (its priority classes and node fault signals, what the cluster serves);
    ``owned``: the job's objects other than pods, as the operator's cache holds them (None:
    not known, and none are planned), so that the next pass is the operator's own."""
    # Only the pods the job made are judged; the planner is handed every labelled pod, as the
    # operator's is, so that what it plans for the others (their finalizer back) is shown.
    mine, strangers = pods_of(job, sorted(pods, key=lambda p: _pod_order(job, p)))
    labelled = [*mine, *strangers]
    status = job.status
    degraded: DegradedView | None = None
    recovery: tuple[str, ...] = ()
    if deleting:
        entries = [ignored(p, nodes) for p in labelled]
        next_pass: tuple[str, ...] = (
            "nothing is planned: the job is being deleted; the operator only releases its pods' finalizer",
        )
    else:
        # A missing ssh Secret is planned with a stand-in key pair: nothing here is sent.
        keys = UNSENT_KEYS if needs_ssh_keys(job, owned, mine) else None
        result, assessment = plan_and_assessment(
            job, labelled, nodes, now, owned=owned, keys=keys, settings=settings or Settings()
        )
        if assessment is None:  # finished (only its cleanup is planned) or suspended (its pods go)
            entries = [cleanup(job, p, nodes, result, str(status.phase)) for p in mine]
        else:
            judge = Judge(job, nodes, assessment.found, result, now)
            entries = [judge.pod(p) for p in mine] + judge.absent(mine)
            degraded = _degraded((result.status or status).degraded)
            recovery = recovery_lines(job, assessment.found.ledger, result, now)
        entries += [foreign(p, nodes, result) for p in strangers]
        next_pass = _next_pass(job, result)
    if pod_name is not None:
        known = [e.name for e in entries]
        entries = [e for e in entries if e.name == pod_name]
        if not entries:
            raise UnknownPod(pod_name, known)
    return Explanation(
        namespace=job.namespace,
        name=job.name,
        phase=str(status.phase) if status.phase else None,
        condition=_condition(status),
        restart_counts=_restart_counts(job, status),
        fault_tolerant=job.spec.fault_tolerant,
        deleting=deleting,
        next_pass=next_pass,
        pods=tuple(entries),
        degraded=degraded,
        recovery=recovery,
    )


# The key pair a plan that would make the ssh Secret is given: the operator makes a real one.
UNSENT_KEYS = SshKeys(
    "-----BEGIN PRIVATE KEY-----\n(made by the operator)\n-----END PRIVATE KEY-----\n",
    "ssh-ed25519 (made by the operator)",
)


def _pod_order(job: Job, p: PodView) -> tuple[int, int, int]:
    """_pod_order: replicas in the spec's order, then by index and generation."""
    return _replica_order(job, p.replica), p.index if p.index is not None else -1, p.generation


def _replica_order(job: Job, replica: str | None) -> int:
    names = [r.name for r in job.spec.replicas]
    return names.index(replica) if replica in names else len(names)


def _condition(status: JobStatus) -> ConditionView | None:
    last = status.current_condition()
    if last is None:
        return None
    return ConditionView(str(last.type or ""), last.reason or "", last.message or "")


def _degraded(d: Degraded | None) -> DegradedView | None:
    """_degraded: ``status.degraded`` as data (None when the status has none)."""
    if d is None or not d.to_json():
        return None
    indices = tuple(
        ShortfallView(
            e.replica or "",
            e.index or 0,
            str(e.cause or ""),
            e.message or "",
            e.since or "",
            e.until or None,
        )
        for e in d.indices or ()
    )
    count = d.count if d.count is not None else len(indices)
    return DegradedView(d.since or "", d.reason or "", d.message or "", count, indices)


def _restart_counts(job: Job, status: JobStatus) -> tuple[tuple[str, int], ...]:
    counts = status.restart_count or {}
    return tuple((r.name, counts.get(r.name, 0)) for r in job.spec.replicas)


def _next_pass(job: Job, result: Plan) -> tuple[str, ...]:
    """_next_pass: the Plan, one line per thing it would do."""
    lines = [*_pod_lines(result), *_status_change(job.status, result.status), *_other_lines(result)]
    if not lines:
        lines.append("nothing: the job is as it should be")
    if result.requeue_after is not None:
        lines.append(
            f"plan again in {result.requeue_after:.0f}s (the next time-based decision) if nothing changes"
        )
    return tuple(lines)


def _pod_lines(result: Plan) -> list[str]:
    """_pod_lines: the Plan's outcome, the objects and pods it makes and deletes, the restarts."""
    lines: list[str] = []
    if (o := result.outcome) is not None:
        lines.append(f"the job ends: {o.phase} ({o.reason}): {o.message}")
    lines += [f"create the job's {m.kind} {m.name} (missing)" for m in result.ensure]
    lines += [
        f"create pod {c.name} ({c.replica} {c.index}, generation {c.generation})" for c in result.creates
    ]
    for d in result.deletes:
        grace = " with grace period 0" if d.grace_period_seconds == 0 else ""
        lines.append(f"delete pod {d.name}{grace}: {d.message}")
    if result.release:
        lines.append(f"release the finalizer of {', '.join(result.release)}")
    lines += [
        f"record a restart of replica {r.replica}: {r.failure.cause} on pod {r.pod}, {r.rule}, "
        f"scope {r.scope}"
        for r in result.restarts
    ]
    return lines


def _other_lines(result: Plan) -> list[str]:
    """_other_lines: the Plan's host list, removes and Events (after its status change)."""
    lines: list[str] = []
    if result.hosts is not None:
        lines.append(f"rewrite the discovery host list: [{' '.join(h.pod for h in result.hosts)}]")
    if result.held:
        lines.append(
            f"leave {', '.join(result.held)} out of the host list until the others of its wave "
            "run (5 s at most: Horovod adds a wave in one reset)"
        )
    if result.list_held is not None:
        lines.append(
            f"keep Horovod's host list as it is ({result.list_held:.1f} s at most: until its ring "
            "re-forms without a dead worker, or for the other deletes of a force delete's call, which "
            "leave it together): a change before that makes horovodrun's driver call a worker that is gone"
        )
    if result.removes:
        lines.append("delete the job's Service (cleanPodPolicy All)")
    lines += [f"event {e.type} {e.reason}: {e.message}" for e in result.restart_events + result.events]
    return lines


def _status_change(prev: JobStatus, new: JobStatus | None) -> list[str]:
    if new is None:
        return []
    lines = []
    before, after = prev.phase, new.phase
    cond = _condition(new)
    if before != after:
        lines.append(f"status: phase {before or '(none)'} -> {after}")
    if cond is not None and _condition(prev) != cond:
        lines.append(f"status: condition {cond.type} ({cond.reason}): {cond.message}")
    counts_before, counts_after = prev.restart_count, new.restart_count
    if counts_before != counts_after and counts_after is not None:
        lines.append("status: RestartCount " + ", ".join(f"{k} {v}" for k, v in counts_after.items()))
    # The rest by their keys in the JSON form: what a reader of the stored status would see change.
    old, written = prev.to_json(), new.to_json()
    shown = {"phase", "conditions", "RestartCount"}
    others = sorted(k for k in set(old) | set(written) if k not in shown and old.get(k) != written.get(k))
    if others:
        lines.append(f"status: also updates {', '.join(others)}")
    return lines
