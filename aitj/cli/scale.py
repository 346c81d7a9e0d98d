"""``aitj scaleout`` and ``aitj scalein``: Arena's elastic-training commands, for AITrainingJobs.

Thin: each command edits ``spec.replicaSpecs.<replica>.replicas`` with one JSON patch that first
tests the value it read (so two people scaling at once cannot both win), then follows
``status.scaling`` and ``status.scaleHistory`` until the operator says how the operation it
started for that edit (same ``metadata.generation``) ended; ``scale_progress.follow`` reads
that from a job. What the operator does is in docs/scaling.md.

Exit codes (the CLI's one table): 0 the scale is done; 1 it was rolled back, cancelled or
replaced by a newer edit, the job ended first, it was refused (the apiserver's admission
message as it is; no such job, replica or pod), or the operator did not finish it in time (is
it running?); 2 a usage error.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.text import Text

from aitj.cli.options import DURATION, EXIT_ERROR, client, complete_jobs, example, job_options
from aitj.cli.scale_progress import EXIT_DONE, follow
from aitj.client import Client, NotFound, TrainingJob
from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.wire import mapping

POLL_SECONDS = 1.0
SLACK_SECONDS = 60  # how long past the operator's own deadline the command waits for its word

err = Console(stderr=True, highlight=False)


def _timeout(ctx: click.Context, param: click.Parameter, value: float | None) -> int | None:
    """_timeout: the --timeout option as whole seconds, at least one (a click callback)."""
    if value is None:
        return None
    if value < 1:
        raise click.BadParameter("the timeout must be at least 1s")
    return int(value)


# ---------------------------------------------------------------------------------------------
# The commands


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.argument("name", shell_complete=complete_jobs),
            click.option(
                "--replica",
                default=api.SCALE_REPLICA,
                show_default=True,
                help="The replica spec to scale (the workers).",
            ),
            job_options,
            click.option(
                "--wait/--no-wait",
                default=True,
                show_default=True,
                help="Follow the scale until the operator finishes it.",
            ),
        ]
    ):
        f = option(f)
    return f


@click.command("scaleout", epilog=example("aitj scaleout test-horovod-elastic --count 2 --timeout 10m"))
@_common
@click.option("--count", required=True, type=click.IntRange(min=1), help="Pods to add.")
@click.option(
    "--timeout",
    type=DURATION,
    callback=_timeout,
    metavar="DURATION",
    help="Sets the replica's scaleTimeout: if the new pods do not all run within it (90s, 10m, "
    "1h), the scale-out is rolled back. Default: the job's scaleTimeout (600s unless set).",
)
def scaleout(
    name: str,
    replica: str,
    namespace: str | None,
    wait: bool,
    count: int,
    timeout: int | None,
) -> None:
    """Add COUNT pods to the replica (trainer) of the fault-tolerant job NAME, and follow it.

    The new pods join the discovery host list once all of them run; then the job is Running
    again. Exit 0 when done, 1 if it was rolled back (the reason is shown), 2 if refused.
    """
    jobs = client(namespace)
    before = _replicas(jobs.get(name), replica)
    edited = jobs.scale(name, before + count, replica=replica, scale_timeout=timeout)
    wanted_timeout = _replica_spec(edited, replica).get("scaleTimeout") or api.DEFAULT_SCALE_TIMEOUT
    _say(
        f"{edited.namespace}/{name}: {replica} {before} -> {before + count} (scaleTimeout {wanted_timeout}s)"
    )
    if wait:
        _follow(jobs, edited, replica, int(wanted_timeout) + SLACK_SECONDS)


@click.command(
    "scalein",
    epilog=example("aitj scalein test-horovod-elastic --count 1 --pods test-horovod-elastic-trainer-abcde-2"),
)
@_common
@click.option(
    "--count", type=click.IntRange(min=1), help="Pods to remove (default: as many as --pods names)."
)
@click.option(
    "--pods",
    "pods",
    multiple=True,
    help="A pod to remove (repeatable; the highest indices make up the rest of --count). Sets the "
    "replica's scaleInpods.",
)
def scalein(
    name: str,
    replica: str,
    namespace: str | None,
    wait: bool,
    count: int | None,
    pods: tuple[str, ...],
) -> None:
    """Remove COUNT pods (or the pods named) from the replica (trainer) of the job NAME.

    They leave the discovery host list first and are deleted scaleInGracePeriod seconds later
    (60 unless set). Exit 0 when done, 1 if it was cancelled by a newer edit, 2 if refused.
    """
    if count is None and not pods:
        raise click.UsageError("give --count, --pods, or both")
    if count is not None and count < len(pods):
        raise click.UsageError(f"--count {count} is less than the {len(pods)} pods named")
    jobs = client(namespace)
    before = _replicas(jobs.get(name), replica)
    _check_pods(jobs, name, replica, pods)
    after = before - (count if count is not None else len(pods))
    edited = jobs.scale(name, after, replica=replica, pods=pods)
    grace = _replica_spec(edited, replica).get("scaleInGracePeriod")
    grace = api.DEFAULT_SCALE_IN_GRACE_PERIOD if grace is None else int(grace)
    named = f" ({' '.join(pods)} first)" if pods else ""
    _say(f"{edited.namespace}/{name}: {replica} {before} -> {after}{named} (scaleInGracePeriod {grace}s)")
    if wait:
        _follow(jobs, edited, replica, grace + SLACK_SECONDS)


def _replica_spec(job: TrainingJob, replica: str) -> Mapping[str, Any]:
    return mapping(mapping(mapping(job.manifest.get("spec")).get("replicaSpecs")).get(replica))


def _replicas(job: TrainingJob, replica: str) -> int:
    if replica not in job.replicas:
        names = ", ".join(sorted(job.replicas))
        raise NotFound(f"the job has no replica spec {replica!r} (it has: {names})")
    return job.replicas[replica]


def _say(text: str, style: str | None = None) -> None:
    """_say prints to stderr as written: no markup (pod lists are in brackets), no wrapping."""
    err.print(text, style=style, markup=False, soft_wrap=True)


def _check_pods(jobs: Client, name: str, replica: str, names: Sequence[str]) -> None:
    """_check_pods: every pod named is one of the replica's (else NotFound)."""
    if not names:
        return
    pods = {p["metadata"]["name"]: p for p in jobs.pods(name)}
    for n in names:
        labels = mapping(mapping(pods.get(n, {}).get("metadata")).get("labels"))
        if labels.get(api.LABEL_REPLICA) != replica:
            raise NotFound(f"{n} is not a pod of replica {replica} of {jobs.namespace}/{name}")


def _running(jobs: Client, name: str) -> Callable[[Sequence[str]], int]:
    def count(names: Sequence[str]) -> int:
        pods = {p["metadata"]["name"]: p for p in jobs.pods(name)}
        return sum(1 for n in names if PodView.from_dict(pods.get(n, {})).running)

    return count


def _follow(jobs: Client, edited: TrainingJob, replica: str, patience: int) -> NoReturn:
    """_follow polls the job until the operation of this edit ends, printing each change."""
    deadline = time.monotonic() + patience
    shown = ""
    running = _running(jobs, edited.name)
    with err.status("", spinner="dots") as spinner:
        while True:
            now = dt.datetime.now(dt.UTC)
            progress = follow(jobs.get_json(edited.name), replica, edited.generation, running, now)
            if progress.code is not None:
                spinner.stop()
                if progress.code == EXIT_DONE:
                    click.echo(progress.text)
                else:
                    _say(progress.text, style="bold red")
                sys.exit(progress.code)
            if progress.text != shown:
                shown = progress.text
                spinner.update(Text(progress.text))
                if not err.is_terminal:
                    _say(progress.text)
            if time.monotonic() > deadline:
                spinner.stop()
                _say(f"error: no answer from the operator within {patience}s (is it running?); last: {shown}")
                sys.exit(EXIT_ERROR)
            time.sleep(POLL_SECONDS)
