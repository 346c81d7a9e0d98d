"""What the reconciler keeps of each job between and during its passes (``JobState``), and where
its passes get the time, their decision and key pairs (``Sources``).

The reconciler (aitj.controller.reconciler) owns one JobState per job it has planned, on the
event loop only, and forgets it with the job. Apart so that the reconciler's module holds its
logic only.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aitj.controller import sshkeys
from aitj.controller.cache import JobKey
from aitj.controller.passtrace import Trace
from aitj.controller.written import Seen
from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.planner import plan as make_plan
from aitj.core.planner.lifecycle import PodRefusal
from aitj.core.planner.memo import Memo
from aitj.core.planner.types import Plan, SshKeys


@dataclass
class JobState:
    """JobState: one job's lock and what its passes hand on to the next ones."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dirty: bool = False
    queued: bool = False  # a kick's Task is made and has not started yet (``spawn``)
    timer: asyncio.TimerHandle | None = None
    failures: int = 0  # failed passes in a row
    retry_at: float = 0.0  # loop time before which no pass runs (after a failed pass)
    paced_until: float = 0.0  # loop time before which no pass runs (after a long plan)
    # What the last pass's calls were told that the next pass acts on (it runs right after).
    refused: PodRefusal | None = None  # a pod create refused for good: the job fails
    terminating: bool = False  # the namespace is being deleted: its pods are let go
    status_written_at: float | None = None  # loop time of the last status write (STATUS_INTERVAL)
    # The running pass's: the events of the job and its pods that came meanwhile (the cache's
    # ``Seen``): any makes one more pass (``_settle``).
    seen: list[Seen] = field(default_factory=list)
    # Where the next pass's time goes, from its first kick (``trace``), and the running pass's.
    trace: Trace = field(default_factory=Trace)
    tracing: Trace = field(default_factory=Trace)
    parsed: tuple[Mapping[str, Any], api.Job] | None = None  # the last body parsed, and its Job: _triage
    # What the job's passes reuse of the last (aitj.core.planner.memo: cheaper, never different);
    # it goes with this state when the job is forgotten.
    memo: Memo = field(default_factory=Memo)


def new_keys(job_name: str) -> SshKeys:
    """new_keys makes a key pair for a job's ssh Secret."""
    return SshKeys(*sshkeys.generate_keypair(f"aitj@{job_name}"))


@dataclass(frozen=True)
class Sources:
    """Sources: where a pass gets the time, its decision and a fresh ssh key pair: the clock, the
    planner and the key generator, the real ones by default (tests pass fixed ones); ``name_key``,
    a fresh random key for a job whose status has none (aitj.core.planner.ownership); and
    ``progress``, the job's pod views with what was read of the watched pod's log (spec.progress,
    aitj.controller.progress; by default the views as they are)."""

    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
    planner: Callable[..., Plan] = make_plan
    keygen: Callable[[str], SshKeys] = new_keys
    name_key: Callable[[], str] = lambda: secrets.token_hex(16)
    progress: Callable[[JobKey, Sequence[PodView]], Sequence[PodView]] = lambda _key, pods: pods
