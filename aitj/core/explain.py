"""Explain: what the operator sees of a job, and what its next pass would do and why.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it) and clock-free: the
caller passes ``now``. ``aitj explain`` (aitj/cli/explain.py) fetches the job, its pods and the
nodes, and hands them here; nothing here talks to the API, so an explanation can never change
the cluster.

The answer comes from the decision core itself, not from a copy of its rules: ``plan`` gives the
next pass (creates, deletes, status, requeue), the planner's survey gives each index's verdict
(restart, failure that stands, replaced, gated), and ``policy`` (``classify``, ``allows``,
``rule_matches``) gives the rule-by-rule reasons. So the explanation says what the operator would
do, exactly, and also why each ``faultTolerantPolicy`` rule did or did not fire.

``explain(job, pods, nodes, now, pod_name=None) -> Explanation`` builds frozen data (also
serialisable with ``to_json``); ``render`` turns it into text lines.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from aitj.core.api import (
    FINISHED_PHASES,
    FaultTolerantRule,
    InvalidJob,
    Job,
    Phase,
    Policy,
    ReplicaSpec,
    ReplicaType,
)
from aitj.core.observed import KUBELET_EVICTED, NodeView, PodView
from aitj.core.planner import Plan, plan
from aitj.core.planner.core import assess
from aitj.core.planner.survey import NewRestart, Retiree, Slot, State, Survey
from aitj.core.policy import Failure, FailureKind, allows, rule_matches
from aitj.core.wire import format_time


class Verdict(enum.StrEnum):
    """Verdict: what the next pass does with one pod (or one index that has no pod)."""

    HEALTHY = "healthy"  # Running, nothing wrong: nothing to do
    PENDING = "pending"  # on its way to Running, nothing wrong
    SUCCEEDED = "succeeded"  # finished with exit code 0: nothing to do
    RESTART = "restart"  # a failure the policy restarts: the pod is replaced
    FAILS = "fails"  # a failure that stands: the replica's failPolicy judges it
    REPLACED = "replaced"  # the operator retires it (superseded, scope restart, scale-in, ...)
    CREATE = "create"  # an index with no pod: the next pass creates one
    GATED = "gated"  # a master (launcher) index waiting until every worker index runs
    CLEANUP = "cleanup"  # the job has finished: only cleanPodPolicy applies
    IGNORED = "ignored"  # the job is being deleted: the operator plans nothing


class RuleOutcome(enum.StrEnum):
    """RuleOutcome: what one faultTolerantPolicy rule made of a failure."""

    FIRES = "fires"  # the first active rule that names the failure: its scope is restarted
    NO_MATCH = "no match"  # active, but it does not name this exit code or event
    INACTIVE = "inactive"  # the replica restartPolicy does not allow rules of its kind
    NOT_TRIED = "not tried"  # an earlier rule fired
    IGNORED = "ignored"  # faultTolerant is false: rules are not used at all


@dataclass(frozen=True)
class RuleCheck:
    """RuleCheck: one rule, as written, its restartScope, and what it made of the failure."""

    rule: str
    scope: str
    outcome: RuleOutcome
    why: str


@dataclass(frozen=True)
class PodExplanation:
    """PodExplanation: one pod as the operator sees it, and its verdict.

    ``present`` is False for an index that has no pod (never created, vanished, or waiting for
    its replacement); then ``name`` is the pod the index had or is about to get. ``node_ready``
    is the Ready status of the pod's node ("True", "False", "Unknown") or "gone"; None when the
    pod is not on a node. ``gate`` says whether the replica restartPolicy allows restarting
    this kind of failure at all; ``rules`` how each rule judged it; ``summary`` the verdict in
    one line; ``notes`` what follows from it (failPolicy, limits, timeouts, deletion).
    """

    name: str
    replica: str | None
    index: int | None
    generation: int | None
    present: bool
    phase: str | None
    node: str | None
    node_ready: str | None
    exit_code: int | None
    exit_container: str | None
    deletion: str | None
    disruption: str | None
    failure: str | None  # a policy.FailureKind value
    failure_detail: str | None
    verdict: Verdict
    summary: str
    gate: str | None
    rules: tuple[RuleCheck, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class ConditionView:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Explanation:
    """Explanation: the job as the operator sees it, what its next pass does, and every pod.

    ``restart_counts``: ``status.RestartCount`` as observed (the next pass may change it; see
    ``next_pass``). ``next_pass``: the Plan of the next pass, one line per action.
    """

    namespace: str
    name: str
    phase: str | None
    condition: ConditionView | None
    restart_counts: tuple[tuple[str, int], ...]
    fault_tolerant: bool
    deleting: bool
    next_pass: tuple[str, ...]
    pods: tuple[PodExplanation, ...]

    def to_json(self) -> dict[str, Any]:
        """to_json: plain JSON data (``aitj explain --json``)."""
        out = asdict(self)
        out["restart_counts"] = dict(self.restart_counts)
        return out


class UnknownPod(LookupError):
    """UnknownPod: ``pod_name`` is neither a pod of the job nor a pod one of its indices expects."""

    def __init__(self, pod: str, known: Sequence[str]) -> None:
        self.pod = pod
        self.known = tuple(known)
        listed = ", ".join(self.known) or "none"
        super().__init__(f"pod {pod} is not a pod of this job (its pods: {listed})")


def explain(
    job: Job,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    now: datetime,
    pod_name: str | None = None,
    *,
    deleting: bool = False,
) -> Explanation:
    """explain: the job, what the next pass does, and each pod's verdict (only ``pod_name``'s
    when given; UnknownPod if the job has no such pod). ``deleting``: the job has a
    deletionTimestamp, for which the operator plans nothing and lets its pods go."""
    mine = sorted(
        (p for p in pods if p.job == job.name and p.namespace in ("", job.namespace)),
        key=lambda p: (_replica_order(job, p.replica), p.index if p.index is not None else -1, p.generation),
    )
    status = job.status or {}
    phase = _phase(status.get("phase"))
    if deleting:
        entries = [_ignored(p, nodes) for p in mine]
        next_pass: tuple[str, ...] = (
            "nothing is planned: the job is being deleted; the operator only releases its pods' finalizer",
        )
    elif phase is not None and phase in FINISHED_PHASES:
        result = plan(job, mine, nodes, now)
        entries = [_cleanup(job, p, nodes, result, phase) for p in mine]
        next_pass = _next_pass(job, result)
    else:
        result = plan(job, mine, nodes, now)
        # The planner's own assessment (scale operations included), for the per-index verdicts.
        found = assess(job, mine, nodes, now).found
        judge = _Judge(job, nodes, found, result)
        entries = [judge.pod(p) for p in mine] + judge.absent(mine)
        next_pass = _next_pass(job, result)
    if pod_name is not None:
        known = [e.name for e in entries]
        entries = [e for e in entries if e.name == pod_name]
        if not entries:
            raise UnknownPod(pod_name, known)
    return Explanation(
        namespace=job.namespace,
        name=job.name,
        phase=str(status.get("phase")) if status.get("phase") else None,
        condition=_condition(status),
        restart_counts=_restart_counts(job, status),
        fault_tolerant=job.spec.fault_tolerant,
        deleting=deleting,
        next_pass=next_pass,
        pods=tuple(entries),
    )


# ---------------------------------------------------------------------------------------------
# The job


def _phase(value: object) -> Phase | None:
    try:
        return Phase(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _replica_order(job: Job, replica: str | None) -> int:
    names = [r.name for r in job.spec.replicas]
    return names.index(replica) if replica in names else len(names)


def _condition(status: Mapping[str, Any]) -> ConditionView | None:
    conditions = status.get("conditions")
    last = conditions[-1] if isinstance(conditions, list) and conditions else None
    if not isinstance(last, Mapping) or last.get("status") != "True":
        return None
    return ConditionView(str(last.get("type", "")), str(last.get("reason", "")), str(last.get("message", "")))


def _restart_counts(job: Job, status: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    counts = status.get("RestartCount")
    counts = counts if isinstance(counts, Mapping) else {}
    out = []
    for r in job.spec.replicas:
        value = counts.get(r.name, 0)
        out.append((r.name, value if isinstance(value, int) and not isinstance(value, bool) else 0))
    return tuple(out)


def _next_pass(job: Job, result: Plan) -> tuple[str, ...]:
    """_next_pass: the Plan, one line per thing it would do."""
    lines: list[str] = []
    if result.outcome is not None:
        o = result.outcome
        lines.append(f"the job ends: {o.phase} ({o.reason}): {o.message}")
    for c in result.creates:
        lines.append(f"create pod {c.name} ({c.replica} {c.index}, generation {c.generation})")
    for d in result.deletes:
        grace = " with grace period 0" if d.grace_period_seconds == 0 else ""
        lines.append(f"delete pod {d.name}{grace}: {d.message}")
    if result.release:
        lines.append(f"release the finalizer of {', '.join(result.release)}")
    for r in result.restarts:
        lines.append(
            f"count a restart of replica {r.replica}: {r.cause} on pod {r.pod}, {r.rule}, scope {r.scope}"
        )
    lines.extend(_status_change(job.status or {}, result.status))
    if result.hosts is not None:
        lines.append(f"rewrite the discovery host list: [{' '.join(h.pod for h in result.hosts)}]")
    if result.removes:
        lines.append("delete the job's Service (cleanPodPolicy All)")
    for e in result.events:
        lines.append(f"event {e.type} {e.reason}: {e.message}")
    if not lines:
        lines.append("nothing: the job is as it should be")
    if result.requeue_after is not None:
        lines.append(
            f"plan again in {result.requeue_after:.0f}s (the next time-based decision) if nothing changes"
        )
    return tuple(lines)


def _status_change(prev: Mapping[str, Any], new: Mapping[str, Any] | None) -> list[str]:
    if new is None:
        return []
    lines = []
    before, after = prev.get("phase"), new.get("phase")
    cond = _condition(new)
    if before != after:
        lines.append(f"status: phase {before or '(none)'} -> {after}")
    if cond is not None and _condition(prev) != cond:
        lines.append(f"status: condition {cond.type} ({cond.reason}): {cond.message}")
    counts_before, counts_after = prev.get("RestartCount"), new.get("RestartCount")
    if counts_before != counts_after and isinstance(counts_after, Mapping):
        lines.append("status: RestartCount " + ", ".join(f"{k} {v}" for k, v in counts_after.items()))
    shown = {"phase", "conditions", "RestartCount"}
    others = sorted(k for k in set(prev) | set(new) if k not in shown and prev.get(k) != new.get(k))
    if others:
        lines.append(f"status: also updates {', '.join(others)}")
    return lines


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
    rules: tuple[RuleCheck, ...] = (),
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


def _ignored(p: PodView, nodes: Mapping[str, NodeView]) -> PodExplanation:
    return _entry(_seen(p, nodes), Verdict.IGNORED, "not judged: the job is being deleted")


def _cleanup(
    job: Job, p: PodView, nodes: Mapping[str, NodeView], result: Plan, phase: Phase
) -> PodExplanation:
    policy = job.spec.clean_pod_policy
    if any(d.name == p.name for d in result.deletes):
        what = "deleted in the next pass"
    elif p.deleting:
        what = "already being deleted"
    else:
        what = "kept"
    notes = ["its finalizer is released"] if p.name in result.release else []
    summary = f"not judged: the job has finished ({phase}); cleanPodPolicy {policy}: {what}"
    return _entry(_seen(p, nodes), Verdict.CLEANUP, summary, notes=notes)


# ---------------------------------------------------------------------------------------------
# One pod: the verdict of a live job


class _Judge:
    """_Judge reads the planner's survey of a live job back pod by pod."""

    def __init__(self, job: Job, nodes: Mapping[str, NodeView], found: Survey, result: Plan) -> None:
        self.job = job
        self.nodes = nodes
        self.found = found
        self.result = result
        self.restarts: dict[str, NewRestart] = {r.old_pod: r for r in found.restarts}
        self.retirees: dict[str, Retiree] = {}
        for t in found.retirees:
            self.retirees.setdefault(t.pod.name, t)
        self.slots = {(s.replica.name, s.index): s for s in found.slots}

    def pod(self, p: PodView) -> PodExplanation:
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
            vanished = next(
                (n for n in self.found.restarts if (n.slot.replica.name, n.slot.index) == (r, i)), None
            )
            if vanished is not None:
                out.append(self._restart(_absent(vanished.old_pod, r, i, s.generation - 1), vanished))
            elif s.state is State.FAILED:
                out.append(self._fails(_absent(s.name, r, i, s.generation), s))
            elif s.state is State.WAITING:
                out.append(self._gated(_absent(s.name, r, i, s.generation), s))
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

    def _restart(self, seen: dict[str, Any], new: NewRestart) -> PodExplanation:
        r, failure, decision = new.slot.replica, new.failure, new.decision
        if self.job.spec.fault_tolerant:
            summary = f"restart: rule {decision.rule} restarts scope {decision.scope}"
        else:
            summary = f"restart: {decision.rule} restarts scope {decision.scope} (faultTolerant is false)"
        notes = [self._count_note(r)]
        final = self.slots.get((r.name, new.slot.index))
        successor = new.slot.name
        if final is not None and final.state is State.WAITING:
            notes.append(f"replaced by {successor} once every worker index runs (launcher gating)")
        else:
            notes.append(f"replaced by {successor}, created in the next pass")
        if self.result.outcome is not None:
            summary += " (dropped: the job ends in the same pass)"
            notes.append(
                f"the job ends in this pass ({self.result.outcome.phase}): "
                "restarts decided with it are dropped"
            )
        gate, rules = self._rules(r, failure)
        return _entry(seen, Verdict.RESTART, summary, failure, gate, rules, notes)

    def _fails(self, seen: dict[str, Any], slot: Slot) -> PodExplanation:
        assert slot.failure is not None and slot.fail is not None
        r = slot.replica
        summary = f"fails ({slot.fail.reason}): {slot.fail.message}"
        notes = [self._count_note(r), self._fail_policy_note(r)]
        gate, rules = self._rules(r, slot.failure)
        return _entry(seen, Verdict.FAILS, summary, slot.failure, gate, rules, notes)

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
        if t.reason.startswith("restart scope"):
            for new in self.found.restarts:
                scope = new.decision.scope.value
                if scope == "All" or (scope == "Replica" and new.slot.replica.name == p.replica):
                    notes.append(f"recreated by the scope {scope} restart for pod {new.old_pod}")
                    break
            else:
                notes.append("an earlier Replica- or All-scope restart covered it (restart epoch)")
        elif t.reason.startswith("restart:"):
            notes.append("its failure was counted by an earlier pass that did not finish: not counted again")
        notes.extend(self._deletion_notes(p, t))
        return _entry(seen, Verdict.REPLACED, f"replaced by the operator: {t.reason}", failure, notes=notes)

    def _gated(self, seen: dict[str, Any], slot: Slot) -> PodExplanation:
        waiting = [
            f"{s.name} ({s.state.value})"
            for s in self.found.slots
            if s.replica.replica_type is ReplicaType.WORKER and s.state.in_progress
        ]
        summary = f"gated: {slot.replica.name} pods are created only when every worker index runs"
        return _entry(seen, Verdict.GATED, summary, notes=[f"waiting for {', '.join(waiting)}"])

    # ---- reasons ---------------------------------------------------------------------------

    def _rules(self, r: ReplicaSpec, failure: Failure) -> tuple[str, tuple[RuleCheck, ...]]:
        return _gate(r, failure), _rule_checks(r, self.job.spec.fault_tolerant, failure)

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


def _gate(r: ReplicaSpec, failure: Failure) -> str:
    """_gate: the replica restartPolicy's say on this kind of failure (docs/semantics.md 7.1)."""
    if failure.kind is FailureKind.RESTART_TIMEOUT:
        return "RestartTimeout is the failure of a restart: it is never restarted"
    word = "allows" if allows(r.restart_policy, failure.kind) else "does not allow"
    return (
        f"restartPolicy {r.restart_policy} of replica {r.name} {word} restarting {_kind_words(failure.kind)}"
    )


def rule_text(rule: FaultTolerantRule) -> str:
    """rule_text: the rule as written (``exitCodes 129,101``), as the planner names it."""
    if rule.source:
        return rule.source
    if rule.exit_codes:
        return "exitCodes " + ",".join(str(c) for c in sorted(rule.exit_codes))
    return "exceptionalEvent " + ",".join(sorted(e.value for e in rule.events))


def _rule_checks(r: ReplicaSpec, fault_tolerant: bool, failure: Failure) -> tuple[RuleCheck, ...]:
    """_rule_checks: every rule of ``r`` against ``failure``, in order, the way policy.decide
    tries them, with the reason for each."""
    checks: list[RuleCheck] = []
    fired = False
    policy = r.restart_policy
    for rule in r.rules:
        text, scope = rule_text(rule), str(rule.restart_scope)
        is_exit = bool(rule.exit_codes)
        if not fault_tolerant:
            checks.append(
                RuleCheck(text, scope, RuleOutcome.IGNORED, "faultTolerant is false: rules are not used")
            )
            continue
        if failure.kind is FailureKind.RESTART_TIMEOUT:
            checks.append(RuleCheck(text, scope, RuleOutcome.NOT_TRIED, "no rule restarts a RestartTimeout"))
            continue
        if fired:
            checks.append(RuleCheck(text, scope, RuleOutcome.NOT_TRIED, "an earlier rule fired"))
            continue
        kind_ok = allows(policy, FailureKind.EXIT_CODE if is_exit else FailureKind.NODE_NOT_READY)
        if not kind_ok:
            what = "exit-code" if is_exit else "exceptionalEvent"
            checks.append(
                RuleCheck(
                    text, scope, RuleOutcome.INACTIVE, f"restartPolicy {policy} does not allow {what} rules"
                )
            )
        elif rule_matches(rule.exit_codes, rule.events, policy, failure):
            fired = True
            named = f"exit code {failure.exit_code}" if is_exit else failure.kind.value
            checks.append(RuleCheck(text, scope, RuleOutcome.FIRES, f"names {named}"))
        else:
            checks.append(RuleCheck(text, scope, RuleOutcome.NO_MATCH, _mismatch(is_exit, failure)))
    return tuple(checks)


def _mismatch(is_exit: bool, failure: Failure) -> str:
    if is_exit and failure.kind is FailureKind.EXIT_CODE:
        return f"does not name exit code {failure.exit_code}"
    if is_exit:
        return f"an exit-code rule, and the failure is {failure.kind.value}"
    if failure.kind.event is not None:
        return f"does not name {failure.kind.value}"
    if failure.kind is FailureKind.EXIT_CODE:
        return f"an exceptionalEvent rule, and the failure is exit code {failure.exit_code}"
    return f"an exceptionalEvent rule, and {failure.kind.value} is not an exceptional event"


# ---------------------------------------------------------------------------------------------
# Text


def render(e: Explanation) -> list[str]:
    """render: the explanation as plain text lines (the header, the next pass, every pod)."""
    return header_lines(e) + [line for p in e.pods for line in ["", *pod_lines(p)]]


def header_lines(e: Explanation) -> list[str]:
    lines = [
        f"job {e.namespace}/{e.name}: phase {e.phase or '(none yet)'}, "
        f"faultTolerant {str(e.fault_tolerant).lower()}"
    ]
    if e.deleting:
        lines.append("  being deleted")
    if e.condition is not None:
        c = e.condition
        lines.append(f"  condition: {c.type} ({c.reason}): {c.message}")
    counts = ", ".join(f"{name} {n}" for name, n in e.restart_counts)
    lines.append(f"  RestartCount: {counts}")
    lines.append("next pass:")
    lines.extend(f"  - {line}" for line in e.next_pass)
    return lines


def observed_line(p: PodExplanation) -> str:
    """observed_line: what the operator sees of a pod, in one line."""
    if not p.present:
        return "no such pod in the cluster"
    parts = [f"phase {p.phase}"]
    if p.node:
        parts.append(
            f"node {p.node} (Ready={p.node_ready})" if p.node_ready != "gone" else f"node {p.node} (gone)"
        )
    else:
        parts.append("not on a node")
    if p.exit_code is not None:
        parts.append(f"exit code {p.exit_code} (container {p.exit_container})")
    parts.append(p.deletion or "not being deleted")
    if p.disruption:
        parts.append(f"disruption {p.disruption}")
    return ", ".join(parts)


def pod_lines(p: PodExplanation) -> list[str]:
    where = f"{p.replica} {p.index}, generation {p.generation}" if p.replica is not None else "not the job's"
    lines = [f"pod {p.name} ({where})", f"  sees: {observed_line(p)}"]
    if p.failure is not None:
        lines.append(f"  failure: {p.failure}: {p.failure_detail}")
    if p.gate:
        lines.append(f"  {p.gate}")
    for n, rule in enumerate(p.rules, 1):
        lines.append(f"  rule {n} {rule.rule} (scope {rule.scope}): {rule.outcome}: {rule.why}")
    lines.append(f"  => {p.summary}")
    lines.extend(f"  {note}" for note in p.notes)
    return lines


def invalid_lines(error: InvalidJob) -> list[str]:
    """invalid_lines: a job whose spec does not parse, and what the operator does with it."""
    return [
        "the spec is invalid: the operator does not run this job; it marks it Failed (reason InvalidSpec)",
        *(f"  {e}" for e in error.errors),
    ]
