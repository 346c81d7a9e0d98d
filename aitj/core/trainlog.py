"""What a training's own output says, as timed events: the pure reading of a launcher's log.

The operator's recovery watchdog reads it (aitj.core.planner.watchdog: whether training runs
again after a recovery, at what width, and which ranks wait), as do the bench and the chaos
command (aitj.tools.trainbench). The lines are the tenant's: the pattern below is fixed, has no
nested repetition (its time is linear in the line), and a line is read only within the bytes a
read brings (aitj.controller.progress.LIMIT_BYTES).

The input is ``kubectl logs --timestamps`` of a launcher: every line starts with the time the
container runtime received it (RFC 3339, nanoseconds), then what the program printed. Our
training scripts (the Horovod image's pytorch_synthetic_benchmark_elastic.py, the train image's
train.py for MPI and torchrun, and any that keeps their format) print, per rank::

    [12:00:01] <host> rank <r>/<size>: step <s>/<total> loss <x>
    [12:00:01] <host> rank <r>/<size>: reset: world size now <size>, resuming at step <s>

train.py adds ``samples/s <n> checksum <c>`` after the loss, which is not read here; it prints
the reset line at every start, since each restart of ``mpiexec`` or of torchrun's workers is a
new world. ``horovodrun`` prefixes each line with ``[<rank>]<stdout>:``; ``mpiexec`` and the
ssh sessions of torchrun_launcher.py pass them as they are. Other lines are skipped. The clock is
the runtime's, on the launcher's node: the same clock as the fault's on a one-machine cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

# horovodrun's driver, at every re-forming (its --verbose): a worker has left the old ring and
# reported to the driver's barrier. Untagged, and it names the host: a worker's own lines carry
# horovodrun's tag, the rank it started as, which a later worker may start as too.
_RECORD = re.compile(r"^INFO:root:record state: (\S+)\[\d+\] = (READY|FAILURE)$")
# ... and at every reset, its main thread: it waits for slots (at INFO), then, once it holds the
# lock its discovery thread shares, counts them (at DEBUG) and resets the workers (at INFO).
_AWAIT = re.compile(r"^INFO:root:wait for available slots: (\d{1,6})$")
_FOUND = re.compile(r"^(?:DEBUG:root:current available slots: \d+|INFO:root:reset workers: \d+)$")
# ... then starts a worker on each host it takes into the ring.
_START = re.compile(r"^INFO:root:start worker process: (\S+)\[\d+\]$")
_PROGRESS = re.compile(
    r"\] (?P<host>\S+) rank (?P<rank>\d+)/(?P<size>\d+): "
    r"(?:step (?P<step>\d+)/\d+|reset: world size now \d+, resuming at step (?P<resume>\d+)"
    r"|(?P<start>start): \d+ steps)"
)


@dataclass(frozen=True)
class Step:
    """Step: rank ``rank`` of a world of ``size`` completed step ``step`` at ``t`` (epoch s)."""

    t: float
    host: str
    rank: int
    size: int
    step: int


@dataclass(frozen=True)
class Reset:
    """Reset: the world re-formed at ``t`` with ``size`` ranks, resuming at step ``resume``
    (the last committed step), as rank ``rank`` on ``host`` saw it."""

    t: float
    host: str
    rank: int
    size: int
    resume: int


Event = Step | Reset


def runtime_time(stamp: str) -> float:
    """runtime_time: epoch seconds of a container runtime's RFC 3339 stamp
    (``2026-11-25T11:52:28.243919000Z``); nanoseconds are cut to microseconds."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    micros = (frac + "000000")[:6]
    return datetime.fromisoformat(f"{head}.{micros}+00:00").timestamp()


def parse_line(line: str, *, starts: bool = False) -> Event | None:
    """parse_line: the Step or Reset a timestamped log line reports, else None. With ``starts``,
    a training's start line too (the Horovod script's first, per rank), as a Reset to step 0."""
    stamp, _, text = line.partition(" ")
    found = _PROGRESS.search(text)
    if found is None or (found["start"] is not None and not starts):
        return None
    try:
        t = runtime_time(stamp)
    except ValueError:
        return None
    host, rank, size = found["host"], int(found["rank"]), int(found["size"])
    if found["step"] is not None:
        return Step(t, host, rank, size, int(found["step"]))
    return Reset(t, host, rank, size, 0 if found["start"] is not None else int(found["resume"]))


@dataclass(frozen=True)
class Joined:
    """Joined: horovodrun's driver recorded ``host``'s worker ready at ``t``: it left the ring
    that broke and waits for the next (the driver's own line, which names the host)."""

    t: float
    host: str


@dataclass(frozen=True)
class Left:
    """Left: horovodrun's driver recorded ``host``'s worker failed at ``t``: the process exited
    (killed, crashed), and Horovod blacklists the host, for good in 0.28 unless horovodrun was
    given a cooldown. A pod that still runs after it is out of the ring."""

    t: float
    host: str


@dataclass(frozen=True)
class Awaiting:
    """Awaiting: horovodrun's driver began, at ``t``, to wait for ``slots`` slots (its reset)."""

    t: float
    slots: int


@dataclass(frozen=True)
class Counted:
    """Counted: horovodrun's driver, at ``t``, held its hosts' lock and counted the slots, or reset
    the workers: the wait before it is over."""

    t: float


@dataclass(frozen=True)
class Started:
    """Started: horovodrun's driver started a worker on ``host`` at ``t``: the host is being taken
    into the ring (its worker joins the next rendezvous)."""

    t: float
    host: str


Driver = Joined | Left | Started  # horovodrun's driver's records, which name the host
Slots = Awaiting | Counted  # its main thread's wait for slots


def tagged(line: str) -> Event | Driver | Slots | None:
    """tagged: ``parse_line``, the driver's records of a worker ready or failed, and its waits
    for slots (the operator's)."""
    stamp, _, text = line.partition(" ")
    text = text.rstrip()
    record, awaiting, counted = _RECORD.match(text), _AWAIT.match(text), _FOUND.match(text)
    start = _START.match(text)
    if record is None and awaiting is None and counted is None and start is None:
        return parse_line(line)
    try:
        t = runtime_time(stamp)
    except ValueError:
        return None
    if awaiting is not None:
        return Awaiting(t, int(awaiting[1]))
    if counted is not None:
        return Counted(t)
    if start is not None:
        return Started(t, start[1].split(".", 1)[0])
    assert record is not None
    host = record[1].split(".", 1)[0]
    return Joined(t, host) if record[2] == "READY" else Left(t, host)


def parse_tagged(lines: Iterable[str]) -> list[Event | Driver | Slots]:
    """parse_tagged: ``tagged`` of every line, in time order (the operator's reading)."""
    events = [e for e in map(tagged, lines) if e is not None]
    return sorted(events, key=lambda e: e.t)


def parse(lines: Iterable[str], *, starts: bool = False) -> list[Event]:
    """parse: the events of a log, in time order (``parse_line``'s ``starts``)."""
    events = [e for e in (parse_line(line, starts=starts) for line in lines) if e is not None]
    return sorted(events, key=lambda e: e.t)


def ring(events: Iterable[Event], after: float) -> list[str]:
    """ring: the hosts of the world that completed rank 0's latest step after ``after`` (every
    rank prints that step), sorted: which pods train, whatever the API says of them."""
    steps = [e for e in events if isinstance(e, Step) and e.t >= after]
    latest = max((e for e in steps if e.rank == 0), key=lambda e: e.t, default=None)
    if latest is None:
        return []
    return sorted({e.host for e in steps if e.step == latest.step and e.size == latest.size})


# --- what the operator keeps of it (aitj.controller.progress; aitj.core.planner.watchdog) ----

MAX_INTERVALS = 200  # rank 0's latest gaps between steps, for the cadence
MAX_HOSTS = 1024  # hosts kept, the most recently heard from: a job has at most this many pods read
MIN_INTERVALS = 5  # gaps needed before the cadence is known


@dataclass(frozen=True)
class HostSeen:
    """HostSeen: the newest step line and the newest reset line of one host (epoch seconds), and
    the rank its newest step gave."""

    step: float | None = None
    reset: float | None = None
    rank: int | None = None
    joined: float | None = None  # the driver's newest record of its worker ready (Joined)
    left: float | None = None  # the driver's newest record of its worker failed (Left)
    started: float | None = None  # the driver's newest start of a worker on it (Started)


@dataclass(frozen=True)
class TrainingSeen:
    """TrainingSeen: what the operator has read of a training's own log, by ``read_at``: its
    newest step line and the world size it gave, each host's newest step and reset, and the
    last gaps between rank 0's consecutive steps. Bounded: MAX_HOSTS hosts, MAX_INTERVALS gaps."""

    read_at: float
    last_step: float | None = None
    width: int | None = None
    hosts: Mapping[str, HostSeen] = field(default_factory=dict, compare=False)
    intervals: tuple[float, ...] = ()
    awaiting: Awaiting | None = None  # horovodrun's driver's newest wait for slots
    counted: float | None = None  # ... and when it last counted them (Counted)

    @property
    def still_awaiting(self) -> Awaiting | None:
        """still_awaiting: the driver's newest wait for slots, if it has not counted them since."""
        a = self.awaiting
        return a if a is not None and (self.counted is None or a.t > self.counted) else None

    @property
    def cadence(self) -> float | None:
        """cadence: the 99th percentile of rank 0's gaps between steps (seconds), once
        MIN_INTERVALS are known."""
        if len(self.intervals) < MIN_INTERVALS:
            return None
        ordered = sorted(self.intervals)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def fold(
    before: TrainingSeen | None, events: Sequence[Event | Driver | Slots], read_at: float
) -> TrainingSeen:
    """fold: ``before`` (None: nothing read yet) with the ``events`` of a new read of the log's
    tail, in time order (lines read before come again and change nothing)."""
    last_step = before.last_step if before is not None else None
    width = before.width if before is not None else None
    hosts = dict(before.hosts) if before is not None else {}
    intervals = _gaps(list(before.intervals) if before is not None else [], events, last_step)
    awaiting = before.awaiting if before is not None else None
    counted = before.counted if before is not None else None
    for e in events:
        if isinstance(e, Awaiting):
            awaiting = e if awaiting is None or e.t >= awaiting.t else awaiting
            continue
        if isinstance(e, Counted):
            counted = max(e.t, counted or e.t)
            continue
        old = hosts.get(e.host, HostSeen())
        if isinstance(e, Joined):
            hosts[e.host] = replace(old, joined=max(e.t, old.joined or e.t))
            continue
        if isinstance(e, Left):
            hosts[e.host] = replace(old, left=max(e.t, old.left or e.t))
            continue
        if isinstance(e, Started):
            hosts[e.host] = replace(old, started=max(e.t, old.started or e.t))
            continue
        if isinstance(e, Reset):
            hosts[e.host] = replace(old, reset=max(e.t, old.reset or e.t))
            continue
        newer = old.step is None or e.t >= old.step
        hosts[e.host] = replace(old, step=e.t if newer else old.step, rank=e.rank if newer else old.rank)
        if last_step is None or e.t >= last_step:
            last_step, width = e.t, e.size
    if len(hosts) > MAX_HOSTS:
        newest = sorted(hosts, key=lambda h: max(hosts[h].step or 0.0, hosts[h].reset or 0.0))
        hosts = {h: hosts[h] for h in newest[-MAX_HOSTS:]}
    kept = tuple(intervals[-MAX_INTERVALS:])
    return TrainingSeen(read_at, last_step, width, hosts, kept, awaiting, counted)


def _gaps(
    intervals: list[float], events: Sequence[Event | Driver | Slots], seen_to: float | None
) -> list[float]:
    """_gaps: ``intervals`` with rank 0's new gaps between steps (after ``seen_to``, the newest
    step read before). A gap counts only between two steps of one read with no reset between
    them: a stall or a re-forming is not the training's cadence."""
    after = seen_to if seen_to is not None else float("-inf")
    previous: float | None = None
    for e in events:
        if isinstance(e, Reset):
            previous = None
        elif isinstance(e, Step) and e.rank == 0:
            if previous is not None and e.t > after and e.t > previous:
                intervals.append(e.t - previous)
            previous = e.t
    return intervals


@dataclass(frozen=True)
class Waiting:
    """Waiting: the host of a pod still waiting in the ring a recovery broke, or (``left``) out
    of the ring for good while its pod runs (the recovery watchdog's findings,
    aitj.core.planner.watchdog): since when (epoch seconds) and why, for people."""

    since: float
    description: str
    left: bool = False
    hang: bool = False  # the escalation: the master's, raised as a hang for the job's own rules
    alone: bool = False  # ... and no worker moved on: the watchdog restarts the job where none does
