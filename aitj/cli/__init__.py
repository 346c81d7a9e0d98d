"""The ``aitj`` command line: one module per command group, registered here.

Layer: the top. It may import ``aitj.tools``, ``aitj.client``, ``aitj.controller``,
``aitj.devcluster`` and ``aitj.core``; nothing imports it (import-linter's layers contract).
Each command parses its options and calls into the module that does the work. Installed
twice: as ``aitj`` and as the kubectl plugin ``kubectl-aitj`` (``kubectl aitj get JOB``).

- ``run``: the operator (``aitj run``).
- ``dev``, a group made here: the developer commands (``aitj dev cluster|demo|bench|dashboards``);
  their old spellings (``aitj cluster up``) still work, with a note.
- ``cluster``: the local control plane (``aitj dev cluster build|up|down|status|kubeconfig``).
- ``scale``: ``aitj scaleout`` / ``aitj scalein``.
- ``explain``: ``aitj explain JOB [POD]``.
- ``release``: ``aitj release --all`` (an operator removed for good lets go of its pods).
- ``jobs``: ``aitj get JOB``, ``aitj list``, ``aitj describe JOB``.
- ``lifecycle``: ``aitj wait JOB``, ``aitj delete JOB``.
- ``submit``: ``aitj submit`` (Arena-like flags to an AITrainingJob).
- ``logs``: ``aitj logs JOB``.
- ``tools``: ``aitj dev demo`` / ``aitj dev bench``.
- ``dashboards``: ``aitj dev dashboards generate|render`` (Grafana dashboards, alert rules, pictures).
- ``chaos``: ``aitj chaos`` (faults against jobs, invariants from its own watch).
- ``barrier``: ``aitj barrier`` (the seed's job barrier: waits until a job's workers run and resolve).

The job verbs read and write through ``aitj.client``; its errors (``AitjError``) end a command
here, as one line ``error: <sentence>`` and exit 1 (docs/cli.md has the one exit-code table: 0
done, 1 an error, 2 a usage error).

Helpers of the commands, not commands: ``options`` (options several commands take, kubectl's
global flags, durations, the exit codes, job-name completion),
``output`` (stderr lines), ``explain_text`` (an Explanation as text), ``scale_progress`` (how a
scale goes, read from the job alone), ``jobview`` (a job, its pods and Events as rows; pure),
``show`` (tables, JSON, YAML, names).
The command modules do not import each other.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click
from rich.console import Console

from aitj.cli.barrier import barrier
from aitj.cli.chaos import chaos
from aitj.cli.cluster import cluster
from aitj.cli.dashboards import dashboards
from aitj.cli.explain import explain
from aitj.cli.jobs import describe, get, list_jobs
from aitj.cli.lifecycle import delete, wait
from aitj.cli.logs import logs
from aitj.cli.options import EXIT_ERROR, EXIT_OK, example
from aitj.cli.release import release
from aitj.cli.run import run_operator
from aitj.cli.scale import scalein, scaleout
from aitj.cli.submit import submit
from aitj.cli.tools import bench, demo
from aitj.client import AitjError


class _Main(click.Group):
    """_Main: click's group, with a usage error (a bad option, a count out of range) as one
    line, ``error: <what> (see <command> --help)``, instead of click's three; and the
    developer commands' old spellings (``aitj cluster``) still taken, with a note on stderr."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in dev.commands and not ctx.resilient_parsing:
            click.echo(f"note: `aitj {cmd_name}` is now `aitj dev {cmd_name}`", err=True)
            return dev.commands[cmd_name]
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as e:
            where = f" (see {e.ctx.command_path} --help)" if e.ctx else ""
            click.echo(f"error: {e.format_message()}{where}", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            _one_line(e.format_message())
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(EXIT_ERROR)
        except AitjError as e:
            _one_line(str(e))
        except Exception as e:  # never a traceback; AITJ_DEBUG=1 shows it
            if os.environ.get("AITJ_DEBUG"):
                raise
            _one_line(f"{type(e).__name__}: {e} (AITJ_DEBUG=1 shows where)")
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def _one_line(message: str) -> NoReturn:
    """_one_line ends the command with ``error: <message>`` on stderr (one line), exit 1."""
    text = " ".join(message.split())
    Console(stderr=True, highlight=False).print(f"error: {text}", markup=False, soft_wrap=True)
    sys.exit(EXIT_ERROR)


@click.group(
    epilog=example("aitj dev cluster up --nodes 3", "aitj dev demo", "aitj dev bench --quick"),
)
def dev() -> None:
    """Developer commands: the local control plane, the demo, the benchmark, the dashboards."""


for command in (cluster, demo, bench, dashboards):
    dev.add_command(command)


@click.group(
    cls=_Main,
    epilog=example(
        'aitj submit --name demo --image busybox --workers 2 --command "echo hi"', "aitj get demo"
    ),
)
@click.version_option(package_name="aitj")
def main() -> None:
    """aitj: keeps distributed training jobs (AITrainingJob) alive on Kubernetes."""


for command in (
    run_operator,
    scaleout,
    scalein,
    explain,
    get,
    list_jobs,
    describe,
    submit,
    wait,
    delete,
    logs,
    release,
    chaos,
    barrier,
    dev,
):
    main.add_command(command)
