"""The invariants, checked over a run's history. Pure.

Each check returns a ``Check``: how many times it was evaluated and the violations found.

- ``one_live_pod``: never two live pods (``replay.World.live``) for one job, replica and index
  running at once. A replacement still Pending does not count yet: a restart of a pod that is
  itself still Running (a hang, or a Replica/All scope) creates the replacement and then, in
  the same pass, deletes the old pod; for those milliseconds both are live, and neither runs
  the index's workload twice.
- ``restart_counts``: ``status.RestartCount`` as last seen equals, per replica, the count
  ``expect`` works out from the faults, exactly.
- ``recoveries``: after each fault, every job it disturbed is back within the bound: at its
  replica count (less the indices whose failure stands) and Running, or in a finished phase
  with a condition that has a reason and a message.
- ``terminating``: no pod stays Terminating longer than the bound, or than its own grace period
  and a margin when that is longer (nor is left so at the end).
- ``leftovers``: nothing a deleted job owned is left after the bound.
- ``answering``: the operator endpoints never stop answering for longer than the bound, except
  right after a fault that stops an operator on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from aitj.core import api
from aitj.tools.chaos.expect import Expected
from aitj.tools.chaos.history import FaultRecord, History, JobKey, JobSample, NodeSample, PodSample, Probe
from aitj.tools.chaos.replay import World, slot_of, world_of
from aitj.tools.chaos.schedule import OPERATOR_FAULTS

HOLD = 1.0  # seconds a recovered job must stay steady
GRACE_MARGIN = 30.0  # seconds past a pod's own grace period before it counts as stuck Terminating


@dataclass(frozen=True)
class Violation:
    invariant: str
    t: float
    job: str  # "<ns>/<name>", or "" when the violation is not a job's
    message: str


@dataclass
class Check:
    name: str
    checks: int = 0
    violations: list[Violation] = field(default_factory=list)


@dataclass(frozen=True)
class Recovery:
    """Recovery: fault ``n`` and how long its jobs took to be back (None: not within the bound)."""

    n: int
    kind: str
    t: float
    seconds: float | None
    jobs: tuple[JobKey, ...]


@dataclass(frozen=True)
class Bounds:
    recovery: float = 90.0  # a disturbed job back at its replica count
    terminating: float = 90.0  # restartTimeLimit (60 s by default) plus margin
    answering: float = 5.0  # the operator's endpoint silent at most this long
    operator_restart: float = 30.0  # excused after a fault that stops an operator


def job_name(key: JobKey) -> str:
    return f"{key[0]}/{key[1]}"


def one_live_pod(history: History) -> Check:
    """one_live_pod: after every sample, each slot it touches has at most one live pod."""
    check = Check("one live pod per index")
    world = world_of(history)
    reported: set[frozenset[str]] = set()
    for s in history.timeline():
        world.apply(s)
        if isinstance(s, PodSample):
            slots = [s.slot] if s.slot is not None else []
        elif isinstance(s, NodeSample):
            pods = [world.pods[u] for u in world.on_node.get(s.node.name, ())]
            slots = [x for x in {slot_of(p) for p in pods} if x is not None]
        else:
            continue
        for slot in slots:
            check.checks += 1
            live = [p for p in world.live_in(slot) if p.phase == "Running"]
            names = frozenset(p.name for p in live)
            if len(live) > 1 and names not in reported:
                reported.add(names)
                check.violations.append(
                    Violation(
                        check.name,
                        s.t,
                        job_name(slot[:2]),
                        f"{len(live)} live pods for replica {slot[2]} index {slot[3]}: "
                        + ", ".join(sorted(names)),
                    )
                )
    return check


def restart_counts(history: History, expected: Expected) -> Check:
    """restart_counts: the last RestartCount seen of every job equals the expected one."""
    check = Check("RestartCount exact")
    last = {}
    for j in history.jobs:
        if not j.gone:
            last[j.key] = j
    for key, sample in sorted(last.items()):
        want: Mapping[str, int] = expected.counts.get(key, {})
        maybe: Mapping[str, int] = expected.maybe.get(key, {})
        have = sample.restart_count
        for replica in sorted(set(want) | set(have) | set(maybe)):
            check.checks += 1
            low = want.get(replica, 0)
            high = low + maybe.get(replica, 0)
            if not low <= have.get(replica, 0) <= high:
                called = f"{low}" if low == high else f"{low} to {high} (node blips)"
                check.violations.append(
                    Violation(
                        check.name,
                        sample.t,
                        job_name(key),
                        f"RestartCount.{replica} is {have.get(replica, 0)}, the faults called for {called}",
                    )
                )
    return check


def steady(world: World, key: JobKey, expected: Expected) -> bool:
    """_steady: the job is where its policies want it: Running with every wanted index running
    (less failures that stand), or finished with a condition saying why."""
    sample = world.jobs.get(key)
    if sample is None or sample.job is None:
        return False
    if sample.phase in api.FINISHED_PHASES:
        cond = sample.condition
        return bool(cond.get("reason")) and bool(cond.get("message"))
    if sample.phase != api.Phase.RUNNING:
        return False
    for r in sample.job.spec.replicas:
        vacant = {i for i in expected.vacant(key, r.name) if i < r.replicas}
        if world.running_count(key, r.name) != r.replicas - len(vacant):
            return False
    return True


def recoveries(history: History, expected: Expected, bounds: Bounds) -> tuple[Check, list[Recovery]]:
    """recoveries: for each fault that disturbs jobs, the first moment after it, once a job was
    seen disturbed, when all its jobs are steady again. A fault whose jobs never look
    disturbed (an exit code that stands, say) recovers at once."""
    faults = sorted((f for f in history.faults if f.error is None and f.jobs), key=lambda f: f.t)
    return _judged(faults, _recovery_times(history, expected, faults), bounds)


@dataclass
class Recovering:
    """Recovering: one fault whose jobs are followed until they hold steady (``see``).
    ``disturbed``: its jobs seen not steady since it; ``since``: all of them steady since."""

    fault: FaultRecord
    disturbed: set[JobKey] = field(default_factory=set)
    since: float | None = None

    def took(self, start: float) -> float:
        """took: the recovery time if the jobs were steady from ``start`` on (0: never disturbed)."""
        return max(0.0, start - self.fault.t) if self.disturbed else 0.0

    def see(self, t: float, is_calm: Callable[[JobKey], bool]) -> float | None:
        """see: the fault's recovery time once its jobs have held steady for HOLD at ``t``
        (``is_calm`` says whether a job is steady now), None until then. Until a job was seen
        disturbed, steadiness counts only a second after the fault healed: the fault's effect
        may not show yet."""
        f = self.fault
        self.disturbed.update(k for k in f.jobs if not is_calm(k))
        settled = bool(self.disturbed) or t > (f.healed or f.t) + 1.0
        if not (settled and all(is_calm(k) for k in f.jobs)):
            self.since = None
            return None
        # Steady for a second: the job's status catches up with its pods a little later
        # (Restarting, then Running), so the first steady moment may not be the last.
        if self.since is None:
            self.since = t
        return self.took(self.since) if t - self.since >= HOLD else None


def _recovery_times(history: History, expected: Expected, faults: list[FaultRecord]) -> dict[int, float]:
    """_recovery_times: how long each fault's jobs took to be steady again, by fault number
    (a fault missing: never, or the history ended first without them steady)."""
    pending = {f.n: Recovering(f) for f in faults}
    done: dict[int, float] = {}
    world = world_of(history)
    calm: dict[JobKey, bool] = {}

    def is_calm(key: JobKey) -> bool:
        if key not in calm:  # not touched since the start: judge it now
            calm[key] = steady(world, key, expected)
        return calm[key]

    for s in history.timeline():
        if history.deleting_from is not None and s.t >= history.deleting_from:
            break  # the command deleted the jobs: nothing recovers from that
        world.apply(s)
        for key in _touched(world, s):
            calm[key] = steady(world, key, expected)
        for n, r in list(pending.items()):
            if s.t >= r.fault.t and (took := r.see(s.t, is_calm)) is not None:
                done[n] = took
                del pending[n]
    # Steady when the history ended, if not yet for HOLD: recovered from then.
    done.update({n: r.took(r.since) for n, r in pending.items() if r.since is not None})
    return done


def _judged(
    faults: list[FaultRecord], done: dict[int, float], bounds: Bounds
) -> tuple[Check, list[Recovery]]:
    """_judged: each fault's Recovery, and a violation for each not back within the bound."""
    check = Check("back at replica count")
    out = []
    for f in faults:
        check.checks += 1
        took = done.get(f.n)
        if took is not None and took > bounds.recovery:
            took = None
        if took is None:
            check.violations.append(
                Violation(
                    check.name,
                    f.t,
                    ", ".join(job_name(k) for k in f.jobs),
                    f"fault {f.n} ({f.kind} {f.target}): not back within {bounds.recovery:.0f}s",
                )
            )
        out.append(Recovery(f.n, str(f.kind), f.t, took, f.jobs))
    return check, out


def _touched(world: World, s: PodSample | NodeSample | JobSample) -> set[JobKey]:
    """_touched: the jobs whose steadiness a sample may change."""
    if isinstance(s, JobSample):
        return {s.key}
    if isinstance(s, PodSample):
        return {(s.pod.namespace, s.pod.job)} if s.pod.job else set()
    return {(p.namespace, p.job) for u in world.on_node.get(s.node.name, ()) if (p := world.pods[u]).job}


def terminating(history: History, bounds: Bounds) -> Check:
    """terminating: how long each pod stayed Terminating (first seen deleting until gone, or
    the end of the history); longer than the bound is a violation."""
    check = Check("no pod left Terminating")
    since: dict[str, tuple[float, PodSample]] = {}
    spans: list[tuple[PodSample, float, float]] = []
    for s in sorted(history.pods, key=lambda p: (p.rv, p.t)):
        uid = s.pod.uid
        if s.gone:
            if uid in since:
                start, first = since.pop(uid)
                spans.append((first, start, s.t))
        elif s.pod.deleting and uid not in since:
            since[uid] = (s.t, s)
    spans += [(first, start, history.end) for start, first in since.values()]
    for first, start, stop in spans:
        check.checks += 1
        # A pod the operator does not replace (its rules do not restart it) ends on the
        # kubelet's clock: its own grace period, then SIGKILL (the seed's trainers: 300 s,
        # and bash as PID 1, which ignores SIGTERM). Past that it is stuck.
        bound = max(bounds.terminating, (first.pod.deletion_grace_seconds or 0) + GRACE_MARGIN)
        if stop - start > bound:
            check.violations.append(
                Violation(
                    check.name,
                    start,
                    f"{first.pod.namespace}/{first.pod.job}",
                    f"pod {first.pod.name} Terminating for {stop - start:.0f}s (bound {bound:.0f}s)",
                )
            )
    return check


def leftovers(history: History) -> Check:
    """leftovers: each object found after a deleted job's bound is a violation."""
    check = Check("nothing left after delete")
    check.checks = len(history.deleted_jobs)
    for lo in history.leftovers:
        check.violations.append(
            Violation(check.name, history.end, job_name(lo.job), f"{lo.kind} {lo.name} left behind")
        )
    return check


def answering(history: History, bounds: Bounds) -> Check:
    """answering: each endpoint's silent spans (consecutive failed probes, first to last), less
    those that start within ``operator_restart`` of a fault that stops an operator, or of the
    command starting that endpoint's operator again after it exited on its own (a leader that
    lost its Lease through an apiserver restart: the exit is by design, the restart is what a
    Deployment does; ``History.restarts`` keeps each one for the report)."""
    check = Check("operator answering")
    excused = [f.t for f in history.faults if f.kind in OPERATOR_FAULTS and f.error is None]
    restarted: dict[str, list[float]] = {}
    for r in history.restarts:
        restarted.setdefault(r.endpoint, []).append(r.t)
    by_endpoint: dict[str, list[Probe]] = {}
    for p in sorted(history.probes, key=lambda p: p.t):
        by_endpoint.setdefault(p.endpoint, []).append(p)
    for endpoint, probes in sorted(by_endpoint.items()):
        check.checks += len(probes)
        for start, stop in _silences(probes):
            if stop - start <= bounds.answering:
                continue
            if any(
                t - 1.0 <= start <= t + bounds.operator_restart for t in excused + restarted.get(endpoint, [])
            ) and (stop - start <= bounds.operator_restart):
                continue
            check.violations.append(
                Violation(check.name, start, "", f"{endpoint} did not answer for {stop - start:.1f}s")
            )
    return check


def _silences(probes: Sequence[Probe]) -> list[tuple[float, float]]:
    """_silences: spans from a failed probe to the next one that answered (or the last probe)."""
    out, start = [], None
    for p in probes:
        if not p.ok and start is None:
            start = p.t
        elif p.ok and start is not None:
            out.append((start, p.t))
            start = None
    if start is not None:
        out.append((start, probes[-1].t))
    return out


def check_all(history: History, expected: Expected, bounds: Bounds) -> tuple[list[Check], list[Recovery]]:
    """check_all: every invariant, in the report's order, and the recoveries."""
    recovered, recs = recoveries(history, expected, bounds)
    checks = [
        one_live_pod(history),
        restart_counts(history, expected),
        recovered,
        terminating(history, bounds),
        leftovers(history),
        answering(history, bounds),
    ]
    return checks, recs
