"""``aitj wait JOB`` and ``aitj delete JOB``: kubectl's verbs, through ``aitj.client``.

Exit codes (the CLI's one table): 0 the job reached the phase (wait) or is deleted; 1 an
error: no such job, the job finished in another phase, ``--timeout`` ran out; 2 a usage error.
"""

from __future__ import annotations

import click

from aitj.cli.options import DURATION, client, complete_jobs, example, job_options, output_option
from aitj.cli.show import emit, name_of
from aitj.core import api


def _phases(_ctx: click.Context, _param: click.Parameter, value: str) -> frozenset[str]:
    """_phases: ``--for`` as phases: ``phase=Running``, ``phase=Succeeded,Failed``, or
    ``finished`` (Succeeded, Failed or Timeout)."""
    if value == "finished":
        return frozenset(api.FINISHED_PHASES)
    key, sep, phases = value.partition("=")
    wanted = {p.strip() for p in phases.split(",") if p.strip()}
    known = {str(p) for p in api.Phase}
    if key != "phase" or not sep or not wanted or wanted - known:
        raise click.BadParameter(
            f"{value!r}: write finished or phase=PHASE[,PHASE] of {', '.join(sorted(known))}"
        )
    return frozenset(wanted)


@click.command(
    "wait",
    epilog=example("aitj wait mnist --for phase=Running --timeout 5m", "aitj wait mnist --for finished"),
)
@click.argument("job", shell_complete=complete_jobs)
@click.option(
    "--for",
    "phases",
    default="finished",
    show_default=True,
    callback=_phases,
    help="phase=PHASE[,PHASE] (e.g. phase=Running), or finished: Succeeded, Failed or Timeout.",
)
@click.option("--timeout", type=DURATION, default="10m", show_default=True, help="How long to wait.")
@job_options
@output_option("json", "yaml", "name")
def wait(job: str, phases: frozenset[str], timeout: float, namespace: str | None, output: str | None) -> None:
    """Wait until JOB is in one of the phases asked for. Exit 1 if it finishes in another one
    first (its last condition's message is shown) or the timeout runs out."""
    done = client(namespace).wait(job, phases=phases, timeout=timeout)
    if output == "name":
        click.echo(name_of(done.name))
    elif output is not None:
        emit(dict(done.manifest), output)
    else:
        click.echo(f"aitrainingjob {done.namespace}/{done.name} {done.phase}")


@click.command("delete", epilog=example("aitj delete mnist -n team-a --wait"))
@click.argument("job", shell_complete=complete_jobs)
@click.option("--wait/--no-wait", default=False, show_default=True, help="Return once the job is gone.")
@click.option("--timeout", type=DURATION, default="2m", show_default=True, help="How long --wait waits.")
@job_options
@output_option("name")
def delete(job: str, wait: bool, timeout: float, namespace: str | None, output: str | None) -> None:
    """Delete JOB; its pods and other objects go with it."""
    jobs = client(namespace)
    jobs.delete(job, wait=wait, timeout=timeout)
    click.echo(name_of(job) if output == "name" else f"aitrainingjob {jobs.namespace}/{job} deleted")
