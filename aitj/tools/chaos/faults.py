"""Carrying out a planned fault: pick its target from what the watch shows, cause it, undo it.

Adapters over ``aitj.devcluster.faults`` (node faults, exit codes, the apiserver restart)
and the Kubernetes API (deletes, evictions, cordon, replicas edits, the operator's pod).
Targets are only jobs that are steady right now (``invariants.steady``), so each fault's
effect on the restart count and its recovery can be told apart from the previous fault's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

from aitj.core import api
from aitj.core.api import ReplicaType
from aitj.core.observed import PodView
from aitj.devcluster import faults as dev
from aitj.devcluster.cluster import LocalCluster
from aitj.tools.chaos.expect import Expected
from aitj.tools.chaos.history import FaultRecord, JobKey
from aitj.tools.chaos.invariants import steady
from aitj.tools.chaos.kill import CannotKill, kill, real_node_sockets
from aitj.tools.chaos.operators import Operators
from aitj.tools.chaos.replay import World
from aitj.tools.chaos.schedule import POD_FAULTS, FaultKind, Planned


class NoTarget(Exception):
    """NoTarget: nothing is eligible for the fault right now."""


@dataclass
class Context:
    """Context: what faults act through. ``local``: the local control plane, if any."""

    api: client.ApiClient
    local: LocalCluster | None
    operators: Operators
    exit_codes: tuple[int, ...] = (137,)
    replicas: tuple[str, ...] = ()  # pod faults hit pods of these replicas only (default: any)
    operator_namespace: str = "aitj-system"
    operator_selector: str = "app.kubernetes.io/name=aitj"
    node_hold: float = 8.0  # a NotReady node or a cordon lasts this long
    silent_hold: float = 90.0  # a silent node is revived once seen Unknown, or after this
    hang_hold: float = 600.0  # a hang lasts until its job's restart is seen, or this long
    kill_hold: float = 60.0  # a kill lasts until its pod is seen restarted or gone, or this long

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api)


def steady_jobs(world: World, jobs: set[JobKey]) -> list[JobKey]:
    """steady_jobs: the watched jobs that are steady now, by name."""
    none = Expected()
    return sorted(k for k in jobs if k in world.jobs and steady(world, k, none))


def pod_targets(world: World, jobs: list[JobKey], replicas: tuple[str, ...] = ()) -> list[PodView]:
    """pod_targets: the Running current pods of ``jobs`` a pod fault may hit, of ``replicas``
    only if given, by namespace and name (``Planned.pick`` indexes them)."""
    return sorted(
        (
            p
            for k in jobs
            for p in world.pods_of(k)
            if world.current(p)
            and world.live(p)
            and p.phase == "Running"
            and (not replicas or p.replica in replicas)
        ),
        key=lambda p: (p.namespace, p.name),
    )


def _nodes(world: World, jobs: list[JobKey], everything: set[JobKey]) -> list[tuple[str, list[JobKey]]]:
    """_nodes: Ready, schedulable nodes holding pods of the watched jobs, where every job with
    a pod there is steady; with the jobs on each. One Ready node is always left alone."""
    ready = [n for n in sorted(world.nodes) if world.nodes[n].is_ready and not world.nodes[n].unschedulable]
    out = []
    for name in ready:
        on = {(p.namespace, p.job or "") for u in world.on_node.get(name, ()) if (p := world.pods[u])}
        on &= everything
        if on and on <= set(jobs):
            out.append((name, sorted(on)))
    return out if len(ready) > 1 else []


def carry_out(
    ctx: Context, world: World, p: Planned, ok: list[JobKey], jobs: set[JobKey], t: float, free: list[JobKey]
) -> FaultRecord:
    """carry_out: fault ``p`` on a target picked among the watched ``jobs``: for a node or a
    replicas edit, among those ``ok`` (steady, not settling from an earlier fault); for a pod
    fault, any Running current pod of the jobs ``free`` (not settling from an earlier fault,
    steady or not: the expected restarts are worked out from what happens, whatever the
    order). NoTarget if none. A call
    the API refuses is recorded as the fault's error (its pods then count for nothing)."""
    rec = FaultRecord(p.n, t, p.kind, "")
    try:
        if p.kind is FaultKind.HANG:
            _hang(ctx, world, p, free, rec)
        elif p.kind is FaultKind.KILL:
            _kill(ctx, world, p, free, rec)
        else:
            _carry_out(ctx, world, p, ok, jobs, rec, free)
    except ApiException as e:
        rec.error = f"{e.status} {e.reason}"
    return rec


def _carry_out(
    ctx: Context,
    world: World,
    p: Planned,
    ok: list[JobKey],
    jobs: set[JobKey],
    rec: FaultRecord,
    free: list[JobKey],
) -> None:
    if p.kind in POD_FAULTS:
        pods = pod_targets(world, free, ctx.replicas)
        if not pods:
            of = f" of replica {'/'.join(ctx.replicas)}" if ctx.replicas else ""
            raise NoTarget(f"no Running pod{of} of a job not already disturbed")
        pod = pods[p.pick % len(pods)]
        _aim(rec, pod)
        _pod_fault(ctx, p, pod, rec)
    elif p.kind in (FaultKind.NODE_NOT_READY, FaultKind.NODE_SILENT, FaultKind.DRAIN):
        nodes = _nodes(world, ok, jobs)
        if not nodes:
            raise NoTarget("no node whose jobs are all steady")
        name, on = nodes[p.pick % len(nodes)]
        rec.target, rec.jobs = name, tuple(on)
        _node_fault(ctx, world, p.kind, name, jobs, rec)
    elif p.kind in (FaultKind.SCALE_UP, FaultKind.SCALE_DOWN):
        _scale(ctx, world, p, ok, rec)
    elif p.kind is FaultKind.OPERATOR_KILL:
        rec.target = ctx.operators.kill_one(p.pick)
    elif p.kind is FaultKind.OPERATOR_POD_DELETE:
        pods = ctx.core.list_namespaced_pod(
            ctx.operator_namespace, label_selector=ctx.operator_selector
        ).items
        if not pods:
            raise NoTarget(f"no operator pod in {ctx.operator_namespace} ({ctx.operator_selector})")
        name = sorted(x.metadata.name for x in pods)[p.pick % len(pods)]
        ctx.core.delete_namespaced_pod(name, ctx.operator_namespace)
        rec.target = f"{ctx.operator_namespace}/{name}"
    elif p.kind is FaultKind.APISERVER_RESTART:
        assert ctx.local is not None, "an apiserver restart needs the local control plane"
        dev.restart_apiserver(ctx.local, down_seconds=2.0)
        rec.target = "kube-apiserver"


def _aim(rec: FaultRecord, pod: PodView) -> None:
    """_aim records ``pod`` as the fault's target: its name, its job, and its uid among the pods
    the fault aims at (the ones whose failure the fault causes)."""
    rec.target = f"{pod.namespace}/{pod.name}"
    rec.jobs, rec.pods = ((pod.namespace, pod.job or ""),), (pod.uid,)


def _hang(ctx: Context, world: World, p: Planned, free: list[JobKey], rec: FaultRecord) -> None:
    """_hang: stop every process of a Running pod of a job that watches its progress
    (spec.progress), as a stalled rank is: the pod stays Running, its log goes silent."""
    watching = [k for k in free if (job := world.spec(k)) is not None and job.spec.progress is not None]
    pods = pod_targets(world, watching, ctx.replicas)
    if not pods:
        raise NoTarget("no Running pod of a job with spec.progress not already disturbed")
    pod = pods[p.pick % len(pods)]
    # Not among the pods aimed at (``rec.pods``): the stopped pod fails nothing itself; the job's
    # watched pod is the one that fails, with a hang (aitj.tools.chaos.expect.hang_restarts), and
    # the deletes of its restart are the operator's.
    rec.target, rec.jobs = f"{pod.namespace}/{pod.name}", ((pod.namespace, pod.job or ""),)
    sample = world.jobs.get(rec.jobs[0])
    rec.restarts_before = sum(sample.restart_count.values()) if sample is not None else 0
    rec.detail = pod_stop(ctx.api, pod.namespace, pod.name)


def _kill(ctx: Context, world: World, p: Planned, free: list[JobKey], rec: FaultRecord) -> None:
    """_kill: SIGKILL of the first app container of a Running pod on a local real node
    (aitj.tools.chaos.kill); the pod is aimed at (``rec.pods``): ``expect`` tells an in-place
    restart from a failure by the pod's in-place codes."""
    real = real_node_sockets(ctx.local)
    pods = [q for q in pod_targets(world, free, ctx.replicas) if q.node_name in real]
    if not pods:
        where = (
            ", ".join(sorted(real)) or "none running (the kill fault needs the local testbed's real nodes)"
        )
        raise NoTarget(f"no Running pod on a local real node ({where}) of a job not already disturbed")
    pod = pods[p.pick % len(pods)]
    _aim(rec, pod)
    rec.restarts_before = pod.restarts
    raw = json.loads(ctx.core.read_namespaced_pod(pod.name, pod.namespace, _preload_content=False).data)
    if (raw.get("metadata") or {}).get("uid") != pod.uid:
        raise NoTarget(f"pod {pod.name} was replaced meanwhile")
    try:
        rec.detail = kill(ctx.local, raw)
    except CannotKill as e:
        rec.error = str(e)


def _kill_over(ctx: Context, world: World, rec: FaultRecord, t: float) -> bool:
    """_kill_over: nothing to undo; a kill lasts until its pod is seen restarted in place,
    failed or gone (or kill_hold), so no other fault hits the job while the kubelet restarts
    the containers."""
    pod = world.pods.get(rec.pods[0]) if rec.pods else None
    over = pod is None or pod.deleting or pod.phase != "Running" or pod.restarts > (rec.restarts_before or 0)
    if rec.effect is None and over:
        rec.effect = t
    return rec.effect is not None or t > rec.t + ctx.kill_hold


# ``kill -STOP -1`` signals every process the shell may signal but PID 1 (a container cannot
# stop its own init) and itself: the training and everything else the container runs.
STOP_ALL = ["/bin/sh", "-c", "kill -STOP -1; echo stopped"]


def pod_stop(api_client: client.ApiClient, namespace: str, pod: str) -> str:
    """pod_stop: SIGSTOP of every process of the pod's first container but its PID 1, through
    pods/exec (``kubectl exec <pod> -- kill -STOP -1``); what the command said."""
    said = stream(
        client.CoreV1Api(api_client).connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=STOP_ALL,
        stdin=False,
        stdout=True,
        stderr=True,
        tty=False,
        _request_timeout=30,
    )
    return f"SIGSTOP: {str(said).strip()[:200]}"


def _pod_fault(ctx: Context, p: Planned, pod: PodView, rec: FaultRecord) -> None:
    if p.kind is FaultKind.FORCE_DELETE:
        dev.force_delete(ctx.api, pod.namespace, pod.name)
    elif p.kind is FaultKind.GRACEFUL_DELETE:
        ctx.core.delete_namespaced_pod(pod.name, pod.namespace)
    elif p.kind is FaultKind.EVICT:
        dev.evict(ctx.api, pod.namespace, pod.name)
    else:
        code = ctx.exit_codes[p.pick % len(ctx.exit_codes)]
        dev.pod_exit(ctx.api, pod.namespace, pod.name, code)
        rec.detail = f"exit code {code}"


def _node_fault(
    ctx: Context, world: World, kind: FaultKind, name: str, jobs: set[JobKey], rec: FaultRecord
) -> None:
    if kind is FaultKind.NODE_NOT_READY:
        dev.node_not_ready(ctx.api, name)
    elif kind is FaultKind.NODE_SILENT:
        dev.node_silent(ctx.api, name)
    else:
        ctx.core.patch_node(name, {"spec": {"unschedulable": True}})
        victims = sorted(
            (p for u in world.on_node.get(name, ()) if (p := world.pods[u]) and (p.namespace, p.job) in jobs),
            key=lambda p: p.name,
        )
        evicted = [v for v in victims if _evict(ctx, v)]
        rec.pods = tuple(v.uid for v in evicted)
        refused = len(victims) - len(evicted)
        rec.detail = f"{len(evicted)} pods evicted" + (
            f", {refused} refused by disruption budgets" if refused else ""
        )


def _evict(ctx: Context, pod: PodView, tries: int = 5) -> bool:
    """_evict: evict as ``kubectl drain`` does, trying again while a disruption budget refuses
    (429); False if it still refuses."""
    for _ in range(tries):
        try:
            dev.evict(ctx.api, pod.namespace, pod.name)
            return True
        except ApiException as e:
            if e.status != 429:
                raise
            time.sleep(1.0)
    return False


def _scale(ctx: Context, world: World, p: Planned, ok: list[JobKey], rec: FaultRecord) -> None:
    up = p.kind is FaultKind.SCALE_UP
    options = []
    for key in ok:
        job = world.spec(key)
        if job is None or not job.spec.fault_tolerant:
            continue
        for r in job.spec.replicas:
            room = (r.max_replicas - r.replicas) if up else (r.replicas - r.min_replicas)
            if r.replica_type is ReplicaType.WORKER and room > 0:
                options.append((key, r.name, r.replicas, min(room, 2)))
    if not options:
        raise NoTarget("no steady elastic job with room to scale " + ("up" if up else "down"))
    key, replica, now, room = options[p.pick % len(options)]
    to = now + (1 + p.pick // 7 % room) * (1 if up else -1)
    body = {"spec": {"replicaSpecs": {replica: {"replicas": to}}}}
    client.CustomObjectsApi(ctx.api).patch_namespaced_custom_object(
        api.GROUP, api.VERSION, key[0], api.PLURAL, key[1], body
    )
    rec.target, rec.jobs, rec.detail = f"{key[0]}/{key[1]}", (key,), f"{replica} replicas {now} -> {to}"


def heal(ctx: Context, world: World, rec: FaultRecord, t: float, *, force: bool = False) -> bool:
    """heal: undo a lasting fault once due, or at once with ``force`` (True when done, or when
    there is nothing to undo)."""
    if rec.kind in (FaultKind.NODE_NOT_READY, FaultKind.DRAIN):
        if t < rec.t + ctx.node_hold and not force:
            return False
        if rec.kind is FaultKind.DRAIN:
            ctx.core.patch_node(rec.target, {"spec": {"unschedulable": False}})
        else:
            dev.node_ready(ctx.api, rec.target)
        return True
    if rec.kind is FaultKind.HANG:
        # Nothing to undo (the stopped pod goes with the restart); it lasts until the operator
        # has restarted its job (or hang_hold): the job looks steady while it hangs.
        sample = world.jobs.get(rec.jobs[0]) if rec.jobs else None
        seen = sample is not None and sum(sample.restart_count.values()) > (rec.restarts_before or 0)
        if rec.effect is None and seen:
            rec.effect = t
        return rec.effect is not None or t > rec.t + ctx.hang_hold or force
    if rec.kind is FaultKind.KILL:
        return _kill_over(ctx, world, rec, t) or force
    if rec.kind is FaultKind.NODE_SILENT:
        node = world.nodes.get(rec.target)
        if rec.effect is None and node is not None and node.ready == "Unknown":
            rec.effect = t
        # Lost for node_hold once the control plane has noticed, so the operator sees it too.
        due = (rec.effect is not None and t > rec.effect + ctx.node_hold) or t > rec.t + ctx.silent_hold
        if not (due or force):
            return False
        dev.node_revive(ctx.api, rec.target)
        return True
    return True
