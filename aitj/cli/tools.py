"""``aitj dev demo`` and ``aitj dev bench``: the developer tools of ``aitj.tools``.

Sits in the command-line layer; the tools are imported when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from aitj.cli.options import cluster_name_option, example
from aitj.devcluster.build import BuildError
from aitj.devcluster.cluster import ClusterError


@click.command("demo", epilog=example("aitj dev demo --name default", "aitj dev demo --real-nodes"))
@cluster_name_option
@click.option(
    "--real-nodes",
    is_flag=True,
    help="On two real nodes (root): the seed's images pulled and run, Horovod training to the end "
    "(docs/real-nodes.md).",
)
def demo(name: str, real_nodes: bool) -> None:
    """Run the CCE seed training job on the local cluster and show what happens."""
    from aitj.tools.demo import DemoError, run_demo

    try:
        run_demo(cluster_name=name, real_nodes=real_nodes)
    except (DemoError, ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e


@click.command("bench", epilog=example("aitj dev bench --quick"))
@click.option(
    "--quick",
    is_flag=True,
    help="200 pods and one job of 512, no 10,000-pod figures: about 4 minutes instead of 20.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for results.json, table.md and the plots. Default: bench/ in the checkout.",
)
def bench(quick: bool, out: Path | None) -> None:
    """Measure recovery, scaling, API cost, CPU and memory on a fresh local cluster named
    "bench", against a floor client and the Job controller; print the table."""
    from aitj.tools.bench.run import FULL, QUICK, run_bench
    from aitj.tools.demo import REPO

    try:
        run_bench(
            QUICK if quick else FULL,
            mode="quick" if quick else "full",
            out=out or REPO / "bench",
            say=lambda m: click.echo(m),
        )
    except (ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e
