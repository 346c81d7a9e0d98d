"""The chaos loop: watch, wait for the jobs to be steady, carry out the schedule (healing
lasting faults and probing the operator between faults), settle, optionally delete the jobs
and look for leftovers, then check the invariants over what the watch saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core import api
from aitj.tools.chaos import faults, inplace, progress
from aitj.tools.chaos.expect import Expected, expected_restarts
from aitj.tools.chaos.history import FaultRecord, History, JobKey, Leftover, OperatorRestart, Probe
from aitj.tools.chaos.invariants import HOLD, Bounds, Check, Recovery, check_all, steady
from aitj.tools.chaos.operators import answers
from aitj.tools.chaos.replay import World
from aitj.tools.chaos.schedule import FaultKind, Planned
from aitj.tools.chaos.watch import Watch

Say = Callable[[str], None]
TICK = 0.25


@dataclass(frozen=True)
class Options:
    namespace: str | None
    selector: str
    plan: tuple[Planned, ...]
    duration: float
    bounds: Bounds = field(default_factory=Bounds)
    delete_jobs: bool = False
    min_gap: float = 2.0  # seconds between faults when the schedule has fallen behind
    target_wait: float = 60.0  # a fault with no eligible target yet waits this long, then is skipped
    warmup: float = 180.0  # jobs steady before the first fault
    settle: float = 150.0  # jobs steady and no pod Terminating after the last one
    training: progress.Settings | None = None  # read the trainings' progress (--progress)


@dataclass
class Result:
    history: History
    expected: Expected
    checks: list[Check]
    recoveries: list[Recovery]
    plan: tuple[Planned, ...]
    skipped: list[tuple[Planned, str]] = field(default_factory=list)
    training: progress.Settings | None = None

    @property
    def violations(self) -> int:
        return sum(len(c.violations) for c in self.checks)


class _Loop:
    def __init__(self, ctx: faults.Context, watch_api: client.ApiClient, opts: Options, say: Say) -> None:
        self.ctx, self.opts, self.say = ctx, opts, say
        self.history = History()
        self.watch = Watch(watch_api, self.history, opts.namespace, opts.selector)
        self.reader = (
            progress.Reader(watch_api, self.history, time.time() - self.watch.now())
            if opts.training is not None
            else None
        )
        self.world = World()
        self._seen = [0, 0, 0]
        self.lasting: list[FaultRecord] = []  # faults to heal
        self.down_since: float | None = None  # an operator the command restarts is down
        self.last_probe = -1.0
        self.skipped: list[tuple[Planned, str]] = []
        self.heal_now = False
        self.probing = False
        self.last_fault = -1e9
        # Jobs a fault hit, until seen disturbed and steady again (or 5 s without a sign).
        self.cooling: dict[JobKey, tuple[float, bool]] = {}

    def now(self) -> float:
        return self.watch.now()

    def jobs(self) -> set[JobKey]:
        return set(self.world.jobs)

    def refresh(self) -> None:
        """refresh: apply the samples the watch added since, in resourceVersion order."""
        h = self.history
        lists: list[list[Any]] = [h.pods, h.nodes, h.jobs]
        new: list[Any] = []
        for i, xs in enumerate(lists):
            n = len(xs)
            new += xs[self._seen[i] : n]
            self._seen[i] = n
        for s in sorted(new, key=lambda s: (s.rv, s.t)):
            self.world.apply(s)

    def tick(self) -> None:
        """tick: catch up with the watch, heal what is due, restart a killed operator, probe."""
        self.refresh()
        if self.reader is not None:
            self.reader.aim(progress.launchers(self.world, sorted(self.jobs())))
        t = self.now()
        self.heal(t)
        self.supervise(t)
        for key, (hit, seen) in list(self.cooling.items()):
            state = cooled(hit, seen, steady(self.world, key, Expected()), t)
            if state is None:
                del self.cooling[key]
            else:
                self.cooling[key] = state
        if self.probing and t - self.last_probe >= 1.0:
            self.last_probe = t
            self.probe()

    def heal(self, t: float) -> None:
        """heal: undo the lasting faults that are due (all of them once ``heal_now``)."""
        for rec in list(self.lasting):
            try:
                if faults.heal(self.ctx, self.world, rec, t, force=self.heal_now):
                    rec.healed = t
                    self.lasting.remove(rec)
            except ApiException as e:
                self.say(f"healing fault {rec.n} failed for now: {e.reason}")

    def supervise(self, t: float) -> None:
        """supervise: start again an operator a fault killed, a second later, or one that
        exited on its own at once (the supervisor's part: a Deployment's restart)."""
        if self.down_since is not None and t > self.down_since + 1.0:
            self.restart_operators()
            self.down_since = None
        elif self.down_since is None and self.ctx.operators.exited():
            self.restart_operators()

    def probe(self) -> None:
        """probe: ask every operator endpoint once; an operator kill is healed once all answer."""
        # This round's probes only (a slice from -0 would be the whole history).
        recent = [Probe(self.now(), url, answers(url) is not None) for url in self.ctx.operators.endpoints]
        self.history.probes.extend(recent)
        if not recent or not all(p.ok for p in recent) or self.down_since is not None:
            return
        for rec in self.history.faults:
            if rec.kind is FaultKind.OPERATOR_KILL and rec.healed is None:
                rec.healed = self.now()

    def restart_operators(self) -> None:
        """restart_operators: start again the operators that are down, and record it."""
        for url, status in self.ctx.operators.restart_dead():
            self.history.restarts.append(OperatorRestart(self.now(), url, status))
            if status is not None:
                self.say(f"t+{self.now():6.1f}s operator {url} exited with status {status}; started again")

    def sleep_until(self, t: float) -> None:
        while self.now() < t:
            self.tick()
            time.sleep(TICK)

    def wait_steady(self, timeout: float, what: str) -> bool:
        deadline = self.now() + timeout
        while self.now() < deadline:
            self.tick()
            jobs = self.jobs()
            calm = all(steady(self.world, k, Expected()) for k in jobs) and not any(
                p.deleting for p in self.world.pods.values()
            )
            if calm and not self.lasting:
                return True
            time.sleep(TICK)
        self.say(f"not steady within {timeout:.0f}s ({what}); the checks will say why")
        return False

    def wait_progress(self, settings: progress.Settings) -> None:
        """wait_progress: until every training read has stepped past where it was at the last
        fault, at most the bound after it (the training check judges what was seen)."""
        last = max((f.t for f in self.history.faults), default=None)
        if last is None:
            return
        while self.now() < last + settings.bound:
            self.tick()
            if progress.caught_up(self.history, last, sorted(self.jobs())):
                return
            time.sleep(1.0)

    def fault(self, p: Planned) -> None:
        give_up = self.now() + self.opts.target_wait
        while True:
            self.tick()
            try:
                # A finished job is no target: nothing in it recovers (its pods stay or go by
                # cleanPodPolicy, deleted with their own grace period, which the operator
                # does not shorten).
                ended = {k for k, s in self.world.jobs.items() if s.phase in api.FINISHED_PHASES}
                busy = set(self.cooling) | {k for rec in self.lasting for k in rec.jobs} | ended
                ok = [k for k in faults.steady_jobs(self.world, self.jobs()) if k not in busy]
                free = sorted(self.jobs() - busy)
                rec = faults.carry_out(self.ctx, self.world, p, ok, self.jobs(), self.now(), free)
                break
            except faults.NoTarget as e:
                if self.now() > give_up:
                    self.skipped.append((p, str(e)))
                    self.say(f"fault {p.n} ({p.kind}) skipped: {e}")
                    return
                time.sleep(TICK)
            except OSError as e:  # the apiserver unreachable (a restart still under way, say)
                rec = FaultRecord(p.n, self.now(), p.kind, "", error=str(e))
                break
        if p.kind is FaultKind.APISERVER_RESTART:
            rec.healed = self.now()
        if p.kind is FaultKind.OPERATOR_KILL and self.ctx.operators.started:
            self.down_since = self.now()
        node_fault = p.kind in (FaultKind.NODE_NOT_READY, FaultKind.NODE_SILENT, FaultKind.DRAIN)
        if node_fault and rec.target:  # a node the fault reached is healed, even if part of it failed
            self.lasting.append(rec)
        lasts = p.kind in (FaultKind.HANG, FaultKind.KILL)  # until its restart is seen
        if lasts and rec.target and rec.error is None:
            self.lasting.append(rec)
        self.history.faults.append(rec)
        self.world.note_fault(rec)
        self.last_fault = self.now()
        for key in rec.jobs:
            self.cooling[key] = (self.now(), False)
        where = f" {rec.target}" if rec.target else ""
        self.say(
            f"t+{rec.t:6.1f}s fault {p.n} {p.kind}{where} {rec.detail}"
            + (f" ERROR {rec.error}" if rec.error else "")
        )

    def delete_jobs(self) -> None:
        custom: Any = client.CustomObjectsApi(self.ctx.api)
        uids = {k: s.uid for k, s in self.world.jobs.items()}
        self.history.deleting_from = self.now()
        for ns, name in sorted(uids):
            custom.delete_namespaced_custom_object(api.GROUP, api.VERSION, ns, api.PLURAL, name)
            self.history.deleted_jobs.append((ns, name))
        deadline = self.now() + self.opts.bounds.recovery
        left: list[Leftover] = []
        while self.now() < deadline:
            self.tick()
            left = [lo for key, uid in sorted(uids.items()) for lo in owned(self.ctx, key, uid)]
            if not left:
                break
            time.sleep(1.0)
        self.history.leftovers = left


def cooled(hit: float, seen: bool, calm: bool, t: float) -> tuple[float, bool] | None:
    """cooled: a job a fault hit at ``hit``, at ``t``: still cooling, as (hit, seen disturbed),
    or None once it was seen disturbed and is steady again, or stayed steady 5 s (the fault
    did not show)."""
    if not calm:
        return hit, True
    if seen or t > hit + 5.0:
        return None
    return hit, seen


def owned(ctx: faults.Context, key: JobKey, uid: str) -> list[Leftover]:
    """owned: objects in the job's namespace that it owns or that carry its pod label."""
    ns, name = key
    core = ctx.core
    policy: Any = client.PolicyV1Api(ctx.api)
    out = []
    for kind, items in (
        ("pod", core.list_namespaced_pod(ns).items),
        ("service", core.list_namespaced_service(ns).items),
        ("secret", core.list_namespaced_secret(ns).items),
        ("configmap", core.list_namespaced_config_map(ns).items),
        ("poddisruptionbudget", policy.list_namespaced_pod_disruption_budget(ns).items),
    ):
        for obj in items:
            meta = obj.metadata
            mine = any(o.uid == uid for o in meta.owner_references or [])
            if mine or (meta.labels or {}).get(api.LABEL_JOB) == name:
                out.append(Leftover(key, kind, meta.name))
    return out


def run(ctx: faults.Context, watch_api: client.ApiClient, opts: Options, say: Say) -> Result:
    """run: the whole chaos run; the Result holds the history and every check."""
    loop = _Loop(ctx, watch_api, opts, say)
    loop.watch.start()
    if loop.reader is not None:
        loop.reader.start()
    try:
        loop.refresh()
        say(f"watching {len(loop.jobs())} jobs; waiting for them to be steady")
        loop.wait_steady(opts.warmup, "before the first fault")
        loop.probing = True
        start = loop.now()
        for p in opts.plan:
            at = max(start + p.at, loop.last_fault + opts.min_gap)
            if at > start + opts.duration:
                loop.skipped.append((p, "the duration was over"))
                continue
            loop.sleep_until(at)
            loop.fault(p)
        loop.wait_steady(opts.settle, "after the last fault")
        if loop.lasting:  # not healed within the settle time: heal now, whatever the checks say
            loop.heal_now = True
            loop.tick()
        loop.sleep_until(loop.now() + 2 * HOLD)  # the last recovery holds (invariants.HOLD)
        if opts.training is not None:
            loop.wait_progress(opts.training)
        if opts.delete_jobs:
            loop.delete_jobs()
    finally:
        loop.watch.stop()
        if loop.reader is not None:
            loop.reader.stop()
    expected = expected_restarts(loop.history)
    checks, recs = check_all(loop.history, expected, opts.bounds)
    checks += inplace.checks(loop.history, expected, opts.bounds)
    if opts.training is not None:
        checks += progress.checks(loop.history, opts.training)
    return Result(loop.history, expected, checks, recs, opts.plan, loop.skipped, opts.training)
