"""Width: the workers whose pods run while the training runs without them (issue 46).

Pure. Why: every pod of a job may be Running while its training runs short. The seed's trainers
run sshd as their first process, so a worker's Python that dies leaves its pod Running, and
Horovod 0.28 does not take the host back (seen on real nodes: Horovod trained at 2 of 3 for
good while ``kubectl get aitj`` said 3 of 3 and not degraded); a replacement Horovod lost the
notice of runs beside a ring that never takes it in. The pods say nothing; the training's own
log does (aitj.core.trainlog, read by the recovery watchdog, aitj.controller.training_watch).

A worker is **out of the ring** when the master's log, as last read, shows the training stepping
(a step line within STEPPING_SECONDS of the read) at a world size below the worker slots the job
wants, and the worker's pod runs (a current pod of a worker slot, not being deleted, not a
scale-out's joining pod) while its host's newest step line is LAG_SECONDS or more older than the
ring's, or it has none. It has been out since that line, or since its pod ran, whichever is
later. Once out for OUT_SECONDS, its index is a Shortfall with cause ``OutOfRing``: the job is
degraded (``status.degraded``, the ``DEGRADED`` column, the Degraded Event). The recovery
watchdog restarts such a pod where it can tell why (aitj.core.planner.watchdog: ``left_ring``,
``left_out``); this says so where it cannot, or until it has.
"""

from __future__ import annotations

from datetime import UTC, datetime

from aitj.core.api import ReplicaType
from aitj.core.planner.shortfall import Shortfall, ShortfallCause
from aitj.core.planner.survey_terms import State, Survey
from aitj.core.trainlog import TrainingSeen

STEPPING_SECONDS = 10.0  # the ring steps: its newest step line is this recent at the read
LAG_SECONDS = 10.0  # every rank prints each step line within a moment; a host this far behind is out
OUT_SECONDS = 30.0  # out this long: a shortfall (the issue's: shown within 60 s of the fault)


def training(found: Survey) -> TrainingSeen | None:
    """training: the master's log as the recovery watchdog last read it (None: not read)."""
    return next((s.pod.training for s in found.masters if s.pod is not None and s.pod.training), None)


def out_of_ring(
    found: Survey, joining: frozenset[tuple[str, int]] = frozenset()
) -> tuple[tuple[Shortfall, ...], float | None]:
    """out_of_ring: the Shortfalls of the workers out of the ring for OUT_SECONDS, and in how
    many seconds after the read the next one would be (None: no other worker is out)."""
    seen = training(found)
    if seen is None or seen.last_step is None or seen.width is None:
        return (), None
    if seen.read_at - seen.last_step > STEPPING_SECONDS:
        return (), None  # not stepping: a stall's or a hang's business, not the width's
    workers = [
        s
        for s in found.slots
        if s.replica.replica_type is ReplicaType.WORKER and (s.replica.name, s.index) not in joining
    ]
    if seen.width >= len(workers):
        return (), None
    short: list[Shortfall] = []
    soonest: float | None = None
    for s in workers:
        p = s.pod
        if s.state is not State.RUNNING or p is None or p.deleting or p.running_since is None:
            continue
        host = seen.hosts.get(p.name)
        last = host.step if host is not None else None
        if last is not None and last >= seen.last_step - LAG_SECONDS:
            continue  # in the ring
        since = max(last or 0.0, p.running_since.timestamp())
        out_for = seen.read_at - since
        if out_for < OUT_SECONDS:
            left = OUT_SECONDS - out_for
            soonest = left if soonest is None else min(soonest, left)
            continue
        words = (
            f"pod {p.name} runs, but its worker has not stepped for {int(out_for)} s while the training "
            f"steps at world size {seen.width} of {len(workers)} (its own log)"
        )
        at = datetime.fromtimestamp(since, UTC)
        short.append(Shortfall(s.replica.name, s.index, ShortfallCause.OUT_OF_RING, words, at))
    return tuple(short), soonest
