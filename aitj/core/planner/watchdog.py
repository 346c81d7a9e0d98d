"""The recovery watchdog (issue 46): after a recovery, training must step again; a rank still
waiting in the ring the fault broke is found from the training's own log and restarted.

Pure. Why: a worker killed at once (the OOM killer's SIGKILL) leaves the surviving ranks to
notice it; one that has already re-formed waits in Horovod's new rendezvous for every worker of
the world to report, and one still blocked in a Gloo collective of the old ring reports only
when Gloo's own timeout ends the collective (the seed sets 300 s): training stands still that
long although every pod runs (docs/bench.md, "A stall that only Gloo's timeout ends"). Horovod's
driver lets a worker go when its host leaves the discovery list, and the operator takes a pod's
host out of the list the moment it deletes the pod: restarting the waiting rank's pod ends the
wait, and its replacement joins the next ring.

What the operator reads (aitj.controller.training_watch; aitj.core.trainlog): the master's log,
in which the trainings the project ships print, per rank, ``<host> rank <r>/<size>: step ...``
and, at every re-forming, ``... reset: world size now ...``. After the job's latest recorded
restart (``status.restarts``), until training steps at the width the job wants: once ``bound``
has passed with no step since the restart or since the last step, whichever is later,

- if a host of the ring that broke (one that stepped before the silence) has printed a reset
  since, a new ring forms without the others: those that have not are waiting (a survivor
  blocked in a Gloo collective of the old ring, the SIGKILL case);
- if none has, the ranks of the last ring but rank 0 are (a re-forming in which every worker
  waits in ``hvd.init`` for one that never registers: found on real nodes, the rank 1 of a
  width-2 ring stuck in Horovod's reinitialisation while rank 0 and the new worker waited in the
  rendezvous; docs/bench.md). Rank 0's host is kept: Horovod carries the state over through a
  host of the old ring, and with none left the driver gives the job up. Its pod, if it is still one of
the job's running pods that predates the restart, is marked (``PodView.waiting``), and the
survey makes that a ``stall`` failure, which the watchdog's own rung restarts with scope Pod
(aitj.core.policy.decide), counted like any restart and charged to restartLimit.

Off where no such line was ever read (no signal), and while nothing recovers: a training that
slows, or checkpoints for minutes, with no restart behind it is never a stall (spec.progress's
hang detection is for that). ``bound``: ten times rank 0's p99 gap between steps, at least
FLOOR_SECONDS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aitj.core.api import JobStatus
from aitj.core.observed import PodView
from aitj.core.trainlog import TrainingSeen, Waiting
from aitj.core.wire import parse_time

FLOOR_SECONDS = 30.0
CADENCES = 10  # the bound in rank 0's p99 gaps between steps
RING_SECONDS = 5.0  # hosts whose last steps are this close to the newest were in the last ring


def bound(seen: TrainingSeen) -> float:
    """bound: how long after a recovery training may take to step again (seconds)."""
    cadence = seen.cadence
    return max(FLOOR_SECONDS, CADENCES * cadence) if cadence is not None else FLOOR_SECONDS


def recovered_at(status: JobStatus) -> float | None:
    """recovered_at: when the job's latest restart was decided (epoch seconds), None if none."""
    times = [parse_time(r.time) for r in status.restarts or ()]
    known = [t.timestamp() for t in times if t is not None]
    return max(known, default=None)


def host_pod(host: str) -> str:
    """host_pod: the pod a training's host names (its hostname, or ``<pod>.<service>``)."""
    return host.split(".", 1)[0]


def waiting(
    status: JobStatus, seen: TrainingSeen | None, pods: Iterable[PodView], wanted: int | None
) -> Mapping[str, Waiting]:
    """waiting: by pod name, the job's running pods whose host waits in a ring that does not
    form, as ``seen`` (None: never read) tells: after the job's latest recovery, training has
    not stepped at the ``wanted`` width (None: any), and has been silent for ``bound`` since the
    recovery or since its last step, whichever is later (empty otherwise)."""
    since = recovered_at(status)
    if seen is None or seen.last_step is None or since is None:
        return {}
    if seen.last_step >= since and (wanted is None or (seen.width or 0) >= wanted):
        return {}  # back at full width
    quiet = max(since, seen.last_step)
    silent = seen.read_at - quiet
    if silent < bound(seen):
        return {}
    # The ranks of the ring that broke: the hosts that stepped before the silence began.
    ring = {h: s for h, s in seen.hosts.items() if s.step is not None and s.step <= quiet}
    re_formed = {h for h, s in ring.items() if s.reset is not None and s.reset >= quiet}
    if re_formed:  # a new ring forms without the others
        late = {host_pod(h) for h in ring if h not in re_formed}
        others = ", ".join(sorted(map(host_pod, re_formed)))
        why = f"its rank has not joined the new ring that {others} re-formed"
    else:  # nobody re-formed: the ranks but rank 0 of the last ring, whose host carries the state
        latest = max(s.step or 0.0 for s in ring.values()) if ring else 0.0
        last_ring = {h: s for h, s in ring.items() if s.step is not None and latest - s.step <= RING_SECONDS}
        late = {host_pod(h) for h, s in last_ring.items() if s.rank not in (None, 0)}
        why = "no rank re-formed; rank 0 of the last ring is kept to carry the state"
    stuck = {
        p.name
        for p in pods
        if p.name in late and p.running and p.created is not None and p.created.timestamp() <= quiet
    }
    words = (
        f"stall: no step for {int(silent)} s after the restart; {why} "
        f"(recovery watchdog, bound {int(bound(seen))} s)"
    )
    return {name: Waiting(quiet, words) for name in stuck}
