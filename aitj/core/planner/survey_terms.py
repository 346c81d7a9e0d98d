"""The survey's terms: an index's ``Slot`` and its ``State``, which indices have one
(``Shape``, decided by aitj.core.planner.scaling), the pods a pass no longer wants and why
(``Retiree``), the gate that holds the masters back until the workers run, what a survey
found (``Survey``), and which slots a later pass may keep as they are (``clean``).

Pure. Apart from aitj.core.planner.survey (which exports them too) so that it holds the
decisions only.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from aitj.core.api import ReplicaSpec, ReplicaType
from aitj.core.observed import PodView
from aitj.core.planner.in_place import InPlaceRecord
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.quick import once, quick_init
from aitj.core.planner.shortfall import Shortfall
from aitj.core.planner.types import RestartRecord
from aitj.core.policy import Fail, Failure, RestartDecision


class RetireReason(enum.StrEnum):
    """RetireReason: why the operator no longer wants a pod."""

    NOT_IN_SPEC = "NotInSpec"  # its replica is not in the job's spec (or it has no index)
    SCALED_AWAY = "ScaledAway"  # its index is not one of those wanted
    SUPERSEDED = "Superseded"  # a higher generation of its index exists
    RESTART = "Restart"  # the old pod of a restart counted in this pass
    RESTART_COUNTED = "RestartCounted"  # its failure was counted by a pass that did not finish
    RESTART_SCOPE = "RestartScope"  # a Replica- or All-scope restart recreates it
    EXCLUSION_EXPIRED = "ExclusionExpired"  # unschedulable while it kept off nodes no longer excluded
    ENDED = "Ended"  # its generation was ended (scaled away) and it is terminating; the index is wanted again

    @property
    def restart(self) -> bool:
        """restart: the pod is the old pod of a restart, so restartTimeLimit applies to its
        termination."""
        return self not in (RetireReason.NOT_IN_SPEC, RetireReason.SCALED_AWAY, RetireReason.ENDED)


@dataclass(frozen=True)
class Retiree:
    """Retiree: a pod the operator no longer wants, why (``reason``), and the same for people
    (``text``: the deletion's reason in logs and ``aitj explain``)."""

    pod: PodView
    reason: RetireReason
    text: str

    @property
    def restart(self) -> bool:
        """restart: see RetireReason.restart."""
        return self.reason.restart


@dataclass(frozen=True)
class Shape:
    """Shape: which indices of each replica have a slot in this pass (aitj.core.planner.scaling
    decides it). ``indices``: by replica name; a replica missing from it has ``0 .. replicas-1``.
    ``keep``: pod names left alone (scale-in pods out of the host list, waiting for their grace
    period): neither slots nor retired, never judged. ``joining``: (replica, index) of scale-out
    slots not in the host list yet; they do not hold the launcher back."""

    indices: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    keep: frozenset[str] = frozenset()
    joining: frozenset[tuple[str, int]] = frozenset()

    def of(self, r: ReplicaSpec) -> tuple[int, ...]:
        found = self.indices.get(r.name)
        return tuple(range(r.replicas)) if found is None else found


class State(enum.Enum):
    """State of a slot after this pass's decisions."""

    CREATE = "create"  # no pod: create one at ``generation``
    REPLACE = "replace"  # the current pod is retired; its successor is created at ``generation``
    WAITING = "waiting"  # a master that needs a pod but waits until every worker runs
    BACKOFF = "backoff"  # needs a pod, and waits out its rule's backoff first (``Slot.shortfall``)
    PENDING = "pending"  # the pod exists and has not reached Running yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a failure that is not restarted: failPolicy judges it

    @property
    def in_progress(self) -> bool:
        """in_progress: the index is on its way to Running."""
        return self in (State.CREATE, State.REPLACE, State.WAITING, State.BACKOFF, State.PENDING)

    @property
    def needs_pod(self) -> bool:
        return self in (State.CREATE, State.REPLACE, State.WAITING, State.BACKOFF)


@quick_init
@dataclass(frozen=True)
class Slot:
    """Slot: one index of one replica. ``generation`` and ``name`` are those of the pod the
    index has after this pass (the successor's, when one is to be created). ``pod`` is the
    observed current pod, if any. ``failure``/``fail``: the failure found and, when it stands,
    why it is not restarted; ``restart``: when this pass restarts it, the rule engine's verdict
    (its trace is what ``aitj explain`` shows). ``shortfall``: what holds the index back (a
    backoff, a used-up rule budget, an excluded node; aitj.core.planner.rule_budgets)."""

    replica: ReplicaSpec
    index: int
    generation: int
    name: str
    state: State
    pod: PodView | None = None
    failure: Failure | None = None
    fail: Fail | None = None
    restart: RestartDecision | None = None
    shortfall: Shortfall | None = None


def gate_open(slots: Sequence[Slot], joining: frozenset[tuple[str, int]] = frozenset()) -> bool:
    """gate_open: no worker index is on its way (each is running, succeeded or failed for
    good). Masters (the launcher) are created only then. Scale-out slots (``joining``) do not
    count: the launcher runs without them until they join."""
    return not any(
        s.state.in_progress
        for s in slots
        if s.replica.replica_type is ReplicaType.WORKER and (s.replica.name, s.index) not in joining
    )


def gate(slots: list[Slot], joining: frozenset[tuple[str, int]]) -> list[Slot]:
    """gate: ``slots`` with the masters that need a pod WAITING while the gate is shut."""
    if gate_open(slots, joining):
        return slots
    return [waits(s) for s in slots]


def waits(s: Slot) -> Slot:
    """waits: ``s`` as the shut gate leaves it: a master that needs a pod WAITING."""
    if s.replica.replica_type is ReplicaType.MASTER and s.state.needs_pod and s.state is not State.BACKOFF:
        return replace(s, state=State.WAITING)
    return s


def clean(slot: Slot, group: Sequence[PodView]) -> bool:
    """clean: ``slot``, made of the pods ``group``, runs its one pod with no failure. Its verdict
    reads no clock (no restartTimeout, backoff or budget is read for a running, healthy pod), no
    other slot's, and of the ledger only its index's record and its replica's epoch: what lets
    ``resurvey`` keep it while those are the same."""
    return slot.state is State.RUNNING and slot.failure is None and len(group) == 1 and group[0] is slot.pod


@quick_init
@dataclass(frozen=True)
class Survey:
    """Survey: the slots, the pods to retire, the restarts this pass decided (each restarted
    slot keeps its ``RestartDecision``), the ledger with this pass's
    decisions, and ``released``: pods the slots keep (succeeded, or failed for good) that are on
    their way out and whose outcome the ledger the pass started from already records, so their
    finalizer goes (the operator never holds a pod it does not need)."""

    slots: tuple[Slot, ...]
    retirees: tuple[Retiree, ...]
    restarts: tuple[RestartRecord, ...]
    ledger: Ledger  # with this pass's decisions
    released: tuple[str, ...] = ()
    in_place: tuple[InPlaceRecord, ...] = ()  # the in-place restarts charged (aitj.core.planner.in_place)

    def of(self, replica: str) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.replica.name == replica)

    @once
    def astir(self) -> tuple[Slot, ...]:
        """astir: the slots that do not run, in order: all a part that looks for slots to
        create, wait for, or fail has to look at (found once per survey; ``resurvey`` keeps
        them by delta, the others it keeps run)."""
        return tuple(self.slots[k] for k in self._astir)

    @once
    def _astir(self) -> tuple[int, ...]:
        return tuple(k for k, s in enumerate(self.slots) if s.state is not State.RUNNING)

    @property
    def masters(self) -> tuple[Slot, ...]:
        """masters: the slots of master replicas (``resurvey`` keeps where they are)."""
        return tuple(self.slots[k] for k in self._masters)

    @once
    def _masters(self) -> tuple[int, ...]:
        return tuple(k for k, s in enumerate(self.slots) if s.replica.replica_type is ReplicaType.MASTER)

    @once
    def states(self) -> Mapping[str, Counter[State]]:
        """states: per replica, how many of its slots are in each state (the status's counts;
        counted once per survey, and ``resurvey`` keeps them by delta)."""
        out: dict[str, Counter[State]] = {}
        for (name, state), n in Counter((s.replica.name, s.state) for s in self.slots).items():
            out.setdefault(name, Counter())[state] = n
        return out
