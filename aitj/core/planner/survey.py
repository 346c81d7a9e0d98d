"""Survey: sort a job's pods into slots (one per replica index), find failures, decide restarts.

Pure. This is the fault-tolerance half of the planner (issue 5). ``survey`` returns, for every
index the spec wants, one ``Slot`` saying what the index needs in this pass (create a pod,
replace it, wait, or nothing) and the pods to retire (superseded generations, indices beyond
``replicas``, replicas no longer in the spec), plus the restart ledger with this pass's
decisions merged in.

How the pieces fit (docs/semantics.md has the user-facing version):

- Each index has a generation; the current pod is the one with the highest generation seen
  (labels, and the ledger's ``seen``). Lower generations are superseded: retired.
- A current pod stamped with an older restart epoch than the ledger's (a Replica- or All-scope
  restart happened) is stale: retired and replaced, without counting anything.
- Otherwise ``policy.classify`` (and ``policy.restart_timed_out``) may find a failure. A failure
  already counted in the ledger (``failed >= generation``: the pass that counted it did not
  finish) is replaced again without counting; a new one goes through ``policy.decide`` and the
  restart limit. A restart counts one in the ledger and, for scope Replica / All, bumps the
  epoch of the replica / of every replica, which makes their other pods stale.
- An index with no pod: never seen → create generation 0; its last pod was ended by the
  operator (``ended >= seen``) → create the next generation; otherwise the pod vanished,
  which is a PodForceDeleted failure. Its pod still terminating while the ledger says the
  operator ended that generation (scaled away, then wanted again before the pod was gone) is
  passed over the same way: the next generation is created and nothing is counted. Only a pod
  being deleted: a live pod stays the index's pod whatever the ledger says.
- The recovery rules (aitj.core.planner.rule_budgets): a rule whose budget is used up does not
  match; a restart by a rule goes into its history in the ledger (and its node into the index's
  exclusions); a replacement whose rule has a backoff waits it out (State.BACKOFF).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import replace
from datetime import datetime

from aitj.core.api import Job, ReplicaSpec, RestartScope
from aitj.core.nodesignals import DEFAULT_SIGNALS, NodeSignals
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import hang, in_place, rule_budgets
from aitj.core.planner.ledger import IndexHistory, Ledger, pod_epoch
from aitj.core.planner.shortfall import Shortfall, ShortfallCause
from aitj.core.planner.survey_terms import Retiree as Retiree  # their readers import them from here
from aitj.core.planner.survey_terms import RetireReason as RetireReason
from aitj.core.planner.survey_terms import Shape as Shape
from aitj.core.planner.survey_terms import Slot as Slot
from aitj.core.planner.survey_terms import State as State
from aitj.core.planner.survey_terms import Survey as Survey
from aitj.core.planner.survey_terms import clean as clean
from aitj.core.planner.survey_terms import gate, gate_open, waits
from aitj.core.planner.types import RestartRecord
from aitj.core.planner.watchdog import waiting_failure
from aitj.core.policy import (
    Fail,
    FailReason,
    Failure,
    FailureKind,
    RestartDecision,
    RuleWhy,
    classify,
    decide,
    restart_timed_out,
    restart_timer_runs,
    vanished,
)

# Verdicts of current pods kept between passes (aitj.core.planner.memo), by id(pod): the pod (so
# that its id is not reused while the entry lives), what the verdict was made of, the Slot.
Judged = MutableMapping[int, tuple[PodView, tuple[object, ...], Slot]]


def survey(
    job: Job,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    ledger: Ledger,
    now: datetime,
    shape: Shape | None = None,
    signals: NodeSignals = DEFAULT_SIGNALS,
    judged: Judged | None = None,
) -> Survey:
    """survey: slots, retirees and restarts for one pass (see the module docstring); ``signals``:
    the node conditions and taints that make a node bad besides Ready (``aitj.core.nodesignals``);
    ``judged``: the verdicts of earlier passes of the job's spec (aitj.core.planner.memo), reused
    where nothing they were made of changed, and this pass's added."""
    shape = shape or Shape()
    s = _Surveyor(job, ledger, shape, now, signals)
    s.judged = judged
    s.started = hang.latest_start(job, pods)
    groups = s.group(pods)
    slots: list[Slot] = []
    for r in job.spec.replicas:
        for i in shape.of(r):
            slots.append(s.look(r, i, groups.get((r.name, i), []), nodes))
    slots = [s.resolve(slot) if slot.failure is not None and slot.fail is None else slot for slot in slots]
    # Without a Replica/All-scope restart in this pass no epoch moved since ``look``: nothing to sweep.
    slots = [s.hold(s.sweep(slot) if s.covered else slot) for slot in slots]
    released = tuple(slot.pod.name for slot in slots if slot.pod is not None and s.settle(slot, ledger))
    gated = tuple(gate(slots, shape.joining))
    return Survey(gated, tuple(s.retirees), tuple(s.restarts), s.ledger, released, tuple(s.in_place))


def resurvey(
    last: Survey,
    job: Job,
    made_of: tuple[Ledger, Shape, NodeSignals, Mapping[str, NodeView]],
    now: datetime,
    judged: Judged | None,
    groups: Mapping[int, list[PodView]],
) -> Survey | None:
    """resurvey: ``survey`` of the pods now and ``made_of`` (the ledger, shape, signals and
    nodes), made from ``last``, a survey of the same spec, shape, signals and nodes whose slots
    at places not in ``groups`` are ``clean`` and stay so: their pods, their index's record and
    their replica's epoch are the same. The slots in ``groups`` (place -> its pods now) are
    redone in the survey's order (look, then resolve, then hold and settle), all that can
    decide anything: no pod outside them is retired (``last`` retired none but theirs). None
    when a decision makes other slots stale (a Replica- or All-scope restart): then only a full
    survey says what."""
    ledger, shape, signals, nodes = made_of
    s = _Surveyor(job, ledger, shape, now, signals)
    s.judged = judged
    slots, states = list(last.slots), {name: Counter(counts) for name, counts in last.states.items()}
    places = sorted(groups)
    if job.spec.progress is not None:  # the hang clock's start (aitj.core.planner.hang)
        kept = (slot.pod for k, slot in enumerate(slots) if k not in groups)
        s.started = hang.latest_start(job, [*kept, *(p for k in places for p in groups[k])])
    for k in places:
        old = slots[k]
        states[old.replica.name][old.state] -= 1
        slots[k] = s.look(old.replica, old.index, groups[k], nodes)
    for k in places:
        if slots[k].failure is not None and slots[k].fail is None:
            slots[k] = s.resolve(slots[k])
    if s.covered:
        return None
    for k in places:
        slots[k] = s.hold(slots[k])
    mine = [slots[k] for k in places]
    released = tuple(x.pod.name for x in mine if x.pod is not None and s.settle(x, ledger))
    if not gate_open(mine, shape.joining):  # the others run
        for k in places:
            slots[k] = waits(slots[k])
    for k in places:
        states[slots[k].replica.name][slots[k].state] += 1
    found = Survey(tuple(slots), tuple(s.retirees), tuple(s.restarts), s.ledger, released, tuple(s.in_place))
    found.__dict__["states"] = {name: +counts for name, counts in states.items()}  # Survey.states, by delta
    astir = {k for k in last._astir if k not in groups} | {
        k for k in places if slots[k].state is not State.RUNNING
    }
    found.__dict__["_astir"] = tuple(sorted(astir))  # Survey.astir, by delta
    found.__dict__["_masters"] = last._masters  # the same slots, in the same places
    return found


class _Surveyor:
    """The survey's working state: the ledger as decisions accumulate, and what they retire."""

    def __init__(self, job: Job, ledger: Ledger, shape: Shape, now: datetime, signals: NodeSignals) -> None:
        self.job = job
        self.now = now
        self.signals = signals
        self.ledger = ledger
        self.keep = shape.keep
        self.joining = shape.joining
        self.wanted = {r.name: frozenset(shape.of(r)) for r in job.spec.replicas}
        self.retirees: list[Retiree] = []
        self.restarts: list[RestartRecord] = []
        self.covered: set[str] = set()  # replicas a Replica/All-scope restart recreates this pass
        self.judged: Judged | None = None
        self.in_place: list[in_place.InPlaceRecord] = []
        self.started: datetime | None = None  # hang.latest_start of the job's pods

    def name(self, replica: str, index: int, generation: int) -> str:
        return self.job.pod_name(replica, index, generation)

    def group(self, pods: Sequence[PodView]) -> dict[tuple[str, int], list[PodView]]:
        """group: the job's pods by (replica, index); the rest are retired as not wanted."""
        specs = {r.name: r for r in self.job.spec.replicas}
        groups: dict[tuple[str, int], list[PodView]] = {}
        for p in pods:
            r = specs.get(p.replica) if p.replica is not None else None
            if p.name in self.keep:
                continue
            if r is None or p.index is None or p.index < 0:
                self.retire(p, RetireReason.NOT_IN_SPEC, f"replica {p.replica} is not in the job's spec")
            elif p.index not in self.wanted[r.name]:
                self.ledger = self.ledger.with_index(r.name, p.index, IndexHistory(ended=p.generation))
                why = f"index {p.index} is not one of the {r.replicas} wanted (scaled away)"
                self.retire(p, RetireReason.SCALED_AWAY, why)
            else:
                groups.setdefault((r.name, p.index), []).append(p)
        return groups

    def look(self, r: ReplicaSpec, i: int, group: list[PodView], nodes: Mapping[str, NodeView]) -> Slot:
        """look: the slot as observed, with the failure of its current pod, if any. An index's
        one pod judged by an earlier pass in the same circumstances (``judged``, ``made_of``)
        takes the same way to ``judge``, where nothing else happens: its slot is that pass's."""
        # A pod restarted in place is judged afresh: its charges are in the ledger's rules.
        if len(group) == 1 and self.judged is not None and group[0].restarts == 0:
            entry = self.judged.get(id(group[0]))
            if entry is not None and entry[0] is group[0] and entry[1] == self.made_of(r, i, group[0], nodes):
                return entry[2]
        record = self.ledger.replica(r.name).index(i)
        if len(group) > 1:
            group = sorted(group, key=lambda p: (p.generation, p.name), reverse=True)
        top = max(record.seen, group[0].generation if group else -1)
        current = group[0] if group and group[0].generation == top else None
        for old in group[1:] if current is not None else group:
            self.retire(old, RetireReason.SUPERSEDED, f"superseded by generation {top}")
        if current is None:
            return self.vacant(r, i, top, record)
        if pod_epoch(current) < self.ledger.replica(r.name).epoch:
            return self.renew(
                Slot(r, i, top, current.name, State.PENDING, current), RetireReason.RESTART_SCOPE
            )
        if current.deleting and record.ended >= top > record.failed:
            # The operator ended this generation itself (scaled away, or rolled back) and its
            # pod is still terminating when the index is wanted again: a scale-in, then a
            # scale-out within the pod's grace period. It is on its way out, not lost: judged,
            # it would be PodForceDeleted and count a restart. Only a pod being deleted is
            # passed over: a ledger that says "ended" of a live pod does not make it go.
            self.retire(current, RetireReason.ENDED, f"generation {top} was ended; it is terminating")
            return Slot(r, i, top + 1, self.name(r.name, i, top + 1), State.CREATE)
        return self.judge(r, i, top, current, nodes)

    def vacant(self, r: ReplicaSpec, i: int, top: int, record: IndexHistory) -> Slot:
        """vacant: the slot of an index with no pod: never seen, ended by the operator, its
        outcome recorded, or vanished (a PodForceDeleted failure)."""
        if top < 0:
            return Slot(r, i, 0, self.name(r.name, i, 0), State.CREATE)
        if record.ended >= top:
            return Slot(r, i, top + 1, self.name(r.name, i, top + 1), State.CREATE)
        name = self.name(r.name, i, top)
        if record.succeeded >= top:
            return Slot(r, i, top, name, State.SUCCEEDED)
        if record.stood >= top:
            return _stood(r, i, top, name)
        return Slot(r, i, top, name, State.PENDING, failure=vanished(name))

    def judge(
        self, r: ReplicaSpec, i: int, top: int, current: PodView, nodes: Mapping[str, NodeView]
    ) -> Slot:
        """judge: the slot of the index's current pod, with its failure, if any. A scale-out's
        pod (``joining``) is not a restart's replacement, even in an index used before: its
        start is the operation's business, judged by scaleTimeout (aitj.core.planner.scaling),
        not by restartTimeout. The slot goes into ``judged`` for the next passes."""
        failure = classify(current, nodes.get(current.node_name) if current.node_name else None, self.signals)
        if failure is None and (r.name, i) not in self.joining:
            failure = restart_timed_out(current, r, self.now)
        if failure is None and current.restarts and current.in_place:  # restarted by our rules only
            failure = self.in_place_restarts(r, i, current)
        if failure is None and hang.watched(self.job, r.name, i):
            failure = hang.hung(self.job, r, i, current, self.started)
        if failure is None and (waits := current.waiting) is not None:  # aitj.core.planner.watchdog
            failure = waiting_failure(r, waits)
        state = {"Succeeded": State.SUCCEEDED, "Running": State.RUNNING}.get(current.phase, State.PENDING)
        if current.deleting and (state is State.RUNNING or failure is not None):
            state = State.PENDING  # on its way out; an exit 0 after a delete is the delete's (classify)
        slot = Slot(r, i, top, current.name, state, current, failure)
        if self.judged is not None:
            self.judged[id(current)] = (current, self.made_of(r, i, current, nodes), slot)
        return slot

    def in_place_restarts(self, r: ReplicaSpec, i: int, pod: PodView) -> Failure | None:
        """in_place_restarts: the pod's in-place restarts charged to their rules; the failure
        of one that escalates (aitj.core.planner.in_place)."""
        found = in_place.observe(self.job, r, i, pod, self.ledger.replica(r.name), self.now)
        for text, history in found.charges:
            self.ledger = self.ledger.with_rule(r.name, i, text, history)
        self.in_place.extend(found.records)
        return found.escalated

    def made_of(
        self, r: ReplicaSpec, i: int, pod: PodView, nodes: Mapping[str, NodeView]
    ) -> tuple[object, ...]:
        """made_of: what ``look`` and ``judge`` read to make the slot of ``pod``, the index's
        current pod, besides the pod and the spec (aitj.core.planner.memo drops ``judged`` when
        the spec changes): the index's ledger record, the replica's epoch, the pod's node's
        view, whether it joins a scale-out, the node signals, and the clock when
        ``restart_timed_out`` reads it."""
        history = self.ledger.replica(r.name)
        node = nodes.get(pod.node_name) if pod.node_name else None
        clock = self.now if restart_timer_runs(pod, r) else None
        # The watched pod's hang verdict reads the job's status and its other pods' starts too.
        hang_clock = (
            hang.clock_start(self.job, pod, self.started) if hang.watched(self.job, r.name, i) else None
        )
        return (
            r.name,
            i,
            history.index(i),
            history.epoch,
            node,
            (r.name, i) in self.joining,
            self.signals,
            clock,
            hang_clock,
        )

    def resolve(self, slot: Slot) -> Slot:
        """resolve: what a failure found by ``look`` leads to (``policy.decide``, then the
        restart limit)."""
        assert slot.failure is not None
        failure = slot.failure
        r, i = slot.replica, slot.index
        record = self.ledger.replica(r.name).index(i)
        if record.failed >= slot.generation:
            return self.renew(slot, RetireReason.RESTART_COUNTED)  # by a pass that did not finish
        if r.name in self.covered:
            return slot  # a Replica/All-scope restart decided earlier in this pass recreates it
        used = rule_budgets.spent(r, self.ledger.replica(r.name), self.now)
        decision = decide(r, self.job.spec.fault_tolerant, slot.failure, {k: b.text for k, b in used.items()})
        if isinstance(decision, RestartDecision):
            count = self.ledger.replica(r.name).restart_count
            if r.restart_limit is not None and count >= r.restart_limit:
                decision = Fail(
                    FailReason.RESTART_LIMIT_EXCEEDED,
                    f"restartLimit {r.restart_limit} of replica {r.name} is used up ({count} restarts), "
                    f"so {slot.failure.cause} is not restarted",
                    decision.trace,
                )
        if isinstance(decision, Fail):
            return replace(
                slot, state=State.FAILED, fail=decision, shortfall=self.exhausted(slot, decision, used)
            )
        if decision.scope is RestartScope.IN_PLACE:  # the pod failed: it was not restarted in place
            failure = slot.failure
            failure = replace(failure, description=f"{failure.description}; {in_place.fallback(slot.pod)}")
            slot, decision = replace(slot, failure=failure), replace(decision, scope=RestartScope.POD)
        self.count_rule(slot, decision)
        self.ledger = self.ledger.with_index(
            r.name, i, IndexHistory(failed=slot.generation, restarts=record.restarts + 1)
        )
        bumped = [r] if decision.scope is RestartScope.REPLICA else []
        if decision.scope is RestartScope.ALL:
            bumped = list(self.job.spec.replicas)
        for b in bumped:
            self.ledger = self.ledger.with_epoch(b.name, self.ledger.replica(b.name).epoch + 1)
            self.covered.add(b.name)
        self.restarts.append(
            RestartRecord(
                r.name, i, slot.generation, slot.name, failure, decision.rule, decision.scope, self.now
            )
        )
        return replace(self.renew(slot, RetireReason.RESTART), restart=decision)

    def exhausted(self, slot: Slot, fail: Fail, used: Mapping[int, rule_budgets.Budget]) -> Shortfall | None:
        """exhausted: the Shortfall of a failure that stands because a rule's budget ran out; until
        its window lets a restart through again (the next pass then restarts it)."""
        if fail.reason is not FailReason.BUDGET_EXHAUSTED or slot.failure is None:
            return None
        check = next(c for c in fail.trace if c.index in used and c.why is RuleWhy.BUDGET_SPENT)
        frees = used[check.index].frees_at
        cause = ShortfallCause.BUDGET_EXHAUSTED
        since = slot.failure.at or self.now
        return Shortfall(slot.replica.name, slot.index, cause, fail.message, since, frees)

    def count_rule(self, slot: Slot, decision: RestartDecision) -> None:
        """count_rule: a restart by a rule goes into its history (budget, backoff) and, with
        excludeNodeSeconds, the failed pod's node into the index's exclusions."""
        fired = next((c.index for c in decision.trace if c.fired), None)
        if fired is None or slot.failure is None:
            return
        r, i = slot.replica, slot.index
        rule = r.rules[fired]
        key = (
            in_place.key(slot.generation, None)
            if rule.restart_scope is RestartScope.IN_PLACE
            else slot.generation
        )
        history, exclusion = rule_budgets.restarted(
            rule, self.ledger.replica(r.name), i, key, slot.pod, slot.failure, self.now
        )
        if history is not None:
            self.ledger = self.ledger.with_rule(r.name, i, decision.rule, history)
        if exclusion is not None:
            self.ledger = self.ledger.with_exclusion(r.name, i, exclusion)

    def hold(self, slot: Slot) -> Slot:
        """hold: a replacement waits out its rule's backoff (State.BACKOFF); a Pending one the
        scheduler cannot place while it keeps off nodes says so (its Shortfall), and once those
        exclusions have expired it is replaced by a pod without them (a pod's affinity cannot
        change)."""
        history = self.ledger.replica(slot.replica.name)
        if slot.state in (State.CREATE, State.REPLACE):
            held = rule_budgets.hold(slot.replica, slot.index, slot.generation, history, self.now)
            return slot if held is None else replace(slot, state=State.BACKOFF, shortfall=held)
        if slot.state is State.PENDING and slot.pod is not None and slot.failure is None:
            if rule_budgets.outlived(slot.replica, slot.index, slot.pod, self.now):
                return self.renew(slot, RetireReason.EXCLUSION_EXPIRED)  # counts no restart
            found = rule_budgets.exclusion_shortfall(slot.replica, slot.index, slot.pod, history, self.now)
            return slot if found is None else replace(slot, shortfall=found)
        return slot

    def settle(self, slot: Slot, before: Ledger) -> bool:
        """settle: record the outcome of a slot whose pod is on its way out (being deleted, or
        finished) and that no decision of this pass replaces: it succeeded, or its failure
        stands. True when the pod's finalizer can go now: the ledger the pass started from (the
        job's status) records that outcome already, so the pod is not needed as the record. The
        pass that first records it writes the status; the status update comes back as a job
        event, and that pass releases it (milliseconds later)."""
        p = slot.pod
        if p is None or slot.state not in (State.SUCCEEDED, State.FAILED) or not (p.deleting or p.terminal):
            return False
        r, gen = slot.replica.name, slot.generation
        outcome = IndexHistory(succeeded=gen) if slot.state is State.SUCCEEDED else IndexHistory(stood=gen)
        self.ledger = self.ledger.with_index(r, slot.index, outcome)
        recorded = before.replica(r).index(slot.index)
        done = recorded.succeeded if slot.state is State.SUCCEEDED else recorded.stood
        return p.tracked and done >= gen

    def retire(self, pod: PodView, reason: RetireReason, text: str) -> None:
        """retire: the operator no longer wants ``pod``."""
        self.retirees.append(Retiree(pod, reason, text))

    def sweep(self, slot: Slot) -> Slot:
        """sweep: replace what this pass's Replica/All-scope restarts made stale."""
        if slot.state.needs_pod:
            return slot
        stale = slot.pod is not None and pod_epoch(slot.pod) < self.ledger.replica(slot.replica.name).epoch
        if stale or (slot.pod is None and slot.replica.name in self.covered):
            return self.renew(slot, RetireReason.RESTART_SCOPE)
        return slot

    def renew(self, slot: Slot, reason: RetireReason) -> Slot:
        """renew: end the slot's generation (retiring its pod) and plan the next one."""
        r, i, gen = slot.replica, slot.index, slot.generation
        self.ledger = self.ledger.with_index(r.name, i, IndexHistory(ended=gen))
        successor = self.name(r.name, i, gen + 1)
        if slot.pod is not None:
            what = {
                RetireReason.RESTART_SCOPE: "restart scope",
                RetireReason.EXCLUSION_EXPIRED: "its node exclusion expired and it cannot be scheduled",
            }.get(reason, "restart")
            if reason is RetireReason.RESTART and slot.failure is not None:
                what += f" ({slot.failure.cause})"
            self.retire(slot.pod, reason, f"{what}: replaced by {successor}")
        state = State.REPLACE if slot.pod is not None else State.CREATE
        return replace(slot, generation=gen + 1, name=successor, state=state, pod=None, fail=None)


def _stood(r: ReplicaSpec, i: int, generation: int, name: str) -> Slot:
    """_stood: an index whose pod had a failure that stands and has since gone (its finalizer
    was released once the ledger recorded it): still failed, and vacant."""
    failure = Failure(FailureKind.POD_FAILED, f"pod {name} failed and was not restarted; it is gone")
    fail = Fail(FailReason.STOOD, f"the failure of generation {generation} stands (recorded)")
    return Slot(r, i, generation, name, State.FAILED, failure=failure, fail=fail)
