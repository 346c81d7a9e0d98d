"""``aitj chaos``: faults against training jobs, invariants from the command's own watch.

Thin: options to ``aitj.tools.chaos.main.Settings``; the engine is ``aitj.tools.chaos``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from aitj.cli.options import DURATION, Duration, all_namespaces_option, example, kubeconfig_option
from aitj.client import Connection
from aitj.tools.chaos.schedule import FaultKind


@click.command(
    "chaos",
    epilog=example(
        "aitj chaos -n team-a -l app=mnist --duration 5m --dry-run",
        "aitj chaos -A -l app=mnist --duration 10m --seed 7 --report chaos.json --timeline chaos.png",
        "aitj chaos -n team-a -l app=mnist --progress --fault force-delete --fault scale-up --timeline t.png",
    ),
)
@kubeconfig_option
@click.option(
    "-n", "--namespace", help="Only jobs of this namespace (default: the context's; with --bed, chaos)."
)
@all_namespaces_option
@click.option("-l", "--selector", default="", help="Label selector of the jobs to hit (default: every job).")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the schedule and the picks.")
@click.option(
    "--duration",
    default="10m",
    show_default=True,
    type=Duration(1),
    help="How long to cause faults (90s, 10m).",
)
@click.option("--interval", default="10s", show_default=True, type=Duration(0.5), help="Time between faults.")
@click.option("--max-faults", type=click.IntRange(1), help="At most this many faults.")
@click.option(
    "--dry-run", is_flag=True, help="Print the schedule and the fault kinds this cluster allows; do nothing."
)
@click.option(
    "--local/--no-local",
    default=None,
    help="Insist on (or refuse) the local control plane's faults; default: detected from the kubeconfig.",
)
@click.option("--allow-drain", is_flag=True, help="Also cordon and drain nodes that hold job pods.")
@click.option(
    "--fault",
    "kinds",
    multiple=True,
    type=click.Choice([k.value for k in FaultKind]),
    help=(
        "Only these fault kinds (repeatable; default: every kind the cluster allows, but hang and "
        "kill, which need real nodes and run only when named)."
    ),
)
@click.option(
    "--exit-code",
    "exit_codes",
    multiple=True,
    type=int,
    help="Exit codes for exit-code faults (default 137).",
)
@click.option(
    "--replica",
    "replicas",
    multiple=True,
    metavar="NAME",
    help="Pod faults hit pods of this replica only (repeatable; default: any), e.g. trainer: a "
    "launcher whose rules do not restart it ends the job when it is deleted.",
)
@click.option(
    "--operators",
    default=0,
    show_default=True,
    type=click.IntRange(0, 5),
    help="Start N local operators (`aitj run`).",
)
@click.option("--leader-elect", is_flag=True, help="Pass --leader-elect to the operators it starts.")
@click.option(
    "--operator-pid-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A local operator to SIGKILL.",
)
@click.option(
    "--operator-url", "operator_urls", multiple=True, help="An operator endpoint to probe (its /metrics)."
)
@click.option(
    "--operator-namespace", default="aitj-system", show_default=True, help="Where the operator's pod runs."
)
@click.option(
    "--operator-selector",
    default="app.kubernetes.io/name=aitj",
    show_default=True,
    help="The operator's pod labels.",
)
@click.option(
    "--recovery-bound",
    default="90s",
    show_default=True,
    type=DURATION,
    help="How long a disturbed job may take to be back.",
)
@click.option(
    "--progress",
    is_flag=True,
    help="Also read each job's training from its launcher's log (step lines): after every fault it "
    "must step past where it was within --progress-bound, and never start again from step 0 unless "
    "the job restarted whole (scope All).",
)
@click.option(
    "--progress-bound",
    default="2m",
    show_default=True,
    type=Duration(1),
    help="How long after a fault the training may take to complete a new step.",
)
@click.option(
    "--batch-size",
    default=32,
    show_default=True,
    type=click.IntRange(1),
    help="Samples per rank and step, for the samples per second of --progress.",
)
@click.option(
    "--delete-jobs", is_flag=True, help="Delete the jobs at the end and check nothing they owned is left."
)
@click.option(
    "--report",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report as JSON to this file.",
)
@click.option(
    "--json", "old_json_path", type=click.Path(dir_okay=False, path_type=Path), hidden=True, help="--report."
)
@click.option(
    "--timeline",
    "timeline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the timeline PNG here.",
)
@click.option(
    "--bed", metavar="NAME", help="Use the local cluster NAME (started if not running) and its kubeconfig."
)
@click.option(
    "--bed-jobs", default=0, type=click.IntRange(0, 50), help="With --bed: create N elastic jobs first."
)
@click.option("--down", is_flag=True, help="With --bed: stop the cluster at the end.")
def chaos(
    kubeconfig: Path | None,
    namespace: str | None,
    all_namespaces: bool,
    selector: str,
    seed: int,
    duration: float,
    interval: float,
    max_faults: int | None,
    dry_run: bool,
    local: bool | None,
    allow_drain: bool,
    kinds: tuple[str, ...],
    exit_codes: tuple[int, ...],
    replicas: tuple[str, ...],
    operators: int,
    leader_elect: bool,
    operator_pid_file: Path | None,
    operator_urls: tuple[str, ...],
    operator_namespace: str,
    operator_selector: str,
    recovery_bound: float,
    progress: bool,
    progress_bound: float,
    batch_size: int,
    delete_jobs: bool,
    json_path: Path | None,
    old_json_path: Path | None,
    timeline_path: Path | None,
    bed: str | None,
    bed_jobs: int,
    down: bool,
) -> None:
    """Cause faults to training jobs (pod deletes, evictions, drains, replicas edits, and on the
    local control plane exit codes, node failures, apiserver restarts, operator kills) and
    check, from the command's own watch, that the operator keeps its invariants. Exits 1 on
    any violation."""
    from rich.console import Console

    from aitj.tools.chaos.main import Settings, run_chaos

    for name, value in (
        ("--duration", duration),
        ("--interval", interval),
        ("--progress-bound", progress_bound),
    ):
        if value < 1 and not (name == "--interval" and value >= 0.5):
            raise click.BadParameter("too short", param_hint=name)
    if old_json_path is not None:
        click.echo("note: --json FILE is now --report FILE", err=True)
    if all_namespaces:
        namespace = None
    elif namespace is None:
        namespace = "chaos" if bed else Connection(kubeconfig).namespace()
    settings = Settings(
        kubeconfig=kubeconfig,
        namespace=namespace,
        selector=selector,
        seed=seed,
        duration=duration,
        interval=interval,
        max_faults=max_faults,
        dry_run=dry_run,
        local=local,
        allow_drain=allow_drain,
        kinds=tuple(FaultKind(k) for k in kinds),
        exit_codes=exit_codes or (137,),
        replicas=replicas,
        operators=operators,
        leader_elect=leader_elect,
        operator_pid_file=operator_pid_file,
        operator_urls=operator_urls,
        operator_namespace=operator_namespace,
        operator_selector=operator_selector,
        recovery_bound=recovery_bound,
        progress=progress,
        progress_bound=progress_bound,
        batch_size=batch_size,
        delete_jobs=delete_jobs,
        json_path=json_path or old_json_path,
        timeline_path=timeline_path,
        bed=bed,
        bed_jobs=bed_jobs,
        down=down,
    )
    sys.exit(run_chaos(settings, Console()))
