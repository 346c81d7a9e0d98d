"""``aitj demo`` and ``aitj bench``: the developer tools of ``aitj.tools``.

Sits in the command-line layer; the tools are imported when the command runs.
"""

from __future__ import annotations

import click

from aitj.cli.options import cluster_name_option, example
from aitj.devcluster.build import BuildError
from aitj.devcluster.cluster import ClusterError


@click.command("demo", epilog=example("aitj demo --name default"))
@cluster_name_option
def demo(name: str) -> None:
    """Run the CCE seed training job on the local cluster and show what happens."""
    from aitj.tools.demo import DemoError, run_demo

    try:
        run_demo(cluster_name=name)
    except (DemoError, ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e


@click.command("bench", epilog=example("aitj bench"))
def bench() -> None:
    """Print benchmark figures: warm cluster start, recovery latency of a force-deleted trainer."""
    from aitj.tools.bench import run_all

    try:
        run_all(say=lambda m: click.echo(m))
    except (ClusterError, BuildError) as e:
        raise click.ClickException(str(e)) from e
