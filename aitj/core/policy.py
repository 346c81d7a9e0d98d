"""Failure policy: what went wrong with a pod, and whether its replica's policy restarts it.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it) and clock-free:
the caller passes ``now``. Two steps, like the Kubernetes Job controller's
``matchPodFailurePolicy`` (pkg/controller/job/pod_failure_policy.go):

- ``classify(pod, node)`` says what, if anything, went wrong with a pod (a ``Failure``):
  an exit code, or an exceptional event (nodeNotReady, PodForceDeleted, PodEvicted,
  PodPreempted). ``restart_timed_out`` says a replacement took too long to reach Running.
- ``decide(replica, fault_tolerant, failure)`` says what the replica's ``restartPolicy`` and
  ``faultTolerantPolicy`` rules make of it: a ``RestartDecision`` (with its scope and the rule
  that matched) or a ``Fail`` (with a reason), which the planner hands to ``failPolicy``. Either
  carries its ``trace``: every rule, whether it was active, whether it matched, and why; the
  planner and ``aitj explain`` read that one trace, so they cannot disagree about a rule.
Restart limits are counted by the planner; a rule whose budget is spent is passed to ``decide``
(``spent``) and matches nothing. docs/semantics.md tells every branch below."""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from aitj.core.api import ExceptionalEvent, FaultTolerantRule, ReplicaSpec, RestartPolicy, RestartScope
from aitj.core.faultclass import FaultClass, event_class, exempt, exempt_note
from aitj.core.nodesignals import DEFAULT_SIGNALS, NodeSignals, node_fault
from aitj.core.observed import KUBELET_EVICTED, NODE_DISRUPTION_REASONS, PREEMPTION_REASONS, NodeView, PodView


class FailureKind(enum.StrEnum):
    """FailureKind: what went wrong. Also the ``cause`` metric label; every value is listed here.

    The exceptional events carry the names ``exceptionalEvent`` rules use. ``PodFailed`` (the
    pod failed without any exit code, e.g. a kubelet admission error) and ``RestartTimeout``
    match no rule.
    """

    EXIT_CODE = "exitCode"
    NODE_NOT_READY = ExceptionalEvent.NODE_NOT_READY.value
    POD_FORCE_DELETED = ExceptionalEvent.POD_FORCE_DELETED.value
    POD_EVICTED = ExceptionalEvent.POD_EVICTED.value
    POD_PREEMPTED = ExceptionalEvent.POD_PREEMPTED.value
    HANG = ExceptionalEvent.HANG.value  # no progress line (aitj.core.planner.hang)
    STALL = "stall"  # a rank waiting after a recovery: the watchdog's (aitj.core.planner.watchdog)
    LEFT_RING = "leftRing"  # a worker out of the ring while its pod runs: the watchdog's too
    RING_HUNG = "ringHung"  # nothing stepped nor moved on long after a recovery: its escalation
    POD_FAILED = "PodFailed"
    RESTART_TIMEOUT = "RestartTimeout"

    @property
    def event(self) -> ExceptionalEvent | None:
        """event: the exceptional event this kind is, if it is one."""
        try:
            return ExceptionalEvent(self.value)
        except ValueError:
            return None

    @property
    def fault_class(self) -> FaultClass:
        """fault_class: infrastructure (the cluster took the pod) or application (aitj.core.faultclass)."""
        return event_class(self.event)


WATCHDOG_KINDS = frozenset({FailureKind.STALL, FailureKind.LEFT_RING, FailureKind.RING_HUNG})  # its rung's


@dataclass(frozen=True)
class Failure:
    """Failure: what went wrong, for people (``description``) and for rules (kind, exit code).

    ``at`` is when it happened as far as the cluster tells (container finishedAt, the node's
    Ready transition, the delete call), None if unknown; detection latency is ``now - at``.
    """

    kind: FailureKind
    description: str
    exit_code: int | None = None
    at: datetime | None = None

    @property
    def cause(self) -> str:
        """cause: ``exitCode 137`` or the event name; the status and Event wording."""
        return f"exitCode {self.exit_code}" if self.kind is FailureKind.EXIT_CODE else self.kind.value


def node_failure(
    pod: PodView, node: NodeView | None, signals: NodeSignals = DEFAULT_SIGNALS
) -> Failure | None:
    """node_failure: the pod's node is gone, not Ready, or shows one of the fault ``signals``
    (only for a pod bound to a node)."""
    if pod.node_name is None:
        return None
    if node is None:
        return Failure(FailureKind.NODE_NOT_READY, f"node {pod.node_name} is gone")
    if not node.is_ready:
        return Failure(
            FailureKind.NODE_NOT_READY,
            f"node {pod.node_name} is not ready (Ready={node.ready})",
            at=node.ready_since,
        )
    if (fault := node_fault(node, signals)) is not None:
        return Failure(FailureKind.NODE_NOT_READY, fault.description, at=fault.at)
    return None


def drain(pod: PodView, node: NodeView | None) -> Failure | None:
    """drain: an eviction (a DisruptionTarget that is not a preemption) of a pod whose node is
    cordoned is node maintenance, what ``kubectl drain`` does: a node failure (nodeNotReady), so
    the rules that move a worker off a bad node move it off a drained one. A node that is gone
    by now counts the same. Other evictions (node pressure, the descheduler, a manual eviction
    on a schedulable node) are not this: they stay PodEvicted."""
    if pod.disruption is None or pod.disruption in PREEMPTION_REASONS or pod.node_name is None:
        return None
    if node is not None and not node.unschedulable:
        return None
    where = f"node {pod.node_name} is gone" if node is None else f"node {pod.node_name} is cordoned"
    return Failure(
        FailureKind.NODE_NOT_READY,
        f"pod was evicted ({pod.disruption}) and {where}: a drain (node maintenance)",
        at=pod.disruption_at,
    )


def classify(pod: PodView, node: NodeView | None, signals: NodeSignals = DEFAULT_SIGNALS) -> Failure | None:
    """classify says what went wrong with a pod the operator still wants, or None if nothing.

    ``node`` is the pod's node (None: bound to a node that no longer exists); ``signals``: what
    else makes a node bad (``aitj.core.nodesignals``; "bad" below). The cause wins
    over the symptom, so the checks run in this order:

    1. Succeeded: success (exit code 0), unless it finished after someone else's delete began.
    2. A True DisruptionTarget condition: PreemptionByScheduler is PodPreempted; a taint-manager
       or pod-GC deletion on a node that is bad is nodeNotReady; an eviction from a
       cordoned node (``drain``) is nodeNotReady; anything else PodEvicted.
       ``status.reason: Evicted`` (kubelet node-pressure eviction) is PodEvicted.
    3. Failed with a non-zero exit code that came before any deletion: that exit code.
    4. Not finished, on a node that is gone, not Ready or shows a fault signal: nodeNotReady.
    5. Being deleted (the operator never deletes a pod it still wants): PodForceDeleted.
    6. Failed without an exit code: nodeNotReady if the node is bad, else PodFailed.
    """
    started = pod.deletion_started
    # A worker that exits 0 on the SIGTERM of a delete is that delete's (seen: torchrun's, after a
    # force delete the pod's finalizer held, and its index was counted done).
    if pod.phase == "Succeeded" and (started is None or pod.exit_at is None or pod.exit_at < started):
        return None
    if pod.disruption is not None:
        return disrupted(pod, node, signals)
    if pod.reason == KUBELET_EVICTED:
        detail = f": {pod.message}" if pod.message else ""
        return Failure(FailureKind.POD_EVICTED, f"pod was evicted by the kubelet{detail}", at=pod.exit_at)
    exited_first = pod.exit_at is None or started is None or pod.exit_at <= started
    if pod.phase == "Failed" and pod.exit_code is not None and (not pod.deleting or exited_first):
        return exit_failure(pod)
    if not pod.terminal and (bad := node_failure(pod, node, signals)) is not None:
        return bad
    if pod.deleting:
        how = FORCED if pod.deletion_grace_seconds == 0 else f"(grace period {pod.deletion_grace_seconds}s)"
        words = f"pod was deleted {how} by someone other than the operator"
        return Failure(FailureKind.POD_FORCE_DELETED, words, at=started)
    if pod.phase == "Failed":
        if (bad := node_failure(pod, node, signals)) is not None:
            return bad
        why = f" ({pod.reason})" if pod.reason else ""
        return Failure(FailureKind.POD_FAILED, f"pod failed without an exit code{why}")
    return None


def disrupted(pod: PodView, node: NodeView | None, signals: NodeSignals = DEFAULT_SIGNALS) -> Failure:
    """disrupted: step 2 of classify, for a pod with a True DisruptionTarget condition."""
    if pod.disruption in PREEMPTION_REASONS:
        return Failure(FailureKind.POD_PREEMPTED, "pod was preempted by the scheduler", at=pod.disruption_at)
    if pod.disruption in NODE_DISRUPTION_REASONS and (bad := node_failure(pod, node, signals)) is not None:
        return bad
    if (drained := drain(pod, node)) is not None:
        return drained
    return Failure(FailureKind.POD_EVICTED, f"pod was evicted ({pod.disruption})", at=pod.disruption_at)


def exit_failure(pod: PodView) -> Failure:
    code = pod.exit_code
    return Failure(
        FailureKind.EXIT_CODE,
        f"container {pod.exit_container} exited with code {code}",
        exit_code=code,
        at=pod.exit_at,
    )


def vanished(pod_name: str) -> Failure:
    """vanished: the pod is gone entirely (no finalizer held it) while its index should exist."""
    return Failure(FailureKind.POD_FORCE_DELETED, f"pod {pod_name} {VANISHED}")


FORCED = "with grace period 0"  # a PodForceDeleted failure's words when it was a force delete
VANISHED = "vanished without the operator deleting it"


def restart_timer_runs(pod: PodView, replica: ReplicaSpec) -> bool:
    """restart_timer_runs: ``restart_timed_out`` reads the clock for ``pod``: a replacement with
    a restartTimeout that has not run yet (aitj.core.planner.memo keys its verdicts on it)."""
    if replica.restart_timeout is None or pod.generation == 0 or pod.created is None:
        return False
    return pod.running_since is None and pod.phase == "Pending"


def restart_timed_out(pod: PodView, replica: ReplicaSpec, now: datetime) -> Failure | None:
    """restart_timed_out: a replacement (generation > 0) that has not reached Running within
    ``restartTimeout`` seconds of its creation. A pod that ever ran is judged by classify."""
    timeout = replica.restart_timeout
    if timeout is None or pod.created is None or not restart_timer_runs(pod, replica):
        return None
    deadline = pod.created + timedelta(seconds=timeout)
    if now < deadline:
        return None
    return Failure(
        FailureKind.RESTART_TIMEOUT,
        f"replacement pod {pod.name} was not Running within restartTimeout {timeout}s",
        at=deadline,
    )


# ---------------------------------------------------------------------------------------------
# Decisions


class FailReason(enum.StrEnum):
    """FailReason: why a failure is not restarted. Also a metric label; every value is here."""

    NOT_RESTARTABLE = "NotRestartable"  # the replica restartPolicy does not restart this kind
    NO_MATCHING_RULE = "NoMatchingRule"  # faultTolerant: no active rule matches
    RESTART_LIMIT_EXCEEDED = "RestartLimitExceeded"  # set by the planner
    BUDGET_EXHAUSTED = "RuleBudgetExhausted"  # the rules that match have used up their restartLimit
    RESTART_TIMEOUT = "RestartTimeout"
    STOOD = "FailureStood"  # a failure that stood in an earlier pass; its pod has gone since


class RuleWhy(enum.StrEnum):
    """RuleWhy: what one faultTolerantPolicy rule made of a failure, and why (``aitj explain``)."""

    FIRES = "fires"  # the first active rule that names the failure: its scope is restarted
    OTHER_EXIT_CODE = "otherExitCode"  # an exit-code rule that does not name this exit code
    NOT_AN_EXIT_CODE = "notAnExitCode"  # an exit-code rule, and the failure has no exit code
    OTHER_EVENT = "otherEvent"  # an exceptionalEvent rule that does not name this event
    NOT_AN_EVENT = "notAnEvent"  # an exceptionalEvent rule, and the failure is no event
    INACTIVE = "inactive"  # the replica restartPolicy does not allow rules of its kind
    EARLIER_RULE_FIRED = "earlierRuleFired"  # not tried: an earlier rule fired
    BUDGET_SPENT = "budgetSpent"  # names the failure, but its restartLimit (in its window) is used up
    RESTART_TIMEOUT = "restartTimeout"  # not tried: no rule restarts a RestartTimeout
    IGNORED = "ignored"  # faultTolerant is false: rules are not used at all


@dataclass(frozen=True)
class RuleCheck:
    """RuleCheck: one rule of the replica (``index`` in its faultTolerantPolicy), as written
    (``rule``), with its restartScope, against one failure. ``active``: the replica
    restartPolicy allows rules of its kind; ``matched``: it names the failure's exit code or
    event (whether or not it was tried); ``why`` says what came of it, ``detail`` the same in
    a few words for people."""

    index: int
    rule: str
    scope: RestartScope
    active: bool
    matched: bool
    why: RuleWhy
    detail: str

    @property
    def fired(self) -> bool:
        """fired: this rule's scope is restarted."""
        return self.why is RuleWhy.FIRES


@dataclass(frozen=True)
class RestartDecision:
    """RestartDecision: the rule engine's verdict that a failure is restarted: recreate
    ``scope`` because of ``rule`` (a rule's source text, or ``restartPolicy <policy>`` when
    faultTolerant is off). ``trace``: every rule, as tried.

    Why it exists: it is what ``decide`` says, before the planner checks the restart limit; a
    restart the planner then counts becomes a ``planner.types.RestartRecord`` (what must be
    recorded once), and the slot it restarts keeps this decision for ``aitj explain``."""

    scope: RestartScope
    rule: str
    trace: tuple[RuleCheck, ...] = ()


@dataclass(frozen=True)
class Fail:
    """Fail: the failure stands; the replica's failPolicy judges it. ``message`` says why;
    ``trace``: every rule, as tried."""

    reason: FailReason
    message: str
    trace: tuple[RuleCheck, ...] = ()


Decision = RestartDecision | Fail
_NOTHING_SPENT: Mapping[int, str] = types.MappingProxyType({})

_EXIT_CODE_POLICIES = frozenset(
    {
        RestartPolicy.ALWAYS,
        RestartPolicy.ON_FAILURE,
        RestartPolicy.EXIT_CODE,
        RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE,
    }
)
_EVENT_POLICIES = frozenset(
    {
        RestartPolicy.ALWAYS,
        RestartPolicy.ON_FAILURE,
        RestartPolicy.ON_NODE_FAIL,
        RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE,
    }
)
_ANY_POLICIES = frozenset({RestartPolicy.ALWAYS, RestartPolicy.ON_FAILURE})


def allows(policy: RestartPolicy, kind: FailureKind) -> bool:
    """allows: whether a replica restartPolicy lets failures of ``kind`` be restarted at all.

    ExitCode: exit codes; OnNodeFail: exceptional events; OnNodeFailWithExitCode: both;
    Always and OnFailure: any failure (the same thing: a success is never restarted);
    Never: nothing. RestartTimeout is never restartable: it is the failure of a restart.
    """
    if kind is FailureKind.RESTART_TIMEOUT:
        return False
    if kind is FailureKind.EXIT_CODE:
        return policy in _EXIT_CODE_POLICIES
    if kind.event is not None:
        return policy in _EVENT_POLICIES
    return policy in _ANY_POLICIES


def decide(
    replica: ReplicaSpec, fault_tolerant: bool, failure: Failure, spent: Mapping[int, str] = _NOTHING_SPENT
) -> Decision:
    """decide: RestartDecision or Fail for a failure of one of ``replica``'s pods, with the trace of
    every rule (``trace``).

    The replica ``restartPolicy`` gates first (``allows``). With ``fault_tolerant`` the
    ``faultTolerantPolicy`` rules are tried in order; a rule is active only if the
    restartPolicy allows its kind; the first active rule that matches restarts with the rule's
    scope; with no match the failure stands (NoMatchingRule). Without ``fault_tolerant`` the
    rules are ignored and an allowed failure restarts with the replica's ``restartScope``.
    ``spent``: the rules (by position) whose restartLimit is used up, and how; such a rule does
    not match (the failure falls to the next rule), and when no other rule fires the failure
    stands as RuleBudgetExhausted (aitj.core.planner.rule_budgets counts them).
    """
    policy = replica.restart_policy
    trace = _trace(replica, fault_tolerant, failure, spent)
    if failure.kind is FailureKind.RESTART_TIMEOUT:
        return Fail(FailReason.RESTART_TIMEOUT, failure.description, trace)
    if failure.kind in WATCHDOG_KINDS:  # the watchdog's own rung, whatever the rules: a pod, or all
        scope = RestartScope.ALL if failure.kind is FailureKind.RING_HUNG else RestartScope.POD
        return RestartDecision(scope, "the recovery watchdog", trace)
    if not allows(policy, failure.kind):
        return Fail(
            FailReason.NOT_RESTARTABLE,
            f"restartPolicy {policy} of replica {replica.name} does not restart {failure.cause}",
            trace,
        )
    if not fault_tolerant:
        return RestartDecision(replica.restart_scope, f"restartPolicy {policy}", trace)
    fired = next((check for check in trace if check.fired), None)
    if fired is not None:
        return RestartDecision(fired.scope, fired.rule, trace)
    used = next((check for check in trace if check.why is RuleWhy.BUDGET_SPENT), None)
    if used is not None:
        return Fail(
            FailReason.BUDGET_EXHAUSTED,
            f"{failure.cause} matches rule {used.rule} of replica {replica.name}, but its restart "
            f"budget ran out ({used.detail}) and no later rule restarts it",
            trace,
        )
    return Fail(
        FailReason.NO_MATCHING_RULE,
        f"{failure.cause} matches no faultTolerantPolicy rule of replica {replica.name}",
        trace,
    )


def _trace(
    replica: ReplicaSpec, fault_tolerant: bool, failure: Failure, spent: Mapping[int, str]
) -> tuple[RuleCheck, ...]:
    """_trace: every rule of ``replica`` against ``failure``, in order: the rule loop of decide.
    Only an active rule that names the failure, with budget left, fires, and only the first
    one: the rules after it are not tried."""
    policy = replica.restart_policy
    checks: list[RuleCheck] = []
    fired = False
    for i, rule in enumerate(replica.rules):
        is_exit = bool(rule.exit_codes)
        active = policy in (_EXIT_CODE_POLICIES if is_exit else _EVENT_POLICIES)
        event = failure.kind.event
        if is_exit:
            matched = failure.exit_code is not None and failure.exit_code in rule.exit_codes
        else:
            matched = event is not None and event in rule.events
        if not fault_tolerant:
            why, detail = RuleWhy.IGNORED, "faultTolerant is false: rules are not used"
        elif failure.kind is FailureKind.RESTART_TIMEOUT:
            why, detail = RuleWhy.RESTART_TIMEOUT, "no rule restarts a RestartTimeout"
        elif fired:
            why, detail = RuleWhy.EARLIER_RULE_FIRED, "an earlier rule fired"
        elif not active:
            what = "exit-code" if is_exit else "exceptionalEvent"
            why, detail = RuleWhy.INACTIVE, f"restartPolicy {policy} does not allow {what} rules"
        elif matched and i in spent and not exempt(rule, failure.kind.event):
            why, detail = RuleWhy.BUDGET_SPENT, spent[i]
        elif matched:
            fired = True
            named = f"exit code {failure.exit_code}" if is_exit else failure.kind.value
            why, detail = RuleWhy.FIRES, f"names {named}" + exempt_note(rule, event, spent.get(i))
        else:
            why, detail = _mismatch(is_exit, failure)
        checks.append(RuleCheck(i, rule_text(rule), rule.restart_scope, active, matched, why, detail))
    return tuple(checks)


def _mismatch(is_exit: bool, failure: Failure) -> tuple[RuleWhy, str]:
    """_mismatch: why an active rule does not name the failure."""
    if is_exit and failure.kind is FailureKind.EXIT_CODE:
        return RuleWhy.OTHER_EXIT_CODE, f"does not name exit code {failure.exit_code}"
    if is_exit:
        return RuleWhy.NOT_AN_EXIT_CODE, f"an exit-code rule, and the failure is {failure.kind.value}"
    if failure.kind.event is not None:
        return RuleWhy.OTHER_EVENT, f"does not name {failure.kind.value}"
    if failure.kind is FailureKind.EXIT_CODE:
        return (
            RuleWhy.NOT_AN_EVENT,
            f"an exceptionalEvent rule, and the failure is exit code {failure.exit_code}",
        )
    return (
        RuleWhy.NOT_AN_EVENT,
        f"an exceptionalEvent rule, and {failure.kind.value} is not an exceptional event",
    )


def rule_text(rule: FaultTolerantRule) -> str:
    """rule_text: the rule as written (``exitCodes 129,101``), the name restarts give it."""
    if rule.source:
        return rule.source
    if rule.exit_codes:
        return "exitCodes " + ",".join(str(c) for c in sorted(rule.exit_codes))
    return "exceptionalEvent " + ",".join(sorted(e.value for e in rule.events))
