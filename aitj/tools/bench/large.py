"""F12 and F13 (issue 26): one large job, in a phase of its own after P1, before the full run
grows to 10,000 pods.

Order: the large pool (``LargeShape.nodes`` kwok nodes, tainted: only these jobs land there);
the Job controller's bring-up of one Indexed Job of N pods there (F12's reference; the operator
runs but idles, its informers select its own pods), then removed; F13's windows in a job of
each smaller size, one job at a time; the operator's bring-up of its job of N trainers (F12,
with its CPU per pod), then its force deletes (F12's recovery, and F13's window at N). Last the
job and its pods are deleted and the pool removed: the rest of the run has the cluster it had.

An F13 window: force deletes of the job's trainers, one at a time (``replacement_trials``, as
F1), between two scrapes of the operator's /metrics; the operator's CPU from /proc is read
inside the scrapes, so their own cost is not counted.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass

from kubernetes.client.exceptions import ApiException

from aitj.controller.kubeclient import release
from aitj.core import api
from aitj.tools.bench import peer
from aitj.tools.bench import scenarios as sc
from aitj.tools.bench.figures import Measurements
from aitj.tools.bench.largefigures import PassCost
from aitj.tools.bench.session import Session
from aitj.tools.bench.workload import (
    LARGE_POOL,
    NS_LARGE,
    NS_PEER,
    add_nodes,
    delete_nodes,
    large_job,
    large_node,
    wait_nodes_ready,
)

QUIET_SHARE = 0.05  # the operator is quiet below 5 % of a core
LAST_WRITE = 2.0  # seconds after a window's last trial for its status write (as F1)


@dataclass(frozen=True)
class LargeShape:
    """LargeShape: F12's job of ``trainers`` on ``nodes`` nodes of their own, struck ``trials``
    times; F13's smaller ``sizes``, each struck ``size_trials`` times; ``timeout`` for a
    bring-up or a teardown."""

    trainers: int = 4096
    nodes: int = 100
    trials: int = 200
    sizes: tuple[int, ...] = (8, 512)
    size_trials: int = 100
    timeout: float = 600


def run_large(s: Session, shape: LargeShape, m: Measurements, nodes_before: int, notes: list[str]) -> None:
    """run_large: the phase, filling F12's and F13's measurements of ``m``; ``nodes_before``
    are the cluster's Ready nodes now. A figure that times out says why; the teardown runs
    whatever happened."""
    m.large.trainers, m.large.nodes = shape.trainers, shape.nodes
    pool = [large_node(i) for i in range(shape.nodes)]
    add_nodes(s.cluster, pool, pool=LARGE_POOL)
    wait_nodes_ready(s.cluster, nodes_before + shape.nodes, timeout=300)
    try:
        _peer_bring_up(s, shape, m)
        for size in shape.sizes:
            _size(s, shape, size, m, notes)
        _ours(s, shape, m)
    except (TimeoutError, RuntimeError) as e:  # a wait timed out, no pod left to strike
        m.why.setdefault("F12", str(e))
        notes.append(f"F12: {e}")
    finally:
        for size in (*shape.sizes, shape.trainers):
            _delete(s, size, shape.timeout, notes)
        sc.peer_teardown(s, shape.timeout)
        delete_nodes(s.cluster, pool)


def _peer_bring_up(s: Session, shape: LargeShape, m: Measurements) -> None:
    """_peer_bring_up: F12's reference, one Indexed Job of ``trainers`` pods on the pool, then
    removed."""
    n = shape.trainers
    s.say(f"F12 peer: the Job controller brings up one Indexed Job of {n} pods on {shape.nodes} nodes")
    m.large.bringup_peer, _ = sc.bring_up(
        s, NS_PEER, lambda: peer.create_jobs(s.batch, ["peer-large"], n, LARGE_POOL), n, shape.timeout
    )
    sc.peer_teardown(s, shape.timeout)


def _size(s: Session, shape: LargeShape, size: int, m: Measurements, notes: list[str]) -> None:
    """_size: F13's window in a job of ``size`` trainers, made for it and deleted after; a
    size that times out is noted and left out (the other sizes and F12 go on)."""
    s.say(f"F13: {shape.size_trials} force deletes in one job of {size} trainers")
    try:
        _create(s, size, shape.timeout)
        m.large.pass_cost[size], _ = _window(s, size, shape.size_trials, m.why)
    except (TimeoutError, RuntimeError) as e:
        notes.append(f"F13 at {size} trainers: {e}")
    _delete(s, size, shape.timeout, notes)


def _ours(s: Session, shape: LargeShape, m: Measurements) -> None:
    """_ours: F12, the operator brings up its job of ``trainers`` (CPU per pod over it), then
    its trainers are force-deleted one at a time (F13's window at that size)."""
    n = shape.trainers
    s.say(f"F12: the operator brings up one job of {n} trainers on {shape.nodes} nodes")
    cpu = s.operator_cpu()
    m.large.bringup, _ = sc.bring_up(s, NS_LARGE, lambda: _create_job(s, n), n, shape.timeout)
    if m.large.bringup is None:
        raise TimeoutError(f"not all {n} pods of the large job Running within {shape.timeout:.0f}s")
    m.large.cpu_per_pod = (s.operator_cpu() - cpu) / n
    s.say(f"F12, F13: {shape.trials} force deletes in the job of {n} trainers")
    s.settle(NS_LARGE, n, shape.timeout)
    m.large.pass_cost[n], m.large.delete = _window(s, n, shape.trials, m.why)


def _window(s: Session, trainers: int, trials: int, why: dict[str, str]) -> tuple[PassCost, list[float]]:
    """_window: F13's window in job ``large-<trainers>`` (its pods all Running): ``trials``
    force deletes one at a time; the operator's CPU over them and its passes meanwhile (0 when
    its /metrics could not be read: ``why`` says so), and each trial's latency to the
    replacement created."""
    _wait_quiet(s)
    order: list[Hashable] = [(NS_LARGE, f"large-{trainers}", "trainer", str(i)) for i in range(trainers)]
    before = _passes(s, why)
    cpu = s.operator_cpu()
    latencies = sc.replacement_trials(s, NS_LARGE, order, sc.strike_delete, trials)
    time.sleep(LAST_WRITE)
    used = s.operator_cpu() - cpu
    after = _passes(s, why)
    passes = after - before if after is not None and before is not None else 0.0
    return PassCost(used, passes, trials), latencies


def _passes(s: Session, why: dict[str, str]) -> float | None:
    """_passes: the operator's passes so far; None when its /metrics does not tell (``why``
    F13 is not measured says it)."""
    try:
        return s.operator_passes()
    except (OSError, ValueError) as e:
        why.setdefault("F13", f"the operator's passes not read from its /metrics: {e}")
        return None


def _wait_quiet(s: Session, timeout: float = 60) -> None:
    """_wait_quiet waits (at most ``timeout``) until the operator uses under QUIET_SHARE of a
    core over half a second: the passes of a bring-up or a teardown are over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cpu = s.operator_cpu()
        time.sleep(0.5)
        if s.operator_cpu() - cpu < QUIET_SHARE * 0.5:
            return


def _create_job(s: Session, trainers: int) -> None:
    body = large_job(trainers)
    release(
        s.custom.create_namespaced_custom_object(
            api.GROUP, api.VERSION, NS_LARGE, api.PLURAL, body, _preload_content=False
        )
    )


def _create(s: Session, trainers: int, timeout: float) -> None:
    """_create: job ``large-<trainers>``, waited for until its pods all run."""
    _create_job(s, trainers)
    s.settle(NS_LARGE, trainers, timeout)


def _delete(s: Session, trainers: int, timeout: float, notes: list[str]) -> None:
    """_delete: job ``large-<trainers>`` deleted (if it is there), waited for until its pods
    are gone; the time it took is noted."""
    started = time.monotonic()
    try:
        s.custom.delete_namespaced_custom_object(
            api.GROUP, api.VERSION, NS_LARGE, api.PLURAL, f"large-{trainers}"
        )
    except ApiException as e:
        if e.status != 404:
            raise
        return  # not there (not created, or deleted already)
    s.pods.wait_until(
        lambda w: w.count(f"{NS_LARGE}/all") == 0, timeout, f"the pods of large-{trainers} gone"
    )
    notes.append(
        f"F12/F13: the job of {trainers} trainers deleted, its pods gone in {time.monotonic() - started:.1f}s"
    )
