"""The ``aitj`` command line: the operator, the local cluster, and job tools.

Thin: each command parses its options and calls into the module that does the work.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from aitj.devcluster import nodes as nodes_mod
from aitj.devcluster.build import BuildError, ensure_built
from aitj.devcluster.cluster import DEFAULT_BASE_PORT, ClusterConfig, ClusterError, LocalCluster

err = Console(stderr=True)


def _say(message: str) -> None:
    err.print(message, highlight=False)


@click.group()
@click.version_option(package_name="aitj")
def main() -> None:
    """aitj: keeps distributed training jobs (AITrainingJob) alive on Kubernetes."""


@main.group()
def cluster() -> None:
    """The local control plane: real etcd, kube-apiserver, kube-controller-manager,
    kube-scheduler built from source, with kwok-simulated nodes. Everything binds to 127.0.0.1."""


_name_option = click.option(
    "--name", default="default", show_default=True, help="Cluster name (state folder)."
)


@cluster.command("build")
def cluster_build() -> None:
    """Build (or reuse) the control plane binaries."""
    try:
        took = ensure_built(say=_say)
    except BuildError as e:
        raise click.ClickException(str(e)) from e
    if took == 0:
        _say("control plane binaries already built (cached)")


@cluster.command("up")
@_name_option
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(min=0), help="Simulated nodes.")
@click.option(
    "--node-profile",
    default=nodes_mod.DEFAULT_PROFILE,
    show_default=True,
    type=click.Choice(sorted(nodes_mod.PROFILES)),
    help="Capacity and labels of the nodes: "
    + "; ".join(f"{p.name}: {p.description}" for p in nodes_mod.PROFILES.values()),
)
@click.option(
    "--base-port",
    default=DEFAULT_BASE_PORT,
    show_default=True,
    type=click.IntRange(1024, 65530),
    help="The apiserver's port; the other components use the next five.",
)
@click.option(
    "--node-grace",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds without a heartbeat before a node is marked Unknown (node-monitor-grace-period).",
)
def cluster_up(name: str, nodes: int, node_profile: str, base_port: int, node_grace: int) -> None:
    """Start the local cluster in the background; prints the kubeconfig path last."""
    config = ClusterConfig(
        nodes=nodes,
        node_profile=node_profile,
        base_port=base_port,
        node_grace_seconds=node_grace,
        node_lease_seconds=max(4, min(40, node_grace // 2)),
    )
    try:
        kubeconfig = LocalCluster(name).up(config, say=_say)
    except (ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e
    click.echo(str(kubeconfig))


@cluster.command("down")
@_name_option
def cluster_down(name: str) -> None:
    """Stop every component of the local cluster."""
    was = LocalCluster(name).down()
    _say(f"stopped: {', '.join(was)}" if was else f"cluster {name!r} was not running")


@cluster.command("status")
@_name_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def cluster_status(name: str, as_json: bool) -> None:
    """Show whether each component runs and the cluster is healthy (exit 1 if not)."""
    info = LocalCluster(name).status()
    if as_json:
        click.echo(json.dumps(info, indent=2))
    else:
        click.echo(f"cluster {info['name']}: {info['state']}")
        for comp, pid in (info.get("components") or {}).items():
            click.echo(f"  {comp:<24} {'running (pid ' + str(pid) + ')' if pid else 'stopped'}")
        for node, ready in (info.get("nodes") or {}).items():
            click.echo(f"  node {node:<19} Ready={ready}")
        for problem in info.get("problems") or []:
            click.echo(f"  not ready: {problem}")
        if "kubeconfig" in info:
            click.echo(f"  kubeconfig: {info['kubeconfig']}")
    sys.exit(0 if info["state"] == "healthy" else 1)


@cluster.command("kubeconfig")
@_name_option
def cluster_kubeconfig(name: str) -> None:
    """Print the path of the cluster's admin kubeconfig."""
    c = LocalCluster(name)
    if not c.kubeconfig.exists():
        raise click.ClickException(f"cluster {name!r} has not been set up: run `aitj cluster up`")
    click.echo(str(c.kubeconfig))


@main.command("run")
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)
@click.option(
    "--namespace",
    "-n",
    "namespaces",
    multiple=True,
    help="Namespace to operate in; repeat for more. Default: all namespaces.",
)
@click.option(
    "--metrics-port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Serve Prometheus metrics on ADDRESS:PORT/metrics (0: off).",
)
@click.option(
    "--metrics-address",
    default="127.0.0.1",
    show_default=True,
    help="Address the metrics server binds; 0.0.0.0 in a pod so Prometheus can scrape it.",
)
@click.option(
    "--priority-class",
    "priority_classes",
    multiple=True,
    metavar="PRIORITY=CLASS",
    help="Map a job's spec.priority (high, normal, low) to a PriorityClass name; repeatable.",
)
@click.option("--json-logs", is_flag=True, help="Log JSON lines instead of key=value text.")
def run_operator(
    kubeconfig: Path | None,
    namespaces: tuple[str, ...],
    metrics_port: int,
    metrics_address: str,
    priority_classes: tuple[str, ...],
    json_logs: bool,
) -> None:
    """Run the operator: reconcile AITrainingJobs until interrupted."""
    from aitj.runner import run

    mapping: dict[str, str] = {}
    for item in priority_classes:
        key, sep, value = item.partition("=")
        if not sep or key not in ("high", "normal", "low") or not value:
            raise click.BadParameter(
                f"{item!r}: expected high=CLASS, normal=CLASS or low=CLASS", param_hint="--priority-class"
            )
        mapping[key] = value
    run(
        kubeconfig=kubeconfig,
        namespaces=namespaces,
        metrics_port=metrics_port,
        metrics_address=metrics_address,
        priority_classes=mapping,
        json_logs=json_logs,
    )


@main.command("demo")
@_name_option
def demo(name: str) -> None:
    """Run the CCE seed training job on the local cluster and show what happens."""
    from aitj.demo import DemoError, run_demo

    try:
        run_demo(cluster_name=name)
    except (DemoError, ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e


@main.command("bench")
def bench() -> None:
    """Print benchmark figures: warm cluster start, recovery latency of a force-deleted trainer."""
    from aitj.bench import run_all

    try:
        run_all(say=lambda m: click.echo(m))
    except (ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e


import aitj.cli_scale  # noqa: E402, F401  (registers scaleout and scalein)
from aitj.cli_explain import explain  # noqa: E402

main.add_command(explain)
