"""Each pod's verdict: what the next pass does with it, and why (``aitj explain``).

Pure. Everything here is read back from the planner's own Assessment and Plan, not decided
again: the survey gives each index's verdict (restart, failure that stands, replaced, gated),
``policy.decide``'s trace (carried by the RestartDecision or Fail it returned) gives the rule-by-rule
reasons, and the survey's RetireReason says why a pod is replaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from aitj.core.api import FINISHED_PHASES, Job, Phase, Policy, ReplicaSpec, ReplicaType
from aitj.core.explain.model import PodExplanation, RuleEntry, RuleOutcome, Verdict
from aitj.core.observed import KUBELET_EVICTED, NodeView, PodView
from aitj.core.planner import Plan, RestartRecord, drain_checkpoint
from aitj.core.planner.survey import Retiree, RetireReason, Slot, State, Survey
from aitj.core.policy import Decision, Fail, FailReason, Failure, FailureKind, RuleCheck, RuleWhy
from aitj.core.wire import format_time

# ---------------------------------------------------------------------------------------------
# One pod: what the operator sees


def _seen(p: PodView, nodes: Mapping[str, NodeView]) -> dict[str, Any]:
    """_seen: the observed fields of a PodExplanation."""
    node_ready = None
    if p.node_name:
        node = nodes.get(p.node_name)
        node_ready = node.ready if node is not None else "gone"
    deletion = None
    if p.deleting:
        started = p.deletion_started
        when = f" at {format_time(started)}" if started is not None else ""
        held = "finalizer held" if p.tracked else "no finalizer"
        deletion = f"being deleted (asked{when}, grace period {p.deletion_grace_seconds}s; {held})"
    disruption = p.disruption
    if disruption is None and p.reason == KUBELET_EVICTED:
        disruption = f"{KUBELET_EVICTED} (kubelet)"
    return {
        "name": p.name,
        "replica": p.replica,
        "index": p.index,
        "generation": p.generation,
        "present": True,
        "phase": p.phase,
        "node": p.node_name,
        "node_ready": node_ready,
        "exit_code": p.exit_code,
        "exit_container": p.exit_container,
        "deletion": deletion,
        "disruption": disruption,
    }


def _absent(name: str, replica: str, index: int, generation: int) -> dict[str, Any]:
    return {
        "name": name,
        "replica": replica,
        "index": index,
        "generation": generation,
        "present": False,
        "phase": None,
        "node": None,
        "node_ready": None,
        "exit_code": None,
        "exit_container": None,
        "deletion": None,
        "disruption": None,
    }


def _entry(
    seen: dict[str, Any],
    verdict: Verdict,
    summary: str,
    failure: Failure | None = None,
    gate: str | None = None,
    rules: tuple[RuleEntry, ...] = (),
    notes: Sequence[str] = (),
) -> PodExplanation:
    return PodExplanation(
        **seen,
        failure=failure.kind.value if failure is not None else None,
        failure_detail=failure.description if failure is not None else None,
        verdict=verdict,
        summary=summary,
        gate=gate,
        rules=rules,
        notes=tuple(notes),
    )


def ignored(p: PodView, nodes: Mapping[str, NodeView]) -> PodExplanation:
    """ignored: a pod of a job being deleted: the operator plans nothing."""
    return _entry(_seen(p, nodes), Verdict.IGNORED, "not judged: the job is being deleted")


def foreign(p: PodView, nodes: Mapping[str, NodeView], result: Plan) -> PodExplanation:
    """foreign: a pod that carries the job's labels but that the job did not make (not its
    controller, or not the name the operator derives: docs/semantics.md section 1). The
    planner counts it for nothing; it only gets the operator's finalizer back."""
    notes = ["its finalizer is released"] if p.name in result.release else []
    summary = "not the job's pod: the job did not make it, it only carries its labels; counts for nothing"
    return _entry(_seen(p, nodes), Verdict.FOREIGN, summary, notes=notes)


def cleanup(job: Job, p: PodView, nodes: Mapping[str, NodeView], result: Plan, phase: str) -> PodExplanation:
    """cleanup: a pod of a job that has finished in ``phase``: only cleanPodPolicy applies; or
    of a suspended job (not finished, spec.suspend): its pods go (aitj.core.planner.suspend)."""
    policy = job.spec.clean_pod_policy
    reason = f"the job has finished ({phase}); cleanPodPolicy {policy}"
    if job.spec.suspend and phase not in FINISHED_PHASES:
        reason = "the job is suspended (spec.suspend): its pods are deleted, no failure counts"
    if any(d.name == p.name for d in result.deletes):
        what = "deleted in the next pass"
    elif p.deleting:
        what = "already being deleted"
    else:
        what = "kept"
    notes = ["its finalizer is released"] if p.name in result.release else []
    summary = f"not judged: {reason}: {what}"
    return _entry(_seen(p, nodes), Verdict.CLEANUP, summary, notes=notes)


# ---------------------------------------------------------------------------------------------
# One pod: the verdict of a live job


class Judge:
    """Judge reads the planner's survey of a live job back pod by pod."""

    def __init__(
        self, job: Job, nodes: Mapping[str, NodeView], found: Survey, result: Plan, now: datetime
    ) -> None:
        self.job = job
        self.now = now
        self.nodes = nodes
        self.found = found
        self.result = result
        self.restarts: dict[str, RestartRecord] = {r.pod: r for r in found.restarts}
        self.retirees: dict[str, Retiree] = {}
        for t in found.retirees:
            self.retirees.setdefault(t.pod.name, t)
        self.slots = {(s.replica.name, s.index): s for s in found.slots}

    def pod(self, p: PodView) -> PodExplanation:
        """pod: the verdict on one observed pod, and where its checkpoint before a drain stands
        when one ran or runs in it (docs/semantics.md section 26)."""
        entry = self._verdict(p)
        r = self._replica(p)
        hook = drain_checkpoint.outcome(r, p, self.now) if r is not None else None
        if hook is None:
            return entry
        return dataclasses.replace(entry, notes=(*entry.notes, f"checkpoint before a drain: {hook[1]}"))

    def _verdict(self, p: PodView) -> PodExplanation:
        seen = _seen(p, self.nodes)
        slot = self.slots.get((p.replica or "", p.index if p.index is not None else -1))
        if p.name in self.restarts:
            return self._restart(seen, self.restarts[p.name])
        if slot is not None and slot.pod is not None and slot.pod.name == p.name:
            if slot.state is State.FAILED:
                return self._fails(seen, slot)
            return self._fine(seen, slot, p)
        if p.name in self.retirees:
            return self._retired(seen, self.retirees[p.name], p, slot)
        return _entry(seen, Verdict.REPLACED, "not judged: the operator does not want this pod")

    def absent(self, pods: Sequence[PodView]) -> list[PodExplanation]:
        """absent: the indices that have no pod to show (never created, vanished, or waiting)."""
        observed = {(p.replica, p.index, p.generation) for p in pods}
        out = []
        for s in self.found.slots:
            r, i = s.replica.name, s.index
            if s.pod is not None or (r, i, s.generation - 1) in observed or (r, i, s.generation) in observed:
                continue
            vanished = next((n for n in self.found.restarts if (n.replica, n.index) == (r, i)), None)
            if vanished is not None:
                out.append(self._restart(_absent(vanished.pod, r, i, s.generation - 1), vanished))
            elif s.state is State.FAILED:
                out.append(self._fails(_absent(s.name, r, i, s.generation), s))
            elif s.state is State.WAITING:
                out.append(self._gated(_absent(s.name, r, i, s.generation), s))
            elif s.state is State.BACKOFF and s.shortfall is not None:
                summary = f"create once its backoff ends: {s.shortfall.message}"
                out.append(_entry(_absent(s.name, r, i, s.generation), Verdict.CREATE, summary))
            else:
                why = (
                    f"its previous pod (generation {s.generation - 1}) was ended by the operator"
                    if s.generation > 0
                    else "the index has never had a pod"
                )
                summary = f"create: no pod yet; the next pass creates it ({why})"
                out.append(_entry(_absent(s.name, r, i, s.generation), Verdict.CREATE, summary))
        return out

    # ---- verdicts --------------------------------------------------------------------------

    def _restart(self, seen: dict[str, Any], new: RestartRecord) -> PodExplanation:
        final = self.slots[(new.replica, new.index)]  # the restarted slot keeps the decision
        r, failure, decision = final.replica, new.failure, final.restart
        assert decision is not None
        if self.job.spec.fault_tolerant:
            summary = f"restart: rule {decision.rule} restarts scope {decision.scope}"
        else:
            summary = f"restart: {decision.rule} restarts scope {decision.scope} (faultTolerant is false)"
        notes = [self._count_note(r)]
        successor = final.name
        if final.state is State.WAITING:
            notes.append(f"replaced by {successor} once every worker index runs (launcher gating)")
        elif final.state is State.BACKOFF and final.shortfall is not None:
            notes.append(f"replaced by {successor} once its backoff ends: {final.shortfall.message}")
        else:
            notes.append(f"replaced by {successor}, created in the next pass")
        if self.result.outcome is not None:
            summary += " (dropped: the job ends in the same pass)"
            notes.append(
                f"the job ends in this pass ({self.result.outcome.phase}): "
                "restarts decided with it are dropped"
            )
        return _entry(seen, Verdict.RESTART, summary, failure, *_reasons(r, failure, decision), notes)

    def _fails(self, seen: dict[str, Any], slot: Slot) -> PodExplanation:
        assert slot.failure is not None and slot.fail is not None
        r = slot.replica
        summary = f"fails ({slot.fail.reason}): {slot.fail.message}"
        notes = [self._count_note(r), self._fail_policy_note(r)]
        reasons = _reasons(r, slot.failure, slot.fail)
        return _entry(seen, Verdict.FAILS, summary, slot.failure, *reasons, notes)

    def _fine(self, seen: dict[str, Any], slot: Slot, p: PodView) -> PodExplanation:
        if slot.state is State.RUNNING:
            return _entry(seen, Verdict.HEALTHY, "healthy: nothing to do")
        if slot.state is State.SUCCEEDED:
            return _entry(seen, Verdict.SUCCEEDED, "succeeded: nothing to do")
        notes = []
        timeout = slot.replica.restart_timeout
        if p.generation > 0 and timeout is not None and p.created is not None:
            due = p.created + timedelta(seconds=timeout)
            notes.append(
                f"a replacement: if it is not Running by {format_time(due)} (restartTimeout {timeout}s), "
                "the restart fails (RestartTimeout)"
            )
        where = f"on node {p.node_name}" if p.node_name else "not scheduled yet"
        return _entry(
            seen, Verdict.PENDING, f"pending ({where}): nothing wrong, waiting for it to run", notes=notes
        )

    def _retired(self, seen: dict[str, Any], t: Retiree, p: PodView, slot: Slot | None) -> PodExplanation:
        failure = None
        notes = []
        if (
            slot is not None
            and slot.pod is None
            and slot.generation == p.generation + 1
            and slot.failure is not None
        ):
            failure = slot.failure
        if t.reason is RetireReason.RESTART_SCOPE:
            for new in self.found.restarts:
                scope = new.scope.value
                if scope == "All" or (scope == "Replica" and new.replica == p.replica):
                    notes.append(f"recreated by the scope {scope} restart for pod {new.pod}")
                    break
            else:
                notes.append("an earlier Replica- or All-scope restart covered it (restart epoch)")
        elif t.reason is RetireReason.RESTART_COUNTED:
            notes.append("its failure was counted by an earlier pass that did not finish: not counted again")
        if slot is not None and slot.state is State.BACKOFF and slot.shortfall is not None:
            notes.append(f"its successor is created once the backoff ends: {slot.shortfall.message}")
        notes.extend(self._deletion_notes(p, t))
        return _entry(seen, Verdict.REPLACED, f"replaced by the operator: {t.text}", failure, notes=notes)

    def _gated(self, seen: dict[str, Any], slot: Slot) -> PodExplanation:
        waiting = [
            f"{s.name} ({s.state.value})"
            for s in self.found.slots
            if s.replica.replica_type is ReplicaType.WORKER and s.state.in_progress
        ]
        summary = f"gated: {slot.replica.name} pods are created only when every worker index runs"
        return _entry(seen, Verdict.GATED, summary, notes=[f"waiting for {', '.join(waiting)}"])

    # ---- reasons ---------------------------------------------------------------------------

    def _count_note(self, r: ReplicaSpec) -> str:
        count = self.found.ledger.replica(r.name).restart_count
        limit = "unlimited" if r.restart_limit is None else str(r.restart_limit)
        return f"RestartCount.{r.name} after the next pass: {count} (restartLimit {limit})"

    def _fail_policy_note(self, r: ReplicaSpec) -> str:
        if r.fail_policy is Policy.NONE:
            return f"failPolicy None of replica {r.name}: a failure that stands does not end the job"
        outcome = self.result.outcome
        if outcome is not None and outcome.phase is Phase.FAILED:
            return (
                f"failPolicy {r.fail_policy} of replica {r.name}: "
                f"the job fails in the next pass ({outcome.reason})"
            )
        return (
            f"failPolicy {r.fail_policy} of replica {r.name} (job failPolicy {self.job.spec.fail_policy}) "
            "is not met yet: the job goes on"
        )

    def _deletion_notes(self, p: PodView, t: Retiree) -> list[str]:
        notes = []
        delete = next((d for d in self.result.deletes if d.name == p.name), None)
        if delete is not None:
            grace = "with grace period 0" if delete.grace_period_seconds == 0 else "with its own grace period"
            notes.append(f"deleted in the next pass {grace}")
        elif p.deleting and t.restart and p.deletion_grace_seconds != 0 and p.deletion_started is not None:
            replica = self._replica(p)
            if replica is not None:
                limit = replica.restart_time_limit
                due = p.deletion_started + timedelta(seconds=limit)
                notes.append(
                    f"force-deleted (grace period 0) at {format_time(due)} if still terminating "
                    f"(restartTimeLimit {limit}s)"
                )
        if p.name in self.result.release:
            notes.append("its finalizer is released")
        return notes

    def _replica(self, p: PodView) -> ReplicaSpec | None:
        return next((r for r in self.job.spec.replicas if r.name == p.replica), None)


def _kind_words(kind: FailureKind) -> str:
    if kind is FailureKind.EXIT_CODE:
        return "exit codes"
    if kind.event is not None:
        return f"exceptional events ({kind.value})"
    return f"failures without an exit code ({kind.value})"


def _reasons(r: ReplicaSpec, failure: Failure, decision: Decision) -> tuple[str, tuple[RuleEntry, ...]]:
    """_reasons: the gate and the rules' steps of the decision the planner made."""
    return _gate(r, failure, decision), rule_entries(decision.trace)


def _gate(r: ReplicaSpec, failure: Failure, decision: Decision) -> str:
    """_gate: the replica restartPolicy's say on this kind of failure (docs/semantics.md 7.1),
    as the decision found it: only NotRestartable means the gate said no."""
    refused = decision.reason if isinstance(decision, Fail) else None
    if refused is FailReason.RESTART_TIMEOUT:
        return "RestartTimeout is the failure of a restart: it is never restarted"
    word = "does not allow" if refused is FailReason.NOT_RESTARTABLE else "allows"
    return (
        f"restartPolicy {r.restart_policy} of replica {r.name} {word} restarting {_kind_words(failure.kind)}"
    )


# What each step of the trace shows as (every RuleWhy is listed).
_OUTCOMES = {
    RuleWhy.FIRES: RuleOutcome.FIRES,
    RuleWhy.OTHER_EXIT_CODE: RuleOutcome.NO_MATCH,
    RuleWhy.NOT_AN_EXIT_CODE: RuleOutcome.NO_MATCH,
    RuleWhy.OTHER_EVENT: RuleOutcome.NO_MATCH,
    RuleWhy.NOT_AN_EVENT: RuleOutcome.NO_MATCH,
    RuleWhy.INACTIVE: RuleOutcome.INACTIVE,
    RuleWhy.BUDGET_SPENT: RuleOutcome.BUDGET_SPENT,
    RuleWhy.EARLIER_RULE_FIRED: RuleOutcome.NOT_TRIED,
    RuleWhy.RESTART_TIMEOUT: RuleOutcome.NOT_TRIED,
    RuleWhy.IGNORED: RuleOutcome.IGNORED,
}


def rule_entries(trace: Sequence[RuleCheck]) -> tuple[RuleEntry, ...]:
    """rule_entries: policy.decide's trace, one RuleEntry per rule."""
    return tuple(RuleEntry(c.rule, str(c.scope), _OUTCOMES[c.why], c.detail) for c in trace)
