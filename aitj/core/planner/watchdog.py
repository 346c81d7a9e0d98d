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
restart (``status.restarts``), until training steps at the width the job wants: with no step
since the restart or since the last step, whichever is later, the workers that have left the
ring that broke since the silence began (horovodrun's driver logs
``record state: <host>[<slot>] = READY`` for each, or the training printed its reset line) are
moving on, and the survivors of the ring that broke that have not are waiting: a survivor
blocked in a Gloo collective of the old ring, the SIGKILL case (seen on real nodes: the other
survivor reported READY at once, the blocked one never), once ``late_bound`` has passed since
the first of them moved on. With no worker moving on, nothing tells
which rank waits, and nothing is marked (``escalation``, three bounds on, is for that: seen, a
re-forming in which every worker reported READY and rank 1 of the width-2 ring then stayed in
Horovod's reinitialisation while rank 0 and the new worker waited in the rendezvous). One
survivor is always kept:
Horovod carries the state over through a host of the old ring, and with none left its driver
gives the job up (seen: a first version restarted both survivors of a SIGKILL, and the job
ended).

A survivor is a host of the ring that broke (one that stepped before the silence) whose pod is
still the job's, running, and older than the silence. A waiting survivor's pod is marked
(``PodView.waiting``), and the survey makes that a ``stall`` failure, which the watchdog's own
rung restarts with scope Pod (aitj.core.policy.decide), counted like any restart and charged
to restartLimit.

``left_ring``, outside recoveries too: a Running pod in the host list whose worker horovodrun's
driver recorded failed (``record state: <host>[<slot>] = FAILURE``) after the pod started, and
that has not stepped since, is out of the ring for good (Horovod 0.28 blacklists the host); the
survey makes that a ``leftRing`` failure, restarted by the same rung. ``left_out``: so is a
Running pod listed for OUT_SECONDS that Horovod never took into the ring while it steps.

Off where no such line was ever read (no signal), and while nothing recovers: a training that
slows, or checkpoints for minutes, with no restart behind it is never a stall (spec.progress's
hang detection is for that). ``bound``: ten times rank 0's p99 gap between steps, at least
FLOOR_SECONDS. A survivor is judged late sooner, ``late_bound`` after the first worker moved on
(one and a half of the same gaps, at least LATE_FLOOR_SECONDS): that a new ring forms without it is the
stronger sign, and a survivor that is merely slow reports within a step or two (seen: the other
survivor of a SIGKILL reported READY within a second, every time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from aitj.core.api import ExceptionalEvent, JobStatus, ReplicaSpec, RestartEntry
from aitj.core.observed import PodView
from aitj.core.policy import Failure, FailureKind
from aitj.core.trainlog import TrainingSeen, Waiting
from aitj.core.wire import parse_time

FLOOR_SECONDS = 30.0
CADENCES = 10  # the bound in rank 0's p99 gaps between steps
# A survivor still in the old ring this long after another worker moved on is late. Seen on real
# nodes (py-spy and ss, taken 8 s after a SIGKILL): the survivor that moved on reported READY
# within a second, and the late one waited in the old ring's allreduce on that survivor's
# sockets, which Horovod's reset leaves open and silent: only Gloo's timeout ends that wait. At
# a 10 s floor a SIGKILL cost about 20 s; at the first version's 30 s, about 40 s. A survivor
# that is not stuck moves on within a step of the first (the READY records of every worker of a
# re-forming that completed: 3 ms apart at p50, 0.17 s at most, in the 241 of a bench run's
# launcher log of 140 faults, 2026-11-28; the seed steps every 0.08 s).
LATE_FLOOR_SECONDS = 1.5
# ... or one and a half of rank 0's p99 gaps between step lines, where longer: a survivor still
# in a step reaches the collective, and fails there, within one (the seed's prints a line every
# 10 steps, about 1.1 s at p99: ten such gaps made every late survivor cost 11 s more, three 2 s).
LATE_CADENCES = 1.5
# A fault's time is the kubelet's finishedAt, in whole seconds: a step line within that second
# may be the broken ring's last (seen: rank 0's step 0.1 s before its SIGKILL, in the second the
# exit was stamped with, taken for training running again, and the recovery never watched).
GRAIN_SECONDS = 1.0
# Every rank prints each step line within a moment: a host whose newest step is this far behind
# the ring's last one had left the ring before (a scale-in's pod running out its grace period).
RING_LAG_SECONDS = 10.0
GONE_SLACK_SECONDS = 0.5  # every rank prints a step line within a moment of the others


def gone(restarts: Iterable[RestartEntry]) -> frozenset[str]:
    """gone: the pods the job's latest fault took (its restarts decided within GRAIN_SECONDS of
    the latest: two trainers force-deleted at once are two)."""
    times = [(t.timestamp(), r.pod) for r in restarts if (t := parse_time(r.time)) is not None and r.pod]
    latest = max((t for t, _ in times), default=None)
    return frozenset(p for t, p in times if latest is not None and t >= latest - GRAIN_SECONDS)


def stepping_since(seen: TrainingSeen, at: float, taken: frozenset[str] = frozenset()) -> bool:
    """stepping_since: the log shows the ring re-formed after the fault at ``at`` and stepping: a
    step line past the fault's second, after the training's latest reset line, itself after the
    fault where the training prints reset lines. A reset line alone is a re-forming under way.
    Steps with no reset since the fault are the old ring's, still running: a force-deleted worker
    steps until its kill, 2 s on (seen: the ring stepped 2.6 s past a force delete, the recovery
    was taken as done, and a survivor left in a Gloo collective by the kill waited out its 300 s).
    Nor is a step a host of a ``taken`` pod printed too: a job's first fault comes before any
    reset line (the Horovod script prints its first at its first re-forming)."""
    if seen.last_step is None or seen.last_step <= at + GRAIN_SECONDS:
        return False
    old = [h.step for name, h in seen.hosts.items() if host_pod(name) in taken and h.step is not None]
    if old and seen.last_step <= max(old) + GONE_SLACK_SECONDS:
        return False
    resets = [h.reset for h in seen.hosts.values() if h.reset is not None]
    if resets and max(resets) < at:
        return False
    return seen.last_step > max(resets, default=at)


def stepped_at_width(
    seen: TrainingSeen, since: float, wanted: int | None, taken: frozenset[str] = frozenset()
) -> bool:
    """stepped_at_width: ``stepping_since`` the fault at ``since`` (which ``taken`` pods), at the
    ``wanted`` width (None: any)."""
    return stepping_since(seen, since, taken) and (wanted is None or (seen.width or 0) >= wanted)


def bound(seen: TrainingSeen) -> float:
    """bound: how long after a recovery training may take to step again (seconds)."""
    cadence = seen.cadence
    return max(FLOOR_SECONDS, CADENCES * cadence) if cadence is not None else FLOOR_SECONDS


def late_bound(seen: TrainingSeen) -> float:
    """late_bound: how long after the first worker left the broken ring a survivor may take to
    leave it too (seconds)."""
    cadence = seen.cadence
    return max(LATE_FLOOR_SECONDS, LATE_CADENCES * cadence) if cadence is not None else LATE_FLOOR_SECONDS


def recovered_at(status: JobStatus) -> float | None:
    """recovered_at: when the fault behind the job's latest restart happened (its
    ``failureTime`` where the cluster says, else when the restart was decided; epoch seconds),
    None if none. The fault's own time: the workers that leave the broken ring do so at once,
    seconds before the operator decides the restart (a container's exit is seen 2 s later)."""
    latest = max(status.restarts or (), key=lambda r: r.time or "", default=None)
    if latest is None:
        return None
    at = parse_time(latest.failure_time) or parse_time(latest.time)
    return at.timestamp() if at is not None else None


def host_pod(host: str) -> str:
    """host_pod: the pod a training's host names (its hostname, or ``<pod>.<service>``)."""
    return host.split(".", 1)[0]


def moved_on(seen: TrainingSeen, since: float) -> Mapping[str, float]:
    """moved_on: the hosts that have left the ring that broke (the driver's READY, or the
    training's reset) since it last stepped, and when: a new ring forms, and it waits for the
    others. They leave at the fault itself, which may come before the time recorded for it
    (``since``): a failure's time is whole seconds, and horovodrun's driver records a worker
    killed inside its pod when its ssh session ends (seen: the other survivor's READY at 26.995,
    the FAILURE record at 27.08, stamped 27, and nothing was marked while a third rank waited
    out Gloo's 300 s)."""
    assert seen.last_step is not None
    left = {h: max(s.joined or 0.0, s.reset or 0.0) for h, s in seen.hosts.items()}
    return {h: t for h, t in left.items() if t > max(seen.last_step, since - GRAIN_SECONDS)}


def waiting(
    status: JobStatus, seen: TrainingSeen | None, pods: Iterable[PodView], wanted: int | None
) -> Mapping[str, Waiting]:
    """waiting: by pod name, the job's running pods whose host waits in a ring that does not
    form, as ``seen`` (None: never read) tells: after the job's latest recovery, training has
    not stepped at the ``wanted`` width (None: any) since the recovery or since its last step,
    whichever is later, and a worker left the ring that broke ``late_bound`` ago while these did
    not (empty otherwise)."""
    since = recovered_at(status)
    if seen is None or seen.last_step is None or since is None:
        return {}
    if stepped_at_width(seen, since, wanted, gone(status.restarts or ())):
        return {}  # back at full width
    quiet = max(since, seen.last_step)
    moved = moved_on(seen, since)
    if not moved:
        return {}  # no new ring is forming: nothing tells which rank waits
    first = min(moved.values())
    if seen.read_at - first < late_bound(seen):
        return {}
    # The ranks of the ring that broke (hosts that stepped with it, within RING_LAG_SECONDS of
    # its last step before the silence: not a host that left it before, like a scale-in's pod
    # that runs out its grace period) whose pods are still the job's, running, and older than
    # the silence: the survivors.
    alive = {p.name for p in pods if p.running and p.created is not None and p.created.timestamp() <= quiet}
    stepped = {h: s.step for h, s in seen.hosts.items() if s.step is not None and s.step <= quiet}
    last = max(stepped.values(), default=0.0)
    ring = {h: seen.hosts[h] for h, t in stepped.items() if t >= last - RING_LAG_SECONDS}
    survivors = {h: s for h, s in ring.items() if host_pod(h) in alive}
    late = {h for h in survivors if h not in moved}
    if late and len(late) == len(survivors):  # keep one to carry the state: the lowest-ranked
        late.discard(min(late, key=lambda h: (survivors[h].rank is None, survivors[h].rank or 0, h)))
    # The words name times, not lengths: the marks are compared read after read (a change is
    # logged and kicks the job's pass), and a length would change at every read.
    why = (
        f"its worker has not left the old ring, as {', '.join(sorted(map(host_pod, moved)))} "
        f"did at {_clock(first)}"
    )
    stuck = {host_pod(h) for h in late}
    words = (
        f"stall: no step since {_clock(quiet)}, after the restart; {why} "
        f"(recovery watchdog, bound {late_bound(seen):.1f} s)"
    )
    return {name: Waiting(quiet, words) for name in stuck}


def left_ring(
    seen: TrainingSeen | None, pods: Iterable[PodView], listed: frozenset[str]
) -> Mapping[str, Waiting]:
    """left_ring: by pod name, the job's running pods in the host list (``listed``) whose
    worker horovodrun's driver recorded failed since the pod was made, and which has not stepped
    since: the worker process died inside a pod that runs on (the seed's trainers run sshd as
    their first process, so a crashed or OOM-killed worker leaves the pod Running), or the pod
    was restarted in place after its worker died (an ``InPlace`` rule: same pod, same host name),
    and Horovod has blacklisted the host, for good in 0.28. Only a new pod, under a new name,
    brings the width back."""
    if seen is None:
        return {}
    found: dict[str, Waiting] = {}
    for p in pods:
        if not p.running or p.deleting or p.name not in listed or p.created is None:
            continue
        hs = seen.hosts.get(p.name)
        if hs is None or hs.left is None or hs.left < p.created.timestamp():
            continue
        if hs.step is not None and hs.step > hs.left:
            continue  # it came back (horovodrun's blacklist cooldown)
        words = (
            "left the ring: horovodrun's driver recorded its worker failed while the pod runs on, "
            "and Horovod does not take the host back (recovery watchdog)"
        )
        found[p.name] = Waiting(hs.left, words, left=True)
    return found


ESCALATIONS = 3  # the escalation: silent this many bounds after the latest restart


def waiting_failure(r: ReplicaSpec, waits: Waiting) -> Failure | None:
    """waiting_failure: the failure a pod of replica ``r`` marked by the watchdog stands for: a
    rank out of the ring (``leftRing``) or still waiting in it (``stall``), which the watchdog's
    own rung restarts; the escalation's ``hang`` where a rule of ``r`` names ``hang`` (the
    watchdog is on by default: a job that did not ask for hang restarts is never failed by one),
    else, when no worker moved on or horovodrun's driver is held (``alone``: ``escalation``,
    ``driver_blocked``), ``ringHung``, the whole job restarted by its rung."""
    since = datetime.fromtimestamp(waits.since, UTC)
    if waits.hang:
        if any(ExceptionalEvent.HANG in rule.events for rule in r.rules):
            return Failure(FailureKind.HANG, waits.description, at=since)
        return Failure(FailureKind.RING_HUNG, waits.description, at=since) if waits.alone else None
    kind = FailureKind.LEFT_RING if waits.left else FailureKind.STALL
    return Failure(kind, waits.description, at=since)


def escalation(
    status: JobStatus, seen: TrainingSeen | None, master: PodView | None, wanted: int | None
) -> Mapping[str, Waiting]:
    """escalation: by pod name, the master pod marked ``hang`` when training has not stepped
    for ESCALATIONS bounds since the job's latest restart (or since its last step, whichever is
    later) and not at the ``wanted`` width since that restart: the ranks restarted (if any could
    be told) did not bring it back, and nothing tells which rank waits (seen: a re-forming in
    which every worker reported READY, and no collective completed again). The survey raises it
    as the exceptional event ``hang`` on the master, which a rule of the master's replica that
    names ``hang`` restarts, with the scope it gives (the replica, or the whole job): the job's
    own rules, the next rung after the ranks. Where none does, and no worker has left the ring
    that broke since (``alone``: the survivors all wait in a collective of the old ring, which
    only the framework's own timeout ends, the seed's 300 s; seen once in 40 double force
    deletes), the watchdog's rung restarts every pod of the job (``ringHung``, scope All): a
    slow start (a checkpoint's load) shows workers moving on, and is left alone."""
    since = recovered_at(status)
    if seen is None or seen.last_step is None or since is None or master is None or not master.running:
        return {}
    if stepped_at_width(seen, since, wanted, gone(status.restarts or ())):
        return {}
    quiet = max(since, seen.last_step)
    silent = seen.read_at - quiet
    if silent < ESCALATIONS * bound(seen):
        return {}
    alone = not moved_on(seen, since)
    who = "no worker has left the ring that broke" if alone else "nothing tells which rank waits"
    words = (
        f"hang: no step since {_clock(quiet)}, after the latest restart, and {who} "
        f"(recovery watchdog, {ESCALATIONS} x its bound of {int(bound(seen))} s)"
    )
    return {master.name: Waiting(quiet, words, hang=True, alone=alone)}


# horovodrun's driver counts the slots within a second of a list change that brings enough
# (its discovery thread polls the script every second and wakes it); this much later it is held.
DRIVER_SECONDS = 5.0


def driver_blocked(
    status: JobStatus,
    seen: TrainingSeen | None,
    master: PodView | None,
    pods: Iterable[PodView],
    listed_since: Mapping[str, float],
) -> Mapping[str, Waiting]:
    """driver_blocked: by pod name, the master pod marked ``hang`` (``alone``: the watchdog's
    restart of the job, where no rule of the master's names ``hang``) when, after the job's
    latest restart, horovodrun's driver has waited DRIVER_SECONDS for slots and not counted
    them, while the host list has offered at least as many Running hosts, not blacklisted, for
    as long (``listed_since``: when each pod was first seen listed). Why: its discovery thread
    tells the old ring's rank 0 of each change to the list while holding the lock the reset
    waits on, with a connect that has no timeout (``_notify_workers_host_changes``); when that
    rank 0 is dead, nothing moves until the kernel gives up on its address: 20 to 140 s where
    the bridge still knew it, 127 s per attempt (3) where the network drops such packets (seen on
    real nodes: two trainers force-deleted at once, rank 0 among them, the driver's read of the
    list after their kill, 146 s; bench-real/worker-faults/double-deletes-2/). Nothing the
    operator can do to the list reaches a driver that holds its lock; a new launcher does."""
    since = recovered_at(status)
    waits = seen.still_awaiting if seen is not None else None
    if seen is None or waits is None or since is None or master is None or not master.running:
        return {}
    now = seen.read_at
    if waits.t < since - GRAIN_SECONDS or now - waits.t < DRIVER_SECONDS:
        return {}
    offered = [
        p
        for p in pods
        if p.running
        and not p.deleting
        and p.created is not None
        and listed_since.get(p.name, now) <= now - DRIVER_SECONDS
        and not _blacklisted(seen, p.name, p.created.timestamp())
    ]
    if len(offered) < waits.slots:
        return {}  # a wait for hosts that are not there yet: Horovod's own, left alone
    words = (
        f"hang: horovodrun's driver has waited for {waits.slots} slots since {_clock(waits.t)} and "
        "not counted them although the host list offers them: it is held in a call to a worker "
        f"that is gone (recovery watchdog, {int(DRIVER_SECONDS)} s)"
    )
    return {master.name: Waiting(waits.t, words, hang=True, alone=True)}


def _blacklisted(seen: TrainingSeen, pod: str, created: float) -> bool:
    """_blacklisted: the driver recorded the worker of ``pod`` (made at ``created``) failed:
    Horovod 0.28 does not count its host again."""
    host = seen.hosts.get(pod)
    return host is not None and host.left is not None and host.left >= created


def _clock(t: float) -> str:
    """_clock: an epoch second as the log's clock shows it (UTC, to the second)."""
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S")


OUT_SECONDS = 15.0  # Horovod adds a listed host at its next commit, seconds later (seen: about 5 s)
STEPPING_SECONDS = 10.0  # the ring steps: its newest step is this recent


def left_out(
    seen: TrainingSeen | None,
    pods: Iterable[PodView],
    listed_since: Mapping[str, float],
    width_cap: int | None = None,
) -> Mapping[str, Waiting]:
    """left_out: by pod name, the job's running pods listed for OUT_SECONDS whose host has not
    stepped since it was listed, while the ring steps without it: Horovod lost the notice of the
    host (its rank 0's reset drops a notice that comes during it: docs/pods.md, "Workers join in
    waves"), and nothing would bring it in but another change to the list. None while the ring
    is at ``width_cap`` (horovodrun's ``--max-np``: it takes no more). Nor a host whose worker
    the driver started since it was listed: the ring is taking it in, and stops stepping to do
    so (seen on real nodes, in the operator's log: two replacements listed 20 s were restarted as
    left out a second after the ring's last step, and it stepped no more until the watchdog
    restarted the job 4 minutes on; the launcher's log went with that restart)."""
    if seen is None or seen.last_step is None or seen.read_at - seen.last_step > STEPPING_SECONDS:
        return {}
    if width_cap is not None and (seen.width or 0) >= width_cap:
        return {}
    found: dict[str, Waiting] = {}
    for p in pods:
        since = listed_since.get(p.name)
        if since is None or not p.running or p.deleting or seen.read_at - since < OUT_SECONDS:
            continue
        hs = seen.hosts.get(p.name)
        if hs is not None and hs.step is not None and hs.step >= since:
            continue
        if hs is not None and hs.started is not None and hs.started >= since:
            continue  # Horovod is taking it in: its driver started a worker on it
        if seen.last_step < since + OUT_SECONDS:
            continue  # the ring has not stepped long enough since it was listed
        words = (
            f"left out of the ring: listed {int(seen.read_at - since)} s ago, and the ring steps at "
            f"width {seen.width} without it (recovery watchdog)"
        )
        found[p.name] = Waiting(since, words, left=True)
    return found
