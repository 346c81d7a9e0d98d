"""Scaling: ``replicas`` edits of a job that has run, as scale operations (issue 6).

Pure and clock-free (the caller passes ``now``). ``aitj.core.planner.plan`` asks ``prepare`` which
indices each replica has slots for in this pass, surveys them (``aitj.core.planner.survey``), asks
``settle`` what became of the operations in flight (a scale-out's pods all run, or one failed
for good, or time is up), and writes the result with ``write_status``, ``events`` and the
spec patch of a rollback. docs/scaling.md is the user-facing description.

Everything an operation needs to go on lives in the job's status, so any pass (after an
operator crash too) picks it up where the last written status left it:

- ``currentReplicas.<r>`` and ``vacantIndices.<r>``: the indices the job runs with, i.e. the
  ``currentReplicas`` smallest indices that are not vacant. Named pods scaled in
  (``scaleInpods``) leave their index vacant; a scale-out fills vacant indices first.
- ``scaling.<r>``: the operation in flight for replica ``r``, if any.
- ``scaleHistory``: finished operations (and rollbacks), oldest first, bounded.

An operation begins when ``replicas`` differs from the current count of a job that has run
(before that, an edit just changes what is created):

- **scaleout**: the next free indices get slots. Their pods are kept out of the discovery host
  list until every one of them is Running; then, in one pass, they join the list and the
  current indices. Not all Running within ``scaleTimeout`` seconds, or one failed for good:
  the operation is rolled back. Its pods are removed and ``replicas`` is patched back to the
  current count (a JSON patch that first tests the value, so a newer edit wins); the operation
  stays in status, as ``rollback``, until the spec says the current count again.
- **scalein**: the pods named in ``scaleInpods`` leave first, then the highest indices. Those
  in the host list leave it at once and are kept ``scaleInGracePeriod`` seconds for their
  workers to stop; then they are deleted. Pods that were not in the list go at once.
- An edit while an operation is in flight replaces it; the new one starts from the current
  indices. A scale-out's pods that are still wanted are kept; pods that were leaving are the
  first to leave again, or rejoin the list when the edit undoes the scale-in.

The "job version" of the seed's Scaling message is the operation's number: 1 for the job's
first, as in the seed (``job version 1`` after one edit, where metadata.generation is 2).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from aitj.core.api import MAX_REPLICAS, MAX_SCALE_HISTORY, Job, Phase, ReplicaSpec, ScaleOperation
from aitj.core.observed import PodView
from aitj.core.planner.status import REASON_SCALING, Condition, pod_list
from aitj.core.planner.survey import Shape, Slot, State, Survey
from aitj.core.planner.types import Event, ReplicasPatch
from aitj.core.wire import format_time, is_int, mapping, parse_time, strings

REASON_ROLLBACK = "TrainingJobScaleRollback"  # condition reason while a rollback is under way

# scaleHistory[].reason
SUCCEEDED = "ScaleSucceeded"
TIMED_OUT = "ScaleTimeout"
FAILED = "ScaleFailed"
CANCELLED = "ScaleCancelled"

# Event reasons
EVENT_SCALING = "TrainingJobScaling"  # an operation began (Normal)
EVENT_SCALED = "TrainingJobScaled"  # it finished (Normal)
EVENT_ROLLBACK = "TrainingJobScaleRollback"  # a scale-out was rolled back (Warning)
EVENT_CANCELLED = "TrainingJobScaleCancelled"  # an edit replaced an operation in flight (Normal)


@dataclass(frozen=True)
class Op:
    """Op: one scale operation of one replica, as kept in ``status.scaling.<replica>``.

    ``indices``: added (scaleout, rollback) or leaving (scalein). ``deadline``: when a
    scale-out is rolled back, or when a scale-in's pods are deleted. ``draining``: scale-in
    pods out of the host list, kept alive until the deadline. ``reason``/``message``: why a
    rollback happened."""

    replica: str
    operation: ScaleOperation
    version: int
    generation: int
    source: int  # replicas before ("from")
    target: int  # replicas asked for ("to")
    indices: tuple[int, ...]
    started: datetime
    deadline: datetime
    pods: tuple[str, ...] = ()
    draining: tuple[str, ...] = ()
    reason: str = ""
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "operation": self.operation.value,
            "version": self.version,
            "generation": self.generation,
            "from": self.source,
            "to": self.target,
            "indices": list(self.indices),
            "pods": list(self.pods),
            "started": format_time(self.started),
            "deadline": format_time(self.deadline),
        }
        if self.draining:
            out["draining"] = list(self.draining)
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        return out

    @classmethod
    def from_json(cls, replica: str, value: object) -> Op | None:
        """from_json reads the wire form; anything unreadable is no operation."""
        if not isinstance(value, Mapping):
            return None
        try:
            operation = ScaleOperation(str(value.get("operation")))
        except ValueError:
            return None
        started, deadline = parse_time(value.get("started")), parse_time(value.get("deadline"))
        numbers = [n for k in ("version", "generation", "from", "to") if is_int(n := value.get(k))]
        indices = value.get("indices")
        if started is None or deadline is None or len(numbers) != 4:
            return None
        if not isinstance(indices, list) or not all(is_int(i) and i >= 0 for i in indices):
            return None
        version, generation, source, target = numbers
        return cls(
            replica=replica,
            operation=operation,
            version=version,
            generation=generation,
            source=source,
            target=target,
            indices=tuple(sorted(set(indices))),
            started=started,
            deadline=deadline,
            pods=strings(value.get("pods")),
            draining=strings(value.get("draining")),
            reason=str(value.get("reason") or ""),
            message=str(value.get("message") or ""),
        )


class Kind(enum.Enum):
    """Kind: what happened to an operation in this pass."""

    BEGAN = "began"
    SUCCEEDED = "succeeded"
    ROLLED_BACK = "rolledback"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Happening:
    """Happening: an operation began, finished, was rolled back or was replaced by an edit
    (``by``: the replicas the edit asked for)."""

    kind: Kind
    op: Op
    by: int | None = None


@dataclass(frozen=True)
class ReplicaScale:
    """ReplicaScale: one replica in this pass. ``current``: its current indices after the
    pass; ``slots``: the indices surveyed; ``joining``: slots kept out of the host list;
    ``keep``: scale-in pods kept alive out of the list; ``op``: in flight after the pass."""

    replica: ReplicaSpec
    current: tuple[int, ...]
    slots: tuple[int, ...]
    joining: tuple[int, ...] = ()
    keep: tuple[str, ...] = ()
    op: Op | None = None


@dataclass(frozen=True)
class Scaling:
    """Scaling: every replica's ReplicaScale, what happened, and the rollback spec patches."""

    replicas: tuple[ReplicaScale, ...]
    happenings: tuple[Happening, ...] = ()
    patches: tuple[ReplicasPatch, ...] = ()

    @property
    def shape(self) -> Shape:
        """shape: what the survey needs: slots per replica, pods kept, joining slots."""
        return Shape(
            indices={rs.replica.name: rs.slots for rs in self.replicas},
            keep=frozenset(n for rs in self.replicas for n in rs.keep),
            joining=frozenset((rs.replica.name, i) for rs in self.replicas for i in rs.joining),
        )

    @property
    def ops(self) -> tuple[Op, ...]:
        """ops: the operations in flight after this pass, in replica order."""
        return tuple(rs.op for rs in self.replicas if rs.op is not None)


# ---------------------------------------------------------------------------------------------
# Before the survey: which indices have slots


def prepare(
    job: Job, status: Mapping[str, Any], pods: Sequence[PodView], now: datetime, started: bool
) -> Scaling:
    """prepare: each replica's slots for this pass, from the current indices, the operation in
    flight and ``replicas``; begins, ends or replaces operations that need no survey to decide.
    ``started``: the job has run (before that an edit applies at once, without an operation)."""
    ops = {
        name: op
        for name, value in mapping(status.get("scaling")).items()
        if (op := Op.from_json(name, value)) is not None
    }
    counter = _Counter(_last_version(status, ops.values()))
    hosts = frozenset(str(h) for h in status.get("discoveryHosts") or ())
    out: list[ReplicaScale] = []
    happened: list[Happening] = []
    patches: list[ReplicasPatch] = []
    for r in job.spec.replicas:
        current = current_indices(status, r.name)
        if current is None:
            current = tuple(range(r.replicas))  # a new job, or one from before scaling existed
        mine = [p for p in pods if p.replica == r.name and p.index is not None]
        if not started:
            target = _target(current, r.replicas, _named(r, mine, current))
            out.append(ReplicaScale(r, target, target))
            continue
        step = _Step(job, r, current, mine, hosts, now, counter)
        out.append(step.run(ops.get(r.name)))
        happened += step.happened
        patches += step.patches
    return Scaling(tuple(out), tuple(happened), tuple(patches))


class _Counter:
    """Numbers operations: the next one is one more than any seen."""

    def __init__(self, last: int) -> None:
        self.last = last

    def next(self) -> int:
        """next: the number of a new operation."""
        self.last += 1
        return self.last


class _Step:
    """The decision for one replica of a job that has run."""

    def __init__(
        self,
        job: Job,
        r: ReplicaSpec,
        current: tuple[int, ...],
        pods: Sequence[PodView],
        hosts: frozenset[str],
        now: datetime,
        counter: _Counter,
    ) -> None:
        self.job, self.r, self.current, self.pods, self.hosts = job, r, current, pods, hosts
        self.now, self.counter = now, counter
        self.happened: list[Happening] = []
        self.patches: list[ReplicasPatch] = []

    def run(self, op: Op | None) -> ReplicaScale:
        """run: a rollback waits for its patch (asked again) until replicas is the current
        count; an operation whose target replicas still asks for goes on; any other edit
        ends it (cancelled, or replaced) and begins what replicas asks for now."""
        r, current, want = self.r, self.current, self.r.replicas
        steady = ReplicaScale(r, current, current)
        if op is not None and op.operation is ScaleOperation.ROLLBACK:
            if want == op.target:  # the patch that sets replicas back has not landed yet
                self.patches.append(ReplicasPatch(r.name, op.target, len(current)))
                return replace(steady, op=op)
            if want == len(current):
                return steady  # it has: the rollback is over
            op = None  # an edit of the user's own replaced the failed target: a new operation
        elif op is not None and op.target == want:
            return self.go_on(op)
        if want == len(current):
            if op is not None:
                self.happened.append(Happening(Kind.CANCELLED, op, want))
            return steady
        if want > len(current):
            if op is not None and op.operation is ScaleOperation.SCALE_IN:
                self.happened.append(Happening(Kind.CANCELLED, op, want))
            return self.scale_out()
        if op is not None and op.operation is ScaleOperation.SCALE_OUT:
            self.happened.append(Happening(Kind.CANCELLED, op, want))
        return self.scale_in(op if op is not None and op.operation is ScaleOperation.SCALE_IN else None)

    def go_on(self, op: Op) -> ReplicaScale:
        """go_on: the operation in flight still has what ``replicas`` asks for."""
        r, current = self.r, self.current
        if op.operation is ScaleOperation.SCALE_OUT:
            slots = tuple(sorted({*current, *op.indices}))
            return ReplicaScale(r, current, slots, joining=op.indices, op=op)
        return self.drain(op)

    def scale_out(self) -> ReplicaScale:
        r, current = self.r, self.current
        target = _target(current, r.replicas, ())
        added = tuple(i for i in target if i not in current)
        op = Op(
            replica=r.name,
            operation=ScaleOperation.SCALE_OUT,
            version=self.counter.next(),
            generation=self.job.generation,
            source=len(current),
            target=r.replicas,
            indices=added,
            started=_after(self.now, 0),
            deadline=_after(self.now, r.scale_timeout),
        )
        self.happened.append(Happening(Kind.BEGAN, op))  # its pods are named by settle
        return ReplicaScale(r, current, target, joining=added, op=op)

    def scale_in(self, before: Op | None) -> ReplicaScale:
        """scale_in: named pods first, then the ones a replaced scale-in had chosen, then the
        highest indices. Pods in the host list drain; a replaced scale-in's draining pods go on
        draining until its deadline."""
        r, current = self.r, self.current
        again = tuple(reversed(before.indices)) if before is not None else ()
        leaving = _choose(current, len(current) - r.replicas, (*_named(r, self.pods, current), *again))
        at = _current_pods(self.pods)
        names = tuple(at[i].name for i in leaving if i in at)
        fresh = [n for n in names if n in self.hosts]
        carried = [n for n in names if before is not None and n in before.draining and n not in fresh]
        if fresh:
            deadline = _after(self.now, r.scale_in_grace_period)
        elif carried and before is not None:
            deadline = before.deadline
        else:
            deadline = self.now
        op = Op(
            replica=r.name,
            operation=ScaleOperation.SCALE_IN,
            version=self.counter.next(),
            generation=self.job.generation,
            source=len(current),
            target=r.replicas,
            indices=leaving,
            started=_after(self.now, 0),
            deadline=deadline,
            pods=names,
            draining=tuple(n for n in names if n in fresh or n in carried),
        )
        self.happened.append(Happening(Kind.BEGAN, op))
        return self.drain(op)

    def drain(self, op: Op) -> ReplicaScale:
        """drain: keep the draining pods until the deadline, then let every leaving pod go."""
        r, current = self.r, self.current
        rest = tuple(i for i in current if i not in op.indices)
        if self.now >= op.deadline:
            self.happened.append(Happening(Kind.SUCCEEDED, op))
            return ReplicaScale(r, rest, rest)
        alive = {p.name for p in self.pods if not p.deleting}
        keep = tuple(n for n in op.draining if n in alive)
        return ReplicaScale(r, current, rest, keep=keep, op=op)


# ---------------------------------------------------------------------------------------------
# After the survey: what became of the scale-outs


def settle(job: Job, scaling: Scaling, found: Survey, now: datetime) -> tuple[Scaling, bool]:
    """settle names the pods of scale-outs and ends those whose pods all run (success), one of
    which failed for good, or whose scaleTimeout is up (both rolled back). True: the slots
    changed, so the caller surveys again."""
    replicas: list[ReplicaScale] = []
    happened = list(scaling.happenings)
    patches = list(scaling.patches)
    reshaped = False
    for rs in scaling.replicas:
        op = rs.op
        if op is None or op.operation is not ScaleOperation.SCALE_OUT:
            replicas.append(rs)
            continue
        slots = [s for s in found.of(rs.replica.name) if s.index in op.indices]
        named = replace(op, pods=tuple(s.name for s in slots))
        happened = [replace(h, op=named) if h.op is op else h for h in happened]
        failed = [s for s in slots if s.state is State.FAILED]
        if slots and all(s.state is State.RUNNING for s in slots):
            happened.append(Happening(Kind.SUCCEEDED, named))
            replicas.append(ReplicaScale(rs.replica, rs.slots, rs.slots))
        elif failed or now >= op.deadline:
            back = _rollback(rs.replica, named, slots, failed)
            happened.append(Happening(Kind.ROLLED_BACK, back))
            patches.append(ReplicasPatch(rs.replica.name, op.target, len(rs.current)))
            replicas.append(ReplicaScale(rs.replica, rs.current, rs.current, op=back))
            reshaped = True
        else:
            replicas.append(replace(rs, op=named))
    return Scaling(tuple(replicas), tuple(happened), tuple(patches)), reshaped


def _rollback(r: ReplicaSpec, op: Op, slots: Sequence[Slot], failed: Sequence[Slot]) -> Op:
    """_rollback: the scale-out ``op`` turned into its rollback, saying why."""
    if failed:
        s = failed[0]
        what = s.failure.description if s.failure is not None else "it failed"
        why = f"; {s.fail.message}" if s.fail is not None else ""
        reason, text = FAILED, f"pod {s.name} failed: {what}{why}"
    else:
        late = [s.name for s in slots if s.state is not State.RUNNING]
        reason = TIMED_OUT
        text = f"pods {pod_list(late)} were not Running within scaleTimeout {r.scale_timeout}s"
    return replace(op, operation=ScaleOperation.ROLLBACK, reason=reason, message=text)


# ---------------------------------------------------------------------------------------------
# What the pass writes and says


def write_status(status: Mapping[str, Any], scaling: Scaling, now: datetime) -> dict[str, Any]:
    """write_status: ``status`` with currentReplicas, vacantIndices, scaling and scaleHistory
    as this pass leaves them (empty maps are dropped)."""
    out = dict(status)
    out["currentReplicas"] = {rs.replica.name: len(rs.current) for rs in scaling.replicas}
    vacant = {rs.replica.name: v for rs in scaling.replicas if (v := vacant_indices(rs.current))}
    ops = {op.replica: op.to_json() for op in scaling.ops}
    for key, value in (("vacantIndices", vacant), ("scaling", ops)):
        if value:
            out[key] = value
        else:
            out.pop(key, None)
    entries = [_entry(h, now) for h in scaling.happenings if h.kind is not Kind.BEGAN]
    if entries:
        out["scaleHistory"] = ([*list(status.get("scaleHistory") or ()), *entries])[-MAX_SCALE_HISTORY:]
    return out


def _entry(h: Happening, now: datetime) -> dict[str, Any]:
    """_entry: the scaleHistory entry of an operation that ended in this pass."""
    op = h.op
    operation, reason = op.operation, SUCCEEDED
    if h.kind is not Kind.SUCCEEDED:
        operation = ScaleOperation.ROLLBACK
        reason = CANCELLED if h.kind is Kind.CANCELLED else op.reason
    return {
        "time": format_time(now),
        "started": format_time(op.started),
        "replica": op.replica,
        "operation": operation.value,
        "version": op.version,
        "generation": op.generation,
        "from": op.source,
        "to": op.target,
        "pods": list(op.pods),
        "reason": reason,
        "message": outcome_message(h),
    }


def events(job: Job, scaling: Scaling) -> tuple[Event, ...]:
    """events: one Event per operation that began, finished, was rolled back or replaced. Each
    is named after the job (uid included), the operation's number and what happened, so a
    pass planned again from a status not yet back in the operator's cache records it once."""
    out = []
    for h in scaling.happenings:
        name = f"{job.name}.{job.uid[:8] or 'job'}.scale-{h.op.version}-{h.kind.value}"
        if h.kind is Kind.BEGAN:
            out.append(Event("Normal", EVENT_SCALING, message(job, h.op), name))
        elif h.kind is Kind.SUCCEEDED:
            out.append(Event("Normal", EVENT_SCALED, outcome_message(h), name))
        elif h.kind is Kind.ROLLED_BACK:
            out.append(Event("Warning", EVENT_ROLLBACK, outcome_message(h), name))
        else:
            out.append(Event("Normal", EVENT_CANCELLED, outcome_message(h), name))
    return tuple(out)


def message(job: Job, op: Op) -> str:
    """message: the seed's Scaling message (a rollback's names the operation it undoes)."""
    verb = op.operation.value
    what = ScaleOperation.SCALE_OUT.value if op.operation is ScaleOperation.ROLLBACK else verb
    text = (
        f"trainingJob {job.namespace}/{job.name} {verb} Operation {what} scale num {len(op.indices)} "
        f"scale pods {pod_list(op.pods)}, replicas name {op.replica} job version {op.version}"
    )
    if op.operation is ScaleOperation.ROLLBACK:
        text += f": {op.message}; replicas set back to {op.source}"
    return text


def outcome_message(h: Happening) -> str:
    """outcome_message: how an operation ended, for its Event and its scaleHistory entry."""
    op = h.op
    head = f"replica {op.replica}: {_verb(op)} from {op.source} to {op.target} (job version {op.version})"
    if h.kind is Kind.SUCCEEDED and op.operation is ScaleOperation.SCALE_OUT:
        return f"{head} done: pods {pod_list(op.pods)} are running and in the host list"
    if h.kind is Kind.SUCCEEDED:
        grace = _seconds(op.deadline - op.started)
        drained = f", {grace}s after leaving the host list" if op.draining else ""
        return f"{head} done: pods {pod_list(op.pods)} deleted{drained}"
    if h.kind is Kind.ROLLED_BACK:
        removed = f"pods {pod_list(op.pods)} removed, replicas set back to {op.source}"
        return f"{head} rolled back: {op.message}; {removed}"
    stays = "removed" if op.operation is ScaleOperation.SCALE_OUT else "stay"
    return f"{head} cancelled by an edit of replicas to {h.by}: pods {pod_list(op.pods)} {stays}"


def _verb(op: Op) -> str:
    """_verb: what the operation is (a rollback undoes a scaleout)."""
    return ScaleOperation.SCALE_OUT.value if op.operation is ScaleOperation.ROLLBACK else op.operation.value


def _seconds(delta: timedelta) -> int:
    return max(int(delta.total_seconds()), 0)


def conditions(job: Job, scaling: Scaling) -> tuple[Condition | None, Condition | None]:
    """conditions: (the Scaling condition an operation that began or was rolled back in this
    pass sets, the one an operation still in flight keeps). None when there is none."""
    now = None
    for h in scaling.happenings:
        if h.kind is Kind.BEGAN:
            now = Condition(Phase.SCALING, REASON_SCALING, message(job, h.op))
            break
        if h.kind is Kind.ROLLED_BACK:
            now = Condition(Phase.SCALING, REASON_ROLLBACK, message(job, h.op))
            break
    busy = None
    for op in scaling.ops:
        reason = REASON_ROLLBACK if op.operation is ScaleOperation.ROLLBACK else REASON_SCALING
        busy = Condition(Phase.SCALING, reason, message(job, op), keep=True)
        break
    return now, busy


def wake(scaling: Scaling, now: datetime) -> list[float]:
    """wake: seconds until an operation in flight falls due (rollback, or deleting drained pods)."""
    return [
        max((op.deadline - now).total_seconds(), 0.0)
        for op in scaling.ops
        if op.operation is not ScaleOperation.ROLLBACK
    ]


# ---------------------------------------------------------------------------------------------
# Index sets


def current_indices(status: Mapping[str, Any], replica: str) -> tuple[int, ...] | None:
    """current_indices: the replica's current indices from status (None: not recorded yet)."""
    count = mapping(status.get("currentReplicas")).get(replica)
    if not is_int(count) or not 0 <= count <= MAX_REPLICAS:
        return None
    vacant = {i for i in mapping(status.get("vacantIndices")).get(replica) or () if is_int(i)}
    out: list[int] = []
    i = 0
    while len(out) < count:
        if i not in vacant:
            out.append(i)
        i += 1
    return tuple(out)


def vacant_indices(current: Sequence[int]) -> list[int]:
    """vacant_indices: the indices below the highest current one that are not current."""
    have = set(current)
    return [i for i in range(max(current, default=0)) if i not in have]


def _target(current: tuple[int, ...], want: int, first: Sequence[int]) -> tuple[int, ...]:
    """_target: ``want`` indices: the current ones plus the smallest free ones, or the current
    ones less ``first`` (then the highest)."""
    if want >= len(current):
        have, out, i = set(current), list(current), 0
        while len(out) < want:
            if i not in have:
                out.append(i)
            i += 1
        return tuple(sorted(out))
    leaving = set(_choose(current, len(current) - want, first))
    return tuple(i for i in current if i not in leaving)


def _choose(current: tuple[int, ...], count: int, first: Iterable[int]) -> tuple[int, ...]:
    """_choose: ``count`` of the current indices: ``first`` (in order), then the highest."""
    chosen: list[int] = []
    for i in (*first, *sorted(current, reverse=True)):
        if len(chosen) == count:
            break
        if i in current and i not in chosen:
            chosen.append(i)
    return tuple(sorted(chosen))


def _named(r: ReplicaSpec, pods: Sequence[PodView], current: tuple[int, ...]) -> tuple[int, ...]:
    """_named: indices of the current pods named in scaleInpods, in the order named."""
    at = _current_pods(pods)
    by_name = {p.name: i for i, p in at.items() if i in current}
    return tuple(by_name[n] for n in r.scale_in_pods if n in by_name)


def _current_pods(pods: Sequence[PodView]) -> dict[int, PodView]:
    """_current_pods: per index, its newest pod that is not being deleted."""
    at: dict[int, PodView] = {}
    for p in sorted(pods, key=lambda p: p.generation):
        if p.index is not None and not p.deleting:
            at[p.index] = p
    return at


def _last_version(status: Mapping[str, Any], ops: Iterable[Op]) -> int:
    """_last_version: the highest operation number in flight or in the history (0: none)."""
    versions = [op.version for op in ops]
    for entry in status.get("scaleHistory") or ():
        v = mapping(entry).get("version")
        if is_int(v):
            versions.append(v)
    return max(versions, default=0)


def _after(now: datetime, seconds: int) -> datetime:
    """_after: ``seconds`` after ``now``, rounded up to a whole second: status keeps whole
    seconds, and a deadline read back must not come early."""
    due = now + timedelta(seconds=seconds)
    return due if due.microsecond == 0 else due.replace(microsecond=0) + timedelta(seconds=1)
