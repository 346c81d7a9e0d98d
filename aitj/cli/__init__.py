"""The ``aitj`` command line: one module per command group, registered here.

Layer: the top. It may import ``aitj.tools``, ``aitj.controller``, ``aitj.devcluster`` and
``aitj.core``; nothing imports it (import-linter's layers contract). Each command parses its
options and calls into the module that does the work.

- ``run``: the operator (``aitj run``).
- ``cluster``: the local control plane (``aitj cluster build|up|down|status|kubeconfig``).
- ``scale``: ``aitj scaleout`` / ``aitj scalein``.
- ``explain``: ``aitj explain JOB [POD]``.
- ``release``: ``aitj release --all`` (an operator removed for good lets go of its pods).
- ``tools``: ``aitj demo`` / ``aitj bench``.

Helpers of the commands, not commands: ``options`` (options several commands take),
``output`` (stderr lines), ``explain_text`` (an Explanation as text), ``scale_progress`` (how a
scale goes, read from the job alone). The command modules do not import each other.
"""

from __future__ import annotations

import click

from aitj.cli.cluster import cluster
from aitj.cli.explain import explain
from aitj.cli.release import release
from aitj.cli.run import run_operator
from aitj.cli.scale import scalein, scaleout
from aitj.cli.tools import bench, demo


@click.group()
@click.version_option(package_name="aitj")
def main() -> None:
    """aitj: keeps distributed training jobs (AITrainingJob) alive on Kubernetes."""


for command in (run_operator, cluster, scaleout, scalein, explain, release, demo, bench):
    main.add_command(command)
