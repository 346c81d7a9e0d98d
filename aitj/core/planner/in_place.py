"""In-place restarts and the escalation ladder (issue 28): which exit codes a pod is created to
restart in place on, what an in-place restart the kubelet made is charged to, and when it
escalates to the next rung instead.

Pure and clock-free. A faultTolerantPolicy rule with ``restartScope: InPlace`` is a rung the
kubelet carries out: the pod is rendered with container restart rules (KEP-5307's
``restartPolicyRules``, KEP-5532's action ``RestartAllContainers``; aitj.core.render.pod) for
the exit codes on which that rule is the first one that would act (``codes``). The kubelet
then restarts every container of the pod, in the pod, on its node, and the operator only
observes it (the pod view's ``restarts``, ``restart_exit``):

- ``observe``: each in-place restart not yet charged is decided like a failure
  (``policy.decide``, with the rules whose budget is spent): when the InPlace rule fires, it is
  charged to that rule's budget in the ledger (a ``RuleHistory``, as any restart by a rule);
  when it does not (its budget ran out while the pod lived: a pod's rules cannot change, so the
  kubelet restarted it anyway) the restart escalates: it is handed back as the pod's failure,
  which the next matching rule (replace the pod, restart the replica, ...) or failPolicy takes.
- a pod that failed on a code an InPlace rule fires on was not restarted in place: created while
  the rung was spent, or the cluster dropped the rules (``fallback``); it is replaced (a Pod
  restart) and charged to the rule all the same.

An in-place restart is keyed in its rule's history by ``key(generation, n)``: generation times
STRIDE plus its number in the pod (the container's restartCount), so the keys of one rule grow
with time; the failure that ends a generation is keyed above all of that generation's in-place
restarts. docs/semantics.md, "In-place restarts and the escalation ladder".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from aitj.core.api import FaultTolerantRule, Job, ReplicaSpec, RestartEntry, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner import rule_budgets
from aitj.core.planner.ledger import ReplicaHistory
from aitj.core.planner.rulelog import RuleHistory, RuleKey
from aitj.core.policy import (
    Failure,
    FailureKind,
    RestartDecision,
    RuleCheck,
    RuleWhy,
    allows,
    decide,
    rule_text,
)
from aitj.core.wire import format_time

STRIDE = 1_000_000
NOT_SERVED = "in-place restart not served by this cluster: replaced the pod instead"


def key(generation: int, restart: int | None) -> int:
    """key: the ledger key of in-place restart ``restart`` (1, 2, ...) of ``generation``'s pod,
    or (None) of the failure that ends that generation."""
    return generation * STRIDE + (STRIDE - 1 if restart is None else min(restart, STRIDE - 2))


def codes(
    replica: ReplicaSpec, fault_tolerant: bool, history: ReplicaHistory, now: datetime
) -> frozenset[int]:
    """codes: the exit codes a pod of ``replica`` created now restarts in place on: those on
    which the first active rule with budget left is an InPlace rule (a code an earlier rule
    claims is that rule's, whatever comes after). Exit 0 never: a success is not restarted."""
    if not fault_tolerant or not allows(replica.restart_policy, FailureKind.EXIT_CODE):
        return frozenset()
    used = rule_budgets.spent(replica, history, now)
    claimed: set[int] = set()
    out: set[int] = set()
    for position, rule in enumerate(replica.rules):
        if not rule.exit_codes or position in used:
            continue
        if rule.restart_scope is RestartScope.IN_PLACE:
            out |= rule.exit_codes - claimed
        claimed |= rule.exit_codes
    return frozenset(out - {0})


@dataclass(frozen=True)
class InPlaceRecord:
    """InPlaceRecord: one in-place restart charged to rule ``position`` (0-based): the pod kept
    its name and generation; ``restart``: its number in the pod; ``rung``: the rule and its
    budget after it, for people (``rule 1 (InPlace) 2 of 3 in 600 s``)."""

    replica: str
    index: int
    generation: int
    pod: str
    restart: int
    failure: Failure
    rule: str
    rung: str
    time: datetime

    def entry(self) -> RestartEntry:
        """entry: its ``status.restarts`` entry (scope InPlace: nothing was recreated)."""
        return RestartEntry(
            time=format_time(self.time),
            replica=self.replica,
            index=self.index,
            generation=self.generation,
            pod=self.pod,
            cause=self.failure.cause,
            exit_code=self.failure.exit_code,
            message=f"{self.failure.description}; {self.rung}",
            failure_time=format_time(self.failure.at) if self.failure.at is not None else None,
            rule=self.rule,
            scope=RestartScope.IN_PLACE,
        )


def rung(position: int, rule: FaultTolerantRule, history: ReplicaHistory, now: datetime) -> str:
    """rung: ``rule 1 (InPlace) 2 of 3 in 600 s`` (or ``... 2 of 3 for the job's life``, or
    ``rule 1 (InPlace), no restartLimit``): which rung acted, and how much of its budget is used."""
    head = f"rule {position + 1} ({rule.restart_scope.value})"
    b = rule_budgets.budget(rule, history, now)
    if b is None:
        return f"{head}, no restartLimit"
    span = f"in {b.window} s" if b.window is not None else "for the job's life"
    return f"{head} {b.used} of {b.limit} {span}"


@dataclass(frozen=True)
class Observed:
    """Observed: what ``observe`` found of one pod: the rule histories to merge into the ledger,
    the in-place restarts charged, and the failure that escalates (None: none)."""

    charges: tuple[tuple[str, RuleHistory], ...] = ()
    records: tuple[InPlaceRecord, ...] = ()
    escalated: Failure | None = None


NOTHING = Observed()


def charged(replica: ReplicaSpec, history: ReplicaHistory, index: int, generation: int) -> int:
    """charged: how many in-place restarts of ``generation``'s pod its InPlace rules were charged."""
    last = max(
        (
            history.rule(index, rule_text(r)).failed
            for r in replica.rules
            if r.restart_scope is RestartScope.IN_PLACE
        ),
        default=-1,
    )
    if last < generation * STRIDE or last // STRIDE != generation:
        return 0
    return last % STRIDE


def observe(
    job: Job, replica: ReplicaSpec, index: int, pod: PodView, history: ReplicaHistory, now: datetime
) -> Observed:
    """observe: the in-place restarts of ``pod`` (the index's current pod, not failed) not yet
    charged, each decided in turn (module docstring), by the exit ``restart_failure`` finds."""
    gen = pod.generation
    done = charged(replica, history, index, gen)
    if pod.restarts <= done:
        return NOTHING
    failure = restart_failure(pod)
    if failure is None:
        return NOTHING
    charges: list[tuple[str, RuleHistory]] = []
    records: list[InPlaceRecord] = []
    for n in range(done + 1, pod.restarts + 1):
        used = rule_budgets.spent(replica, history, now)
        decision = decide(replica, job.spec.fault_tolerant, failure, {k: b.text for k, b in used.items()})
        fired = next((c.index for c in decision.trace if c.fired), None)
        if (
            not isinstance(decision, RestartDecision)
            or fired is None
            or decision.scope is not RestartScope.IN_PLACE
        ):
            return Observed(tuple(charges), tuple(records), escalated(replica, failure, decision.trace))
        rule = replica.rules[fired]
        text = rule_text(rule)
        before = history.rule(index, text)
        times = ((key(gen, n), failure.at or now),) if rule.restart_window is not None else ()
        after = RuleHistory(key(gen, n), before.count + 1, 0, now, times)
        history = history.same_indices(rules=_merged(history, index, text, after))
        charges.append((text, after))
        records.append(
            InPlaceRecord(
                replica.name,
                index,
                gen,
                pod.name,
                n,
                failure,
                text,
                rung(fired, rule, history, now),
                now,
            )
        )
    return Observed(tuple(charges), tuple(records), None)


def escalated(replica: ReplicaSpec, failure: Failure, trace: tuple[RuleCheck, ...]) -> Failure:
    """escalated: ``failure`` saying which InPlace rung is spent, so the next rung's restart
    (its status entry, its Event) says why it acted."""
    spent = [
        f"rule {c.index + 1} (InPlace) is spent ({c.detail})"
        for c in trace
        if c.why is RuleWhy.BUDGET_SPENT and replica.rules[c.index].restart_scope is RestartScope.IN_PLACE
    ]
    if not spent:
        return failure
    return dataclasses.replace(failure, description=f"{failure.description}; {'; '.join(spent)}: escalated")


def restart_failure(pod: PodView) -> Failure | None:
    """restart_failure: the exit that restarted ``pod`` in place, as a failure to decide. The
    kubelet may replace the exiting container's own last state by its placeholder (reason
    RestartingAllContainers, 137) once it removes the container to restart them all: then the
    code is taken as the lowest the pod restarts in place on, which names the same rule unless
    the pod's codes came from several InPlace rules. None: the pod names no code at all."""
    rendered = sorted(int(c) for c in (pod.in_place or "").split(",") if c.isdigit())
    if pod.restart_exit is not None and (not rendered or pod.restart_exit[0] in rendered):
        code, container, at = pod.restart_exit
        said = f"container {container} exited with code {code}"
    elif rendered:
        code, at = rendered[0], None
        said = f"a container exited with one of the codes {pod.in_place} (the kubelet does not keep which)"
    else:
        return None
    return Failure(
        FailureKind.EXIT_CODE,
        f"{said}; the kubelet restarted the pod's containers in place",
        exit_code=code,
        at=at,
    )


def _merged(
    history: ReplicaHistory, index: int, text: str, after: RuleHistory
) -> tuple[tuple[RuleKey, RuleHistory], ...]:
    out = dict(history.rules)
    out[(index, text)] = out[(index, text)].merge(after) if (index, text) in out else after
    return tuple(sorted(out.items()))


def fallback(pod: PodView | None) -> str:
    """fallback: why a pod whose failure an InPlace rule fires on was not restarted in place."""
    if pod is not None and pod.in_place and not pod.in_place_served:
        return NOT_SERVED
    return "the pod was created while the in-place rung was spent: replaced the pod"
