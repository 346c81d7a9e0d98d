"""``aitj logs JOB``: the job's pod logs through the apiserver's pod log endpoint, each line
prefixed with the pod's replica and index (``[trainer 0] ...``), as ``arena logs`` does.

Thin: ``aitj.client.Client.logs`` picks the pods (``--replica``, ``--index``, ``-l``) and
reads them, with ``-f`` every chosen pod at once until the streams end or Ctrl-C. Exit 0; 1 an
unknown job, no such pod, a log that cannot be read (the other pods' logs are still printed);
2 a usage error.
"""

from __future__ import annotations

import click

from aitj.cli.options import EXIT_ERROR, client, complete_jobs, example, job_options


@click.command("logs", epilog=example("aitj logs test-horovod-elastic --replica launcher --tail 100 -f"))
@click.argument("job", shell_complete=complete_jobs)
@click.option("--replica", help="Only the pods of this replica (e.g. trainer, launcher).")
@click.option("--index", type=click.IntRange(min=0), help="Only the pod of this index.")
@click.option("-c", "--container", help="The container to read (default: each pod's first).")
@click.option("--tail", type=click.IntRange(min=0), help="Only the last N lines of each pod.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until interrupted.")
@click.option("--prefix/--no-prefix", default=True, show_default=True, help="Each line's [replica index].")
@job_options
def logs(
    job: str,
    replica: str | None,
    index: int | None,
    container: str | None,
    tail: int | None,
    follow: bool,
    prefix: bool,
    namespace: str | None,
) -> None:
    """Print the logs of JOB's pods, each line prefixed with the pod's replica and index."""
    lines = client(namespace).logs(
        job, replica=replica, index=index, container=container, tail=tail, follow=follow
    )
    failed = False
    try:
        for line in lines:
            if line.error is not None:
                click.echo(f"error: {line.error}", err=True)
                failed = True
            else:
                click.echo(line.prefix + line.text if prefix else line.text)
    except KeyboardInterrupt:
        return  # Ctrl-C: the user stopped it, not a failure
    if failed:
        raise SystemExit(EXIT_ERROR)
