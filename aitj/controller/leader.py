"""Leader election on a Lease (coordination.k8s.io/v1): ``aitj run --leader-elect``.

One candidate holds the Lease and acts; the others keep their caches warm and wait. The
decisions are pure (``decide``, ``lease_spec``, ``released_spec``, ``election_config``): given
the Lease as read, when this process first saw that version, and the time, which one call to
send. ``Elector`` is the thin loop around them: a thread of its own (the event loop may be
busy planning for seconds; the Lease must not wait for it) with a client of its own.

The rules, as client-go's leaderelection has them:
- a Lease held by another is taken only once ``leaseDurationSeconds`` have passed on *this*
  process's monotonic clock since it first saw the Lease's current version: no clock is
  compared across machines, so skew between them does not matter;
- the leader renews every ``retry_period`` with an update carrying the version it wrote last;
  the update succeeding proves nobody else wrote in between;
- a leader that has not renewed within ``renew_deadline`` of its last successful renewal's
  send stops acting at once (``on_lost``: the process exits), a watchdog thread enforcing it
  whatever the renewing call is doing. Since ``renew_deadline < lease_duration``, it is gone
  before any standby may take the Lease (docs/operator.md, "High availability");
- on a clean stop (SIGTERM) the leader releases the Lease (empty holder) after its passes
  ended, so a standby takes over at its next try instead of after the lease duration.

Why not ``kubernetes.leaderelection`` (the client's own, read at version 37.0.2): its loop
cannot be stopped and never releases the Lease; its renew deadline is checked only between
calls, which carry no timeout, so a leader whose renewal hangs keeps acting past the moment a
standby may take over; it times the lease on the wall clock (``time.time``), which can step;
it builds its API client from the global default configuration rather than the operator's;
and its configuration refuses periods under a second and calls ``sys.exit`` from a thread.
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller.logs import log
from aitj.core.wire import mapping

DEFAULT_LEASE_NAME = "aitj-operator"
# Why these defaults (docs/operator.md, "High availability"): a standby takes over about
# LEASE + RETRY / 2 after the leader's death (the aim: 5 s); a live leader that cannot
# renew stops RENEW_DEADLINE after its last renewal, a second before any standby may act.
DEFAULT_LEASE_SECONDS = 4
DEFAULT_RENEW_DEADLINE = 3.0
DEFAULT_RETRY_PERIOD = 0.5
JITTER = 1.2  # client-go's: renew deadline > JITTER x retry period
EXIT_LEASE_LOST = 3  # the exit status of a leader that lost its Lease
SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True)
class ElectionConfig:
    """ElectionConfig: which Lease, who this candidate is, and the three periods (seconds)."""

    namespace: str
    name: str
    identity: str
    lease_seconds: int = DEFAULT_LEASE_SECONDS
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD


def election_config(
    *,
    namespace: str,
    name: str,
    identity: str,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    renew_deadline: float = DEFAULT_RENEW_DEADLINE,
    retry_period: float = DEFAULT_RETRY_PERIOD,
) -> ElectionConfig:
    """election_config checks the periods (client-go's rules) and makes the config; a
    ValueError names the rule broken."""
    if retry_period <= 0:
        raise ValueError("the retry period must be positive")
    if renew_deadline <= JITTER * retry_period:
        raise ValueError(f"the renew deadline must exceed {JITTER} x the retry period")
    if lease_seconds <= renew_deadline:
        raise ValueError("the lease duration must exceed the renew deadline")
    if not namespace or not name or not identity:
        raise ValueError("the Lease's namespace and name and the identity must not be empty")
    return ElectionConfig(namespace, name, identity, lease_seconds, renew_deadline, retry_period)


def default_identity(hostname: str | None = None, pid: int | None = None) -> str:
    """default_identity: ``hostname_pid``; in a pod the hostname is the pod's name."""
    return f"{hostname or socket.gethostname()}_{pid if pid is not None else os.getpid()}"


def default_namespace(path: Path = SA_NAMESPACE) -> str:
    """default_namespace: the pod's own namespace in a cluster, else ``default``."""
    try:
        return path.read_text().strip() or "default"
    except OSError:
        return "default"


@dataclass(frozen=True)
class Record:
    """Record: what a Lease says, read off its body."""

    holder: str  # "" when nobody holds it (released)
    lease_seconds: int
    version: str  # metadata.resourceVersion
    transitions: int = 0
    acquire_time: str | None = None

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Record:
        """from_body reads a Lease's JSON."""
        spec = mapping(body.get("spec"))
        meta = mapping(body.get("metadata"))
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_seconds=int(spec.get("leaseDurationSeconds") or 0),
            version=str(meta.get("resourceVersion") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
            acquire_time=spec.get("acquireTime"),
        )


@dataclass(frozen=True)
class Seen:
    """Seen: a Lease version and when (monotonic) this process first saw it."""

    version: str
    at: float


def observe(seen: Seen | None, record: Record | None, now: float) -> Seen | None:
    """observe: what ``seen`` becomes after reading ``record`` at ``now``: the time moves only
    when the version changed (the holder renewed, or someone else took it)."""
    if record is None:
        return None
    if seen is not None and seen.version == record.version:
        return seen
    return Seen(record.version, now)


class Act(enum.Enum):
    """Act: the one call a try sends."""

    CREATE = "create"  # no Lease yet
    TAKE = "take"  # free, released, or expired: write this identity into it
    RENEW = "renew"  # this candidate holds it
    WAIT = "wait"  # another holds it and its lease runs


def decide(me: str, record: Record | None, seen: Seen | None, now: float, default_seconds: int) -> Act:
    """decide: what a candidate does with the Lease as read. Expiry is judged on the local
    clock from when this version was first seen (``seen``), for the holder's own duration."""
    if record is None:
        return Act.CREATE
    if record.holder == me:
        return Act.RENEW
    if not record.holder:
        return Act.TAKE
    duration = record.lease_seconds or default_seconds
    if seen is None or seen.version != record.version or now < seen.at + duration:
        return Act.WAIT
    return Act.TAKE


def micro_time(value: dt.datetime) -> str:
    """micro_time: a MicroTime as the API writes it (UTC, microseconds, a trailing Z)."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_spec(
    act: Act, me: str, record: Record | None, lease_seconds: int, now: dt.datetime
) -> dict[str, Any]:
    """lease_spec: the spec a CREATE, TAKE or RENEW writes. Taking it from another holder
    counts a transition; renewing keeps the acquire time."""
    stamp = micro_time(now)
    transitions = record.transitions if record is not None else 0
    if act is Act.TAKE and record is not None and record.holder != me:
        transitions += 1
    acquired = record.acquire_time if act is Act.RENEW and record is not None else None
    return {
        "holderIdentity": me,
        "leaseDurationSeconds": lease_seconds,
        "acquireTime": acquired or stamp,
        "renewTime": stamp,
        "leaseTransitions": transitions,
    }


def released_spec(record: Record, now: dt.datetime) -> dict[str, Any]:
    """released_spec: the spec a leader stopping cleanly leaves: no holder, a one-second
    lease (client-go's release), so a standby takes it at its next try."""
    stamp = micro_time(now)
    return {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": stamp,
        "renewTime": stamp,
        "leaseTransitions": record.transitions,
    }


def lost(config: ElectionConfig) -> None:
    """lost: the default ``on_lost``: a leader that could not renew exits at once, passes in
    flight and all; the Deployment starts it again as a standby (client-go's controllers exit
    too). Nothing may run after this: ``os._exit`` skips every clean-up handler."""
    log.error("leader election lost: exiting", lease=f"{config.namespace}/{config.name}")
    sys.stderr.flush()
    os._exit(EXIT_LEASE_LOST)


class Elector:
    """Elector: the candidate's loop, on a thread. ``on_leading`` is called (on that thread)
    once the Lease is taken; ``on_lost`` once a leader misses its renew deadline. Its calls go
    through a client of its own, made from ``configuration`` (the operator's credentials)."""

    def __init__(
        self,
        config: ElectionConfig,
        configuration: client.Configuration,
        *,
        on_leading: Callable[[], None],
        on_lost: Callable[[ElectionConfig], None] = lost,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        own = copy.deepcopy(configuration)
        # No retries inside a call (urllib3 would send a timed-out GET again, up to 3 times):
        # the loop tries again itself, every retry period, and its timing stays its own.
        own.retries = False
        self.api = client.CoordinationV1Api(client.ApiClient(own))
        self.on_leading = on_leading
        self.on_lost = on_lost
        self.clock = clock
        self.leading = False
        self.renewed_at = 0.0  # when the last successful write was sent (monotonic)
        self._body: dict[str, Any] | None = None  # the Lease as this process last read or wrote it
        self._seen: Seen | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # ---- the loop ---------------------------------------------------------------------------
    def start(self) -> None:
        """start runs the candidate's loop and the leader's watchdog, each on a daemon thread."""
        for target, name in ((self._loop, "lease"), (self._watchdog, "lease-watchdog")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _loop(self) -> None:
        """_loop: one try every retry period until stopped; an unexpected error ends the
        process, as losing the Lease would (a candidate that cannot try would never lead)."""
        try:
            while not self._stop.is_set():
                self.try_once()
                self._stop.wait(self.config.retry_period)
        except Exception as e:  # pragma: no cover - defensive: never a silent dead elector
            log.error("leader election failed", error=repr(e))
            self.on_lost(self.config)

    def _watchdog(self) -> None:
        """_watchdog: a leader whose last successful renewal was sent ``renew_deadline`` ago
        is lost, whatever the renewing call is doing (it may hang on a dead connection)."""
        step = min(0.1, self.config.retry_period / 2)
        while not self._stop.wait(step):
            if self.leading and self.clock() - self.renewed_at >= self.config.renew_deadline:
                self.leading = False
                self.on_lost(self.config)

    def try_once(self) -> bool:
        """try_once: one try (the leader renews with the version it wrote; a candidate reads
        the Lease and acts on ``decide``); True when this process holds the Lease after it."""
        cfg = self.config
        # A leader renews the version it wrote; when that fails it reads the Lease again and
        # decides (another may have taken it, or it was edited).
        if self.leading and self._body is not None and self._write(Act.RENEW, Record.from_body(self._body)):
            return True
        try:
            body = self._call("read_namespaced_lease", cfg.name, cfg.namespace)
        except ApiException as e:
            if e.status != 404:
                log.warning("reading the Lease failed", status=e.status, reason=e.reason)
                return self.leading
            body = None
        except Exception as e:  # the apiserver unreachable: try again next period
            log.warning("reading the Lease failed", error=repr(e))
            return self.leading
        self._body = body
        record = Record.from_body(body) if body is not None else None
        now = self.clock()
        self._seen = observe(self._seen, record, now)
        act = decide(cfg.identity, record, self._seen, now, cfg.lease_seconds)
        if act is Act.WAIT:
            if self.leading:  # another holds it now: this process must not act a moment longer
                self.leading = False
                self.on_lost(cfg)
            return False
        return self._write(act, record)

    def _write(self, act: Act, record: Record | None) -> bool:
        """_write sends CREATE, TAKE or RENEW; on success the Lease is this process's."""
        cfg = self.config
        sent = self.clock()
        spec = lease_spec(act, cfg.identity, record, cfg.lease_seconds, dt.datetime.now(dt.UTC))
        try:
            if act is Act.CREATE:
                meta = {"name": cfg.name, "namespace": cfg.namespace}
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta}
                written = self._call("create_namespaced_lease", cfg.namespace, {**body, "spec": spec})
            else:
                assert self._body is not None
                written = self._call(
                    "replace_namespaced_lease", cfg.name, cfg.namespace, {**self._body, "spec": spec}
                )
        except Exception as e:  # a conflict (another wrote first), or the apiserver unreachable
            status = getattr(e, "status", None)
            if not (act is not Act.RENEW and status == 409):
                log.warning("writing the Lease failed", act=act.value, status=status, error=str(e)[:200])
            return False
        self._body = written
        self._seen = Seen(str(mapping(written.get("metadata")).get("resourceVersion") or ""), sent)
        self.renewed_at = sent
        if not self.leading:
            self.leading = True
            log.info("leading", lease=f"{cfg.namespace}/{cfg.name}", identity=cfg.identity)
            self.on_leading()
        return True

    def _call(self, method: str, *args: Any, limit: float | None = None) -> dict[str, Any]:
        """_call: one Lease call, its JSON as a dict, bounded in time: a leader's by what is
        left of its renew deadline, a candidate's by the lease duration."""
        cfg = self.config
        if limit is None:
            limit = float(cfg.lease_seconds)
            if self.leading:
                limit = max(0.05, cfg.renew_deadline - (self.clock() - self.renewed_at))
        response = getattr(self.api, method)(*args, _preload_content=False, _request_timeout=limit)
        return dict(json.loads(response.data))

    # ---- stopping ---------------------------------------------------------------------------
    def stop(self, release: bool = True) -> None:
        """stop ends the loop; a leader then releases the Lease (an update with no holder, of
        the version it wrote last: refused if another took it meanwhile)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.config.renew_deadline)
        if not (release and self.leading and self._body is not None):
            return
        self.leading = False
        record = Record.from_body(self._body)
        cfg = self.config
        try:
            spec = released_spec(record, dt.datetime.now(dt.UTC))
            body = {**self._body, "spec": spec}
            self._call("replace_namespaced_lease", cfg.name, cfg.namespace, body, limit=cfg.renew_deadline)
            log.info("Lease released", lease=f"{cfg.namespace}/{cfg.name}")
        except Exception as e:
            log.warning("releasing the Lease failed", error=str(e)[:200])
