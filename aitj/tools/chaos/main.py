"""``aitj chaos`` from its settings to an exit code: find or start the cluster, the jobs and
the operators, print the schedule (``--dry-run``) or run it, report, clean up what it started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from aitj.controller.kubeclient import api_client
from aitj.devcluster.cluster import LocalCluster, free_base
from aitj.tools.chaos import bed, faults, progress, report
from aitj.tools.chaos.invariants import Bounds
from aitj.tools.chaos.operators import Operator, Operators
from aitj.tools.chaos.run import Options, Result, run
from aitj.tools.chaos.schedule import Allowed, FaultKind, Planned, available, describe, schedule

Say = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    kubeconfig: Path | None = None
    namespace: str | None = None
    selector: str = ""
    seed: int = 1
    duration: float = 600.0
    interval: float = 10.0
    max_faults: int | None = None
    dry_run: bool = False
    local: bool | None = None  # None: detect
    allow_drain: bool = False
    kinds: tuple[FaultKind, ...] = ()
    exit_codes: tuple[int, ...] = (137,)
    replicas: tuple[str, ...] = ()
    operators: int = 0
    leader_elect: bool = False
    operator_pid_file: Path | None = None
    operator_urls: tuple[str, ...] = ()
    operator_namespace: str = "aitj-system"
    operator_selector: str = "app.kubernetes.io/name=aitj"
    recovery_bound: float = 90.0
    progress: bool = False
    progress_bound: float = 120.0
    batch_size: int = 32
    delete_jobs: bool = False
    json_path: Path | None = None
    timeline_path: Path | None = None
    bed: str | None = None  # a local cluster to use, started if need be
    bed_jobs: int = 0
    bed_nodes: int = 6
    down: bool = False


def run_chaos(s: Settings, console: Console) -> int:
    """run_chaos: the command; 0 when no invariant was violated, 1 otherwise."""

    def say(m: str) -> None:
        console.print(m, markup=False, highlight=False, soft_wrap=True)

    if s.operators > 1 and not s.leader_elect:
        say("--operators above 1 needs --leader-elect: two operators without it would both act")
        return 2
    cluster = bed.up(s.bed, s.bed_nodes, say) if s.bed else None
    kubeconfig = cluster.kubeconfig if cluster is not None else s.kubeconfig
    api = api_client(kubeconfig)
    if cluster is None and s.local is not False:
        cluster = bed.find_local(api.configuration.host)
    if s.local and cluster is None:
        say("--local: no running local control plane has this kubeconfig's server")
        return 2
    ops = Operators(pid_file=s.operator_pid_file, urls=s.operator_urls)
    local = cluster is not None and s.local is not False
    if FaultKind.KILL in s.kinds and not local:
        say("--fault kill needs the local testbed's real nodes (their containerd): no local cluster here")
        return 2
    kinds = available(allowed(s, local), s.kinds)
    plan = schedule(s.seed, kinds, s.duration, s.interval, s.max_faults)
    where = (
        f"the local control plane {cluster.name!r}"
        if local and cluster
        else "a cluster (not the local control plane)"
    )
    say(
        f"seed {s.seed}, {len(plan)} faults over {s.duration:.0f}s against {where}; kinds: {', '.join(kinds)}"
    )
    if s.dry_run:
        for line in describe(plan):
            say(line)
        return 0
    try:
        if cluster is not None:
            _prepare(s, cluster, kubeconfig, ops, say)
        ctx = faults.Context(
            api,
            cluster if local else None,
            ops,
            exit_codes=s.exit_codes,
            replicas=s.replicas,
            operator_namespace=s.operator_namespace,
            operator_selector=s.operator_selector,
        )
        result = run(ctx, api_client(kubeconfig), options(s, plan), say)
    finally:
        ops.stop()
        if s.down and cluster is not None and s.bed:
            cluster.down()
    _report(s, result, console, say)
    return 1 if result.violations else 0


def allowed(s: Settings, local: bool) -> Allowed:
    """allowed: the faults the cluster offers. An operator pod is found only where the command
    neither runs the operators nor was named one (a pid file), and not on the local control
    plane; an operator process is killed only there."""
    named = s.operators > 0 or s.operator_pid_file is not None
    return Allowed(
        local=local,
        drain=s.allow_drain,
        operator_pod=not named and not local,
        operator_process=local and named,
    )


def options(s: Settings, plan: list[Planned]) -> Options:
    """options: the chaos loop's options; faults at least half the interval apart when the
    schedule has fallen behind."""
    return Options(
        s.namespace,
        s.selector,
        tuple(plan),
        s.duration,
        Bounds(recovery=s.recovery_bound),
        delete_jobs=s.delete_jobs,
        min_gap=s.interval / 2,
        training=progress.Settings(s.progress_bound, s.batch_size) if s.progress else None,
    )


def _prepare(s: Settings, cluster: LocalCluster, kubeconfig: Path | None, ops: Operators, say: Say) -> None:
    """_prepare starts the operators the command runs (with ``kubeconfig``, else the local
    cluster's own: the default kubeconfig found it) and creates the bed's jobs, on a local cluster."""
    if s.operators:
        kubeconfig = kubeconfig or cluster.kubeconfig
        extra = ("--leader-elect",) if s.leader_elect else ()
        base = free_base(18643)
        for i in range(s.operators):
            op = Operator(kubeconfig, base + i, cluster.logs, extra)
            op.start()
            ops.started.append(op)
    if s.bed_jobs:
        names = bed.create_jobs(cluster, s.namespace or "chaos", s.bed_jobs, s.seed)
        say(f"created jobs {', '.join(names)}")


def _report(s: Settings, result: Result, console: Console, say: Say) -> None:
    """_report prints the table and writes the JSON and the timeline plot asked for."""
    report.print_table(result, console)
    if s.json_path:
        report.write_json(result, s.json_path)
        say(f"wrote {s.json_path}")
    if s.timeline_path:
        report.plot_timeline(result, s.timeline_path)
        say(f"wrote {s.timeline_path}")
