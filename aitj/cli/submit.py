"""``aitj submit``: an AITrainingJob from Arena-like flags (``arena submit etjob``).

Thin: the flags become a ``Submission``; the pure ``aitj.core.render.submit`` checks it and
renders the manifest; ``--dry-run`` (kubectl's ``--dry-run=client``) prints it as YAML (it
applies with ``kubectl apply --validate=strict``), ``--dry-run=server`` has admission check
it, else ``aitj.client`` creates it. Exit 0 created or printed; 1 refused (the flags, in one
line, or the apiserver's own words), no cluster; 2 a usage error.
"""

from __future__ import annotations

import click
import yaml

from aitj.cli.options import DURATION, client, example, job_options, output_option
from aitj.cli.show import emit, name_of
from aitj.client import Invalid
from aitj.core.render.submit import Submission, problems, render_submission


def _pairs(values: tuple[str, ...], flag: str) -> tuple[tuple[str, str], ...]:
    out = []
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE", param_hint=flag)
        out.append((key, value))
    return tuple(out)


@click.command(
    "submit",
    epilog=example(
        "aitj submit --name mnist --image horovod/horovod:0.28.1 --workers 3 --min-workers 1 \\",
        "  --max-workers 5 --gpus 1 --retry-exit-codes 129,101 \\",
        '  --command "horovodrun -np 3 --host-discovery-script /etc/edl/discover_hosts.sh python train.py"',
    ),
)
@click.option("--name", required=True, help="The job's name (a DNS-1035 label).")
@click.option("--image", required=True, help="The container image of every pod.")
@click.option(
    "--command",
    required=True,
    help="What the job runs, with /bin/sh -c: in the launcher (horovod, mpi), else in every worker.",
)
@click.option("--workers", default=1, show_default=True, type=int, help="Worker pods (the trainer replica).")
@click.option("--min-workers", type=int, help="Fewest workers a scale-in may leave (default: --workers).")
@click.option("--max-workers", type=int, help="Most workers a scale-out may reach (default: --workers).")
@click.option("--gpus", default=0, show_default=True, type=int, help="GPUs per worker.")
@click.option(
    "--gpu-resource",
    default="nvidia.com/gpu",
    show_default=True,
    help="The GPU resource name (CCE: baidu.com/v100_32g_cgpu).",
)
@click.option("--cpu", help="CPU per pod (request = limit), e.g. 4.")
@click.option("--memory", help="Memory per pod (request = limit), e.g. 16Gi.")
@click.option(
    "--framework",
    default="horovod",
    show_default=True,
    type=click.Choice(["horovod", "mpi", "paddle", "pytorch", "tensorflow"]),
    help="spec.frameworkType; horovod and mpi get a launcher, ssh and host discovery.",
)
@click.option("--launcher/--no-launcher", default=None, help="Override whether a launcher runs the command.")
@click.option(
    "--fault-tolerant/--no-fault-tolerant",
    default=True,
    show_default=True,
    help="Restart pods lost to node failure, force delete or eviction; allow scaling.",
)
@click.option("--restart-limit", default=100, show_default=True, type=int, help="Restarts per replica.")
@click.option(
    "--retry-exit-codes", metavar="CODES", help='Exit codes that restart the pod, e.g. "129,101" or 130-140.'
)
@click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="Environment variable; repeatable.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Pod label; repeatable.")
@click.option("--scheduler-name", help="The pods' schedulerName (CCE: volcano).")
@click.option("--priority", type=click.Choice(["high", "normal", "low"]), help="spec.priority.")
@click.option(
    "--time-limit",
    type=DURATION,
    metavar="DURATION",
    help="spec.timeLimit: how long from Running (2h, 3600).",
)
@click.option(
    "--dry-run",
    type=click.Choice(["client", "server"]),
    is_flag=False,
    flag_value="client",
    default=None,
    help="client (or the bare flag): print the AITrainingJob as YAML; server: have admission check it. "
    "Nothing is created.",
)
@job_options
@output_option("json", "yaml", "name")
def submit(
    name: str,
    image: str,
    command: str,
    workers: int,
    min_workers: int | None,
    max_workers: int | None,
    gpus: int,
    gpu_resource: str,
    cpu: str | None,
    memory: str | None,
    framework: str,
    launcher: bool | None,
    fault_tolerant: bool,
    restart_limit: int,
    retry_exit_codes: str | None,
    env: tuple[str, ...],
    labels: tuple[str, ...],
    scheduler_name: str | None,
    priority: str | None,
    time_limit: float | None,
    dry_run: str | None,
    namespace: str | None,
    output: str | None,
) -> None:
    """Submit an elastic, fault-tolerant training job (an AITrainingJob), as Arena's
    ``submit etjob`` does. Follow it with ``aitj get NAME`` and ``aitj logs NAME``."""
    submission = Submission(
        name=name,
        image=image,
        command=command,
        namespace=namespace,
        workers=workers,
        min_workers=min_workers,
        max_workers=max_workers,
        gpus=gpus,
        gpu_resource=gpu_resource,
        cpu=cpu,
        memory=memory,
        framework=framework,
        launcher=launcher,
        fault_tolerant=fault_tolerant,
        restart_limit=restart_limit,
        retry_exit_codes=retry_exit_codes,
        env=_pairs(env, "--env"),
        labels=_pairs(labels, "--label"),
        scheduler_name=scheduler_name,
        priority=priority,
        time_limit=None if time_limit is None else int(time_limit),
    )
    wrong = problems(submission)
    if wrong:
        raise Invalid("; ".join(wrong))
    if dry_run == "client":
        manifest = render_submission(submission)
        if output == "json":
            emit(manifest, "json")
        else:
            click.echo(yaml.safe_dump(manifest, sort_keys=False), nl=False)
        return
    created = client(namespace).submit(submission, dry_run=dry_run == "server")
    if output == "name":
        click.echo(name_of(created.name))
    elif output is not None:
        emit(dict(created.manifest), output)
    else:
        checked = " (server dry run)" if dry_run else ""
        click.echo(f"aitrainingjob {created.namespace}/{created.name} created{checked}")
