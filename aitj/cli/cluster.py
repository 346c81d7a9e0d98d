"""``aitj dev cluster``: the local control plane (build, up, down, status, kubeconfig).

Sits in the command-line layer: parses options and calls ``aitj.devcluster``.
"""

from __future__ import annotations

import os
import sys

import click

from aitj.cli.options import cluster_name_option, example
from aitj.cli.output import say as _say
from aitj.cli.show import emit
from aitj.devcluster import nodes as nodes_mod
from aitj.devcluster.build import BuildError, ensure_built
from aitj.devcluster.cluster import ClusterConfig, ClusterError, LocalCluster
from aitj.devcluster.realnodes.images import node_images
from aitj.devcluster.realnodes.layout import MAX_REAL_NODES
from aitj.devcluster.versions import BUILT


@click.group(epilog=example("aitj dev cluster up --nodes 3 --node-profile cce"))
def cluster() -> None:
    """The local control plane: real etcd, kube-apiserver, kube-controller-manager,
    kube-scheduler built from source, with kwok-simulated nodes. Everything binds to 127.0.0.1."""


_DEFAULTS = ClusterConfig()


@cluster.command("build", epilog=example("aitj dev cluster build", "aitj dev cluster build --only helm"))
@click.option(
    "--only",
    multiple=True,
    type=click.Choice([c.name for c in BUILT]),
    help="Build only this component (repeatable); the real nodes' images are left alone.",
)
def cluster_build(only: tuple[str, ...]) -> None:
    """Build (or reuse) the control plane binaries, the real nodes' programs, Prometheus with
    promtool (the dashboards' tests), Helm (the chart's tests, make release) and, as root, the
    images real nodes run (docs/real-nodes.md)."""
    try:
        took = ensure_built([c for c in BUILT if not only or c.name in only], say=_say)
        if not only and os.geteuid() == 0:
            node_images(say=_say)
        elif not only:
            _say("the real nodes' images are not built: building them needs root")
    except (BuildError, ClusterError) as e:
        raise click.ClickException(str(e)) from e
    if took == 0:
        _say(f"{', '.join(only) if only else 'control plane, Prometheus and Helm'} already built (cached)")


@cluster.command(
    "up",
    epilog=example(
        "aitj dev cluster up --name dev --nodes 3 --node-profile gpu",
        "aitj dev cluster up --name real --nodes 2 --node-profile cce --real-nodes 2",
        "aitj dev cluster up --name perf --nodes 100 --node-profile cpu --node-status-seconds 300",
    ),
)
@cluster_name_option
@click.option(
    "--nodes", default=_DEFAULTS.nodes, show_default=True, type=click.IntRange(min=0), help="Simulated nodes."
)
@click.option(
    "--node-profile",
    default=_DEFAULTS.node_profile,
    show_default=True,
    type=click.Choice(sorted(nodes_mod.PROFILES)),
    help="Capacity and labels of the nodes: "
    + "; ".join(f"{p.name}: {p.description}" for p in nodes_mod.PROFILES.values()),
)
@click.option(
    "--base-port",
    default=_DEFAULTS.base_port,
    show_default=True,
    type=click.IntRange(1024, 65530),
    help="The apiserver's port; the other components use the next six.",
)
@click.option(
    "--node-grace",
    default=_DEFAULTS.node_grace_seconds,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds without a heartbeat before a node is marked Unknown (node-monitor-grace-period).",
)
@click.option(
    "--node-status-seconds",
    type=click.IntRange(min=1),
    help="How often a simulated node posts its status while nothing in it changes "
    "(a kubelet's nodeStatusReportFrequency, 300 in a real cluster and in make bench); "
    "default: half the Lease's duration.",
)
@click.option(
    "--real-nodes",
    default=_DEFAULTS.real_nodes,
    show_default=True,
    type=click.IntRange(0, MAX_REAL_NODES),
    help="Real nodes beside the simulated ones: a kubelet and containerd each, where containers run "
    "(needs root; the first time builds their programs and images). Only pods of namespaces "
    "annotated for them land there (docs/real-nodes.md).",
)
def cluster_up(
    name: str,
    nodes: int,
    node_profile: str,
    base_port: int,
    node_grace: int,
    node_status_seconds: int | None,
    real_nodes: int,
) -> None:
    """Start the local cluster in the background; prints the kubeconfig path last."""
    config = ClusterConfig(
        nodes=nodes,
        node_profile=node_profile,
        base_port=base_port,
        node_grace_seconds=node_grace,
        node_lease_seconds=max(4, min(40, node_grace // 2)),
        node_status_seconds=node_status_seconds,
        real_nodes=real_nodes,
    )
    try:
        kubeconfig = LocalCluster(name).up(config, say=_say)
    except (ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e
    click.echo(str(kubeconfig))


@cluster.command("down", epilog=example("aitj dev cluster down --name dev"))
@cluster_name_option
def cluster_down(name: str) -> None:
    """Stop every component of the local cluster."""
    was = LocalCluster(name).down()
    _say(f"stopped: {', '.join(was)}" if was else f"cluster {name!r} was not running")


@cluster.command("status", epilog=example("aitj dev cluster status --name dev -o json"))
@cluster_name_option
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), help="json or yaml; default: text.")
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Deprecated: -o json.")
def cluster_status(name: str, output: str | None, as_json: bool) -> None:
    """Show whether each component runs and the cluster is healthy (exit 1 if not)."""
    info = LocalCluster(name).status()
    output = "json" if as_json else output
    if output is not None:
        emit(info, output)
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


@cluster.command(
    "kubeconfig", epilog=example("kubectl --kubeconfig=$(aitj dev cluster kubeconfig --name dev) get nodes")
)
@cluster_name_option
def cluster_kubeconfig(name: str) -> None:
    """Print the path of the cluster's admin kubeconfig."""
    c = LocalCluster(name)
    if not c.kubeconfig.exists():
        raise click.ClickException(f"cluster {name!r} has not been set up: run `aitj dev cluster up`")
    click.echo(str(c.kubeconfig))
