"""Horovod's host list held while its ring re-forms after a worker died (issue 46).

Pure. Why: horovodrun's driver tells the ring's rank 0 of every change to the host list, with a
blocking connect that has no timeout, while it holds the lock its own reset needs
(``horovod.runner.elastic.driver._notify_workers_host_changes``; ``BasicClient._send_one``, 3
attempts). When rank 0 is the worker that died, its pod's address is gone at once: the kubelet
tears a failed pod's network down within a second of its container's exit, and a connect to it
fails only when the kernel gives up on the address ("No route to host": 3 s with no neighbour
entry, 20 to 70 s when the driver had spoken to it just before; measured on real nodes,
2026-11-28). Each change to the list made before the driver has re-formed the ring around a
live rank 0 costs that connect: the failed pod leaving the list, its replacement joining, a
stalled survivor restarted by the recovery watchdog leaving (docs/bench.md, "What a stalled
ring waits on").

So, after a worker's exit (or a watchdog restart) in a Horovod elastic job, the list stays as it
was, removals and additions alike, until the ring has re-formed and steps: the training's log
shows a step after the fault and after its latest reset line. Horovod needs no list change to
drop the dead worker: its ssh session ends, the driver records the failure and blacklists the
host. The replacements then join the
ring that stepped, whose rank 0 lives, in one more re-forming. A worker that leaves by a delete
(a drain, a graceful delete) is not held: its pod still runs for a while, and leaving the list
at once is what lets Horovod release it in order (docs/pods.md). But a force delete of the pod
whose host is the ring's rank 0 is held like an exit: its container is killed 2 s later, and
unless the driver has read the change and told rank 0 of it by then, it calls a rank 0 whose
address is gone (seen on real nodes: two trainers force-deleted at once, rank 0 among them, the
change read after the kill, 78 s in that connect; 1 of 20). Only where it is the one pod the
fault took: several force-deleted at once reach the operator as events 0.1 s apart, and a hold
from the second pass kept the dying rank 0 in a list the first had changed; Horovod re-formed
around it, and its kill mid-rendezvous failed the other worker's ``hvd.init`` outright and ended
the job (1 of about 40). Nor is the list held while such pods die: they die 0.1 s apart, the
first death re-forms the ring at once with the second still alive and listed, which then dies in
the new ring's rendezvous, and the survivor waits there until Gloo's timeout (tried: 2 of 11;
bench-real/horovod-double-delete-hold/).
Those pods leave the list together, 0.3 s on: a pass that records a force delete keeps the list
SETTLE_SECONDS, time for the other deletes of the same call, and the pass after takes them all
out in one change. The driver then re-forms without any of them 1 to 2 s after the delete,
while their containers live (killed about 2 s after it), and tells the rank 0 that leaves
while it still answers; usually: in 1 of 40 the driver read the change only after the kill,
and called the dead rank 0 all the same (146 s; bench-real/worker-faults/double-deletes-2/), a
race the list cannot close: the recovery watchdog restarts the job once the driver is seen held
(``watchdog.driver_blocked``). Taken out one pass apart, the first change re-formed the ring with the
dying rank 0 as its rank 0, and the second was told to it once its address was gone: 146 s in
that connect (1 of 20; bench-real/horovod-double-delete-146s/).

When: the job's launcher runs ``horovodrun`` with ``--host-discovery-script`` (its command or
arguments say so: ``elastic_horovod``), and the job's latest restart is of an exit, a stall, or a
force delete of rank 0's pod (the host the log last saw step as rank 0); and for
SETTLE_SECONDS after a pass that recorded any force delete.
Until the recovery watchdog has read the launcher's log after the fault, the list is held for at
most PROBE_SECONDS; a log with no step line of a training's (aitj.core.trainlog) gives no signal
and holds nothing; with one, the list is held until the re-forming is read, or the watchdog's
bound plus GRACE_SECONDS after the fault (its own restart of a blocked survivor comes at the
bound, and the driver re-forms seconds later), whichever is first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aitj.core.api import Job, ReplicaType, RestartEntry
from aitj.core.planner.watchdog import bound, gone, host_pod, stepping_since
from aitj.core.policy import FORCED, VANISHED, WATCHDOG_KINDS, FailureKind
from aitj.core.trainlog import TrainingSeen
from aitj.core.wire import as_list, mapping, parse_time

PROBE_SECONDS = 10.0  # held, unread: the watchdog reads a recovering job's log every second
GRACE_SECONDS = 30.0  # held past the watchdog's bound: its restart, then the driver's reset
# After a pass that records a force delete: the other deletes of the same call come 0.1 to 0.2 s
# later; the kill, about 2 s after the delete, must find the list changed and read already.
SETTLE_SECONDS = 0.3
# Its restarts of a rank: the worker is gone too. Not its restart of the whole job (ringHung):
# horovodrun starts anew on the list as it is then.
WATCHDOG_CAUSES = frozenset(k.value for k in WATCHDOG_KINDS if k is not FailureKind.RING_HUNG)


def elastic_horovod(job: Job) -> bool:
    """elastic_horovod: a master replica's container runs ``horovodrun`` with a host-discovery
    script (its command or arguments name both)."""
    masters = (r.template for r in job.spec.replicas if r.replica_type is ReplicaType.MASTER)
    return horovodrun_command(masters) is not None


def horovodrun_command(templates: Iterable[Mapping[str, Any]]) -> str | None:
    """horovodrun_command: the words of the first container of these pod templates that runs
    ``horovodrun`` with a host-discovery script, joined (None: none does)."""
    for template in templates:
        for c in as_list(mapping(mapping(template).get("spec")).get("containers")):
            container = mapping(c)
            words = " ".join(
                str(w) for w in [*as_list(container.get("command")), *as_list(container.get("args"))]
            )
            if "horovodrun" in words and "--host-discovery-script" in words:
                return words
    return None


_MAX_NP = re.compile(r"--max-(?:np|num-proc)[= ](\d{1,6})\b")


def max_np(command: str) -> int | None:
    """max_np: horovodrun's ``--max-np`` (``--max-num-proc``) in a command line, if given."""
    found = _MAX_NP.search(command)
    return int(found[1]) if found is not None else None


def fault_at(restarts: Iterable[RestartEntry], seen: TrainingSeen | None = None) -> float | None:
    """fault_at: when the fault behind the latest restart happened (epoch seconds), if that
    restart is of an exit or the recovery watchdog's, or the fault (``watchdog.gone``: the
    restarts of its second) took one pod alone, force-deleted (grace period 0, not a graceful
    delete, which has the same cause), the pod ``seen`` last saw step as rank 0; None otherwise,
    or with no restart."""
    latest = max(restarts, key=lambda r: r.time or "", default=None)
    if latest is None:
        return None
    dead = latest.exit_code is not None or latest.cause in WATCHDOG_CAUSES
    # Rank 0's pod force-deleted alone. Not one of several a fault took (two force-deleted at
    # once): their deletes reach the operator as events 0.1 s apart, the first pass has already
    # taken the first pod out of the list, and a hold from the second kept the dying rank 0 in it;
    # Horovod re-formed around it, it was killed mid-rendezvous, the other worker's hvd.init
    # failed outright (not a reset), and horovodrun gave the job up (seen once on real nodes).
    dying = (
        killed_at_once(latest.cause, latest.message)
        and latest.pod is not None
        and rank_0(seen) == latest.pod
        and len(gone(restarts)) == 1  # last: it parses every restart's time, on every pass
    )
    if not dead and not dying:
        return None
    at = parse_time(latest.failure_time) or parse_time(latest.time)
    return at.timestamp() if at is not None else None


def killed_at_once(cause: str | None, message: str | None) -> bool:
    """killed_at_once: a recorded failure (its ``cause`` and ``message``) is a delete whose pod's
    containers are killed at once (grace period 0, or the pod gone with no finalizer), not a
    graceful delete, which the same cause names too."""
    words = message or ""
    return cause == FailureKind.POD_FORCE_DELETED.value and (FORCED in words or VANISHED in words)


def rank_0(seen: TrainingSeen | None) -> str | None:
    """rank_0: the pod whose host the log last saw step as rank 0 (None: none yet)."""
    if seen is None:
        return None
    steps = [(h.step, host) for host, h in seen.hosts.items() if h.rank == 0 and h.step is not None]
    return host_pod(max(steps)[1]) if steps else None


def reformed(seen: TrainingSeen, at: float, taken: frozenset[str] = frozenset()) -> bool:
    """reformed: the ring re-formed after the fault at ``at`` and steps
    (``watchdog.stepping_since``). A host listed while a re-forming is under way is lost: rank 0's
    reset drops the driver's notice of it (docs/pods.md, "Workers join in waves"; seen on real
    nodes: a replacement listed between two re-formings 2 s apart never joined); and a ring that
    steps with no reset since the fault is the old one, a force-deleted rank 0 still in it."""
    return stepping_since(seen, at, taken)


def held_until(
    job: Job,
    restarts: Sequence[RestartEntry],
    seen: TrainingSeen | None,
    now: float,
    recorded: Sequence[RestartEntry] = (),
) -> float | None:
    """held_until: until when (epoch seconds) the host list stays as it is; None: not held.
    ``recorded``: the restarts this pass records (also in ``restarts``)."""
    if not job.spec.discovery:
        return None
    at = fault_at(restarts, seen)  # first: asked on every pass, and most jobs have no such restart
    settling = any(killed_at_once(r.cause, r.message) for r in recorded)
    if (at is None and not settling) or not elastic_horovod(job):
        return None
    ring = None if at is None else ring_until(at, restarts, seen)
    until = max(now + SETTLE_SECONDS if settling else 0.0, ring or 0.0)
    return until if now < until else None


def ring_until(at: float, restarts: Sequence[RestartEntry], seen: TrainingSeen | None) -> float | None:
    """ring_until: until when the list waits for the ring to re-form after the fault at ``at``;
    None: a log with no step line (no signal), or re-formed."""
    if seen is None or seen.read_at < at:
        return at + PROBE_SECONDS  # not read since the fault: held until it is
    if seen.last_step is None or reformed(seen, at, gone(restarts)):
        return None
    return at + bound(seen) + GRACE_SECONDS
