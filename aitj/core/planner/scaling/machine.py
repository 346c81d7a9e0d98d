"""The scaling state machine: ``prepare`` (before the survey: which indices have slots) and
``settle`` (after it: what became of the scale-outs).

Pure and clock-free (the caller passes ``now``). The rules are in the package's docstring
(aitj.core.planner.scaling) and in docs/scaling.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from aitj.core.api import Job, JobStatus, ReplicaSpec, ScaleOperation
from aitj.core.observed import PodView
from aitj.core.planner.quick import once
from aitj.core.planner.scaling.operation import (
    FAILED,
    TIMED_OUT,
    Happening,
    Kind,
    Op,
    ReplicaScale,
    Scaling,
    current_indices,
)
from aitj.core.planner.status import pod_list
from aitj.core.planner.survey import Slot, State, Survey
from aitj.core.planner.types import ReplicasPatch

# ---------------------------------------------------------------------------------------------
# Before the survey: which indices have slots


def prepare(job: Job, status: JobStatus, pods: Sequence[PodView], now: datetime, started: bool) -> Scaling:
    """prepare: each replica's slots for this pass, from the current indices, the operation in
    flight and ``replicas``; begins, ends or replaces operations that need no survey to decide.
    ``started``: the job has run (before that an edit applies at once, without an operation)."""
    ops = {
        name: op
        for name, value in (status.scaling or {}).items()
        if (op := Op.from_status(name, value)) is not None
    }
    counter = _Counter(_last_version(status, ops.values()))
    out: list[ReplicaScale] = []
    happened: list[Happening] = []
    patches: list[ReplicasPatch] = []
    for r in job.spec.replicas:
        current = current_indices(status, r.name)
        if current is None:
            current = tuple(range(r.replicas))  # a new job, or one from before scaling existed
        if not started:
            mine = [p for p in pods if p.replica == r.name and p.index is not None]
            target = _target(current, r.replicas, _named(r, mine, current))
            out.append(ReplicaScale(r, target, target))
            continue
        step = _Step(job, r, current, pods, status, now, counter)
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
        status: JobStatus,
        now: datetime,
        counter: _Counter,
    ) -> None:
        self.job, self.r, self.current, self.every, self.status = job, r, current, pods, status
        self.now, self.counter = now, counter
        self.happened: list[Happening] = []
        self.patches: list[ReplicasPatch] = []

    # The replica's pods and the host list, found when an operation needs them: a pass with
    # none in flight and none asked for (most) looks at neither, nor at every pod of the job.
    @once
    def pods(self) -> list[PodView]:
        return [p for p in self.every if p.replica == self.r.name and p.index is not None]

    @once
    def hosts(self) -> frozenset[str]:
        return frozenset(self.status.discovery_hosts or ())

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
    at, wanted = _current_pods(pods), set(current)  # a set: a job may have MAX_REPLICAS indices
    by_name = {p.name: i for i, p in at.items() if i in wanted}
    return tuple(by_name[n] for n in r.scale_in_pods if n in by_name)


def _current_pods(pods: Sequence[PodView]) -> dict[int, PodView]:
    """_current_pods: per index, its newest pod that is not being deleted."""
    at: dict[int, PodView] = {}
    for p in sorted(pods, key=lambda p: p.generation):
        if p.index is not None and not p.deleting:
            at[p.index] = p
    return at


def _last_version(status: JobStatus, ops: Iterable[Op]) -> int:
    """_last_version: the highest operation number in flight or in the history (0: none)."""
    versions = [op.version for op in ops]
    versions += [entry.version for entry in status.scale_history or () if entry.version is not None]
    return max(versions, default=0)


def _after(now: datetime, seconds: int) -> datetime:
    """_after: ``seconds`` after ``now``, rounded up to a whole second: status keeps whole
    seconds, and a deadline read back must not come early."""
    due = now + timedelta(seconds=seconds)
    return due if due.microsecond == 0 else due.replace(microsecond=0) + timedelta(seconds=1)
