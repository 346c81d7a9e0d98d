"""The fault kinds, which of them a cluster allows, and the seeded schedule. Pure.

A schedule is decided before anything runs, from the seed alone, so ``--dry-run`` prints
exactly what a run would try. It fixes *when* and *what kind*; *which* pod, node or job is
picked at run time from what the watch then shows (``pick`` indexes the eligible targets,
sorted by name), since targets only exist once the run starts.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass


class FaultKind(enum.StrEnum):
    """FaultKind: one kind of fault. The first group works on any cluster; the second only on
    the local control plane (kwok nodes, an apiserver and operator processes this machine runs)."""

    FORCE_DELETE = "force-delete"
    GRACEFUL_DELETE = "graceful-delete"
    EVICT = "evict"
    DRAIN = "drain"  # cordon + evict the job pods of a node, then uncordon (opt-in)
    SCALE_UP = "scale-up"
    SCALE_DOWN = "scale-down"
    OPERATOR_POD_DELETE = "operator-pod-delete"  # the operator runs in the cluster
    EXIT_CODE = "exit-code"
    NODE_NOT_READY = "node-not-ready"
    NODE_SILENT = "node-silent"
    APISERVER_RESTART = "apiserver-restart"
    OPERATOR_KILL = "operator-kill"  # SIGKILL of a local operator process
    # SIGSTOP of a pod's processes through pods/exec (issue 28): only on real nodes, only jobs
    # with spec.progress, only when asked for by name (--kind hang)
    HANG = "hang"
    # SIGKILL of a pod's first app container through its real node's containerd (issue 28: the
    # exit 137 an in-place rule restarts in the same pod): only on real nodes, only by name
    KILL = "kill"


ANY_CLUSTER = (
    FaultKind.FORCE_DELETE,
    FaultKind.GRACEFUL_DELETE,
    FaultKind.EVICT,
    FaultKind.DRAIN,
    FaultKind.SCALE_UP,
    FaultKind.SCALE_DOWN,
    FaultKind.OPERATOR_POD_DELETE,
)
LOCAL_ONLY = (
    FaultKind.EXIT_CODE,
    FaultKind.NODE_NOT_READY,
    FaultKind.NODE_SILENT,
    FaultKind.APISERVER_RESTART,
    FaultKind.OPERATOR_KILL,
)
# Faults aimed at one pod of a job, and at a node (every job pod on it).
POD_FAULTS = frozenset(
    {FaultKind.FORCE_DELETE, FaultKind.GRACEFUL_DELETE, FaultKind.EVICT, FaultKind.EXIT_CODE}
)
NODE_FAULTS = frozenset({FaultKind.DRAIN, FaultKind.NODE_NOT_READY, FaultKind.NODE_SILENT})
SCALE_FAULTS = frozenset({FaultKind.SCALE_UP, FaultKind.SCALE_DOWN})
OPERATOR_FAULTS = frozenset({FaultKind.OPERATOR_POD_DELETE, FaultKind.OPERATOR_KILL})
# Faults that need containers that run (real nodes): never in the default set.
BY_NAME = frozenset({FaultKind.HANG, FaultKind.KILL})


@dataclass(frozen=True)
class Allowed:
    """Allowed: what the cluster offers. ``local``: the local control plane (detected or
    ``--local``); ``drain``: --allow-drain; ``operator_pod``: the operator runs as a pod the
    command can find; ``operator_process``: a local operator process to kill (started by the
    command, or named by a pid file)."""

    local: bool = False
    drain: bool = False
    operator_pod: bool = False
    operator_process: bool = False


def available(allowed: Allowed, wanted: tuple[FaultKind, ...] = ()) -> tuple[FaultKind, ...]:
    """available: the fault kinds to run, in FaultKind order: ``wanted`` (default: all) less
    those the cluster does not allow."""
    out = []
    for kind in FaultKind:
        if wanted and kind not in wanted:
            continue
        if kind in LOCAL_ONLY and not allowed.local:
            continue
        if kind is FaultKind.DRAIN and not allowed.drain:
            continue
        if kind is FaultKind.OPERATOR_POD_DELETE and not allowed.operator_pod:
            continue
        if kind is FaultKind.OPERATOR_KILL and not allowed.operator_process:
            continue
        if kind in BY_NAME and kind not in wanted:  # needs real containers: asked for by name
            continue
        out.append(kind)
    return tuple(out)


@dataclass(frozen=True)
class Planned:
    """Planned: fault number ``n`` (from 1), ``at`` seconds after the start, of ``kind``;
    ``pick`` chooses the target among the eligible ones (modulo their number)."""

    n: int
    at: float
    kind: FaultKind
    pick: int


def schedule(
    seed: int, kinds: tuple[FaultKind, ...], duration: float, interval: float, max_faults: int | None = None
) -> list[Planned]:
    """schedule: one fault every ``interval`` seconds (jittered by up to a quarter of it) from
    ``interval`` until ``duration``, at most ``max_faults``. Every kind comes once, in a seeded
    order, before any comes twice, so a run long enough for ``len(kinds)`` faults runs each
    kind; after that kinds are drawn at random. The same arguments give the same schedule."""
    if not kinds or interval <= 0:
        return []
    rng = random.Random(seed)
    first = list(kinds)
    rng.shuffle(first)
    out: list[Planned] = []
    at = interval
    while at <= duration and (max_faults is None or len(out) < max_faults):
        kind = first[len(out)] if len(out) < len(first) else rng.choice(kinds)
        out.append(Planned(len(out) + 1, round(at, 3), kind, rng.randrange(1 << 30)))
        at += interval * (1 + rng.uniform(-0.25, 0.25))
    return out


def describe(plan: list[Planned]) -> list[str]:
    """describe: the schedule as lines, as ``--dry-run`` prints it."""
    return [f"{p.n:4d}  t+{p.at:7.1f}s  {p.kind}" for p in plan]
