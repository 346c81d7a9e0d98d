"""``aitj scaleout`` and ``aitj scalein``: Arena's elastic-training commands, for AITrainingJobs.

Thin: each command edits ``spec.replicaSpecs.<replica>.replicas`` with one JSON patch that first
tests the value it read (so two people scaling at once cannot both win), then follows
``status.scaling`` and ``status.scaleHistory`` until the operator says how the operation it
started for that edit (same ``metadata.generation``) ended; ``scale_progress.follow`` reads
that from a job. What the operator does is in docs/scaling.md.

Exit codes: 0 the scale is done; 1 it was rolled back, cancelled or replaced by a newer edit,
or the job ended first; 2 refused (the apiserver's admission message is shown as it is, or the
input is wrong: no such job, replica or pod); 3 the operator did not finish it in time (is it
running?).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.text import Text

from aitj.cli.options import example, job_namespace_option, kubeconfig_option
from aitj.cli.scale_progress import (
    EXIT_DONE,
    EXIT_NO_ANSWER,
    EXIT_REFUSED,
    follow,
    parse_duration,
)
from aitj.controller.kubeclient import api_client, context_namespace, error_text
from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.wire import mapping

POLL_SECONDS = 1.0
SLACK_SECONDS = 60  # how long past the operator's own deadline the command waits for its word

err = Console(stderr=True, highlight=False)


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """_duration: the --timeout option as seconds (a click callback)."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from e
    if seconds < 1:
        raise click.BadParameter("the timeout must be at least 1s")
    return seconds


# ---------------------------------------------------------------------------------------------
# The commands


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.argument("name"),
            click.option(
                "--replica",
                default=api.SCALE_REPLICA,
                show_default=True,
                help="The replica spec to scale (the workers).",
            ),
            job_namespace_option,
            kubeconfig_option,
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
    callback=_duration,
    metavar="DURATION",
    help="Sets the replica's scaleTimeout: if the new pods do not all run within it (90s, 10m, "
    "1h), the scale-out is rolled back. Default: the job's scaleTimeout (600s unless set).",
)
def scaleout(
    name: str,
    replica: str,
    namespace: str | None,
    kubeconfig: Path | None,
    wait: bool,
    count: int,
    timeout: int | None,
) -> None:
    """Add COUNT pods to the replica (trainer) of the fault-tolerant job NAME, and follow it.

    The new pods join the discovery host list once all of them run; then the job is Running
    again. Exit 0 when done, 1 if it was rolled back (the reason is shown), 2 if refused.
    """
    session = _Session(kubeconfig, namespace, name)
    job = session.job()
    before = _replicas(job, replica)
    patch = _replicas_patch(replica, before, before + count)
    if timeout is not None:
        patch.append({"op": "add", "path": f"/spec/replicaSpecs/{replica}/scaleTimeout", "value": timeout})
    edited = session.patch(patch)
    wanted_timeout = _replica_spec(edited, replica).get("scaleTimeout") or api.DEFAULT_SCALE_TIMEOUT
    _say(f"{session.ref}: {replica} {before} -> {before + count} (scaleTimeout {wanted_timeout}s)")
    if wait:
        session.watch(edited, replica, int(wanted_timeout) + SLACK_SECONDS)


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
    kubeconfig: Path | None,
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
    session = _Session(kubeconfig, namespace, name)
    job = session.job()
    before = _replicas(job, replica)
    session.check_pods(replica, pods)
    after = before - (count if count is not None else len(pods))
    patch = _replicas_patch(replica, before, after)
    path = f"/spec/replicaSpecs/{replica}/scaleInpods"
    if pods:
        patch.append({"op": "add", "path": path, "value": list(pods)})
    elif "scaleInpods" in _replica_spec(job, replica):
        patch.append({"op": "remove", "path": path})  # old names must not pick this scale-in's pods
    edited = session.patch(patch)
    grace = _replica_spec(edited, replica).get("scaleInGracePeriod")
    grace = api.DEFAULT_SCALE_IN_GRACE_PERIOD if grace is None else int(grace)
    named = f" ({' '.join(pods)} first)" if pods else ""
    _say(f"{session.ref}: {replica} {before} -> {after}{named} (scaleInGracePeriod {grace}s)")
    if wait:
        session.watch(edited, replica, grace + SLACK_SECONDS)


def _replicas_patch(replica: str, before: int, after: int) -> list[dict[str, Any]]:
    path = f"/spec/replicaSpecs/{replica}/replicas"
    return [{"op": "test", "path": path, "value": before}, {"op": "replace", "path": path, "value": after}]


def _replica_spec(job: Mapping[str, Any], replica: str) -> Mapping[str, Any]:
    return mapping(mapping(mapping(job.get("spec")).get("replicaSpecs")).get(replica))


def _replicas(job: Mapping[str, Any], replica: str) -> int:
    spec = _replica_spec(job, replica)
    if not spec:
        names = ", ".join(sorted(mapping(mapping(job.get("spec")).get("replicaSpecs"))))
        _fail(EXIT_REFUSED, f"the job has no replica spec {replica!r} (it has: {names})")
    value = spec.get("replicas", api.DEFAULT_REPLICAS)
    return int(value)


def _say(text: str, style: str | None = None) -> None:
    """_say prints to stderr as written: no markup (pod lists are in brackets), no wrapping."""
    err.print(text, style=style, markup=False, soft_wrap=True)


def _fail(code: int, text: str) -> NoReturn:
    _say(f"error: {text}" if code == EXIT_REFUSED else text, style="bold red")
    sys.exit(code)


class _Session:
    """The cluster side of one command: the job, its pods, the patch and the follow loop."""

    def __init__(self, kubeconfig: Path | None, namespace: str | None, name: str) -> None:
        from kubernetes import client

        self.api = api_client(kubeconfig)
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.core: Any = client.CoreV1Api(self.api)
        self.namespace = namespace or context_namespace(kubeconfig)
        self.name = name
        self.ref = f"{self.namespace}/{name}"

    def _call(self, call: Callable[[], Any]) -> Any:
        from kubernetes.client.exceptions import ApiException

        try:
            return json.loads(call().data)
        except ApiException as e:
            if e.status == 404:
                _fail(EXIT_REFUSED, f"no AITrainingJob {self.ref}")
            _fail(EXIT_REFUSED, error_text(e))

    def job(self) -> dict[str, Any]:
        job: dict[str, Any] = self._call(
            lambda: self.custom.get_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, api.PLURAL, self.name, _preload_content=False
            )
        )
        return job

    def patch(self, ops: list[dict[str, Any]]) -> dict[str, Any]:
        """patch sends one JSON patch; a refusal is shown as the apiserver words it."""
        job: dict[str, Any] = self._call(
            lambda: self.custom.patch_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                self.namespace,
                api.PLURAL,
                self.name,
                ops,
                _content_type="application/json-patch+json",
                _preload_content=False,
            )
        )
        return job

    def pods(self) -> dict[str, Mapping[str, Any]]:
        selector = f"{api.LABEL_JOB}={self.name}"
        listed = self._call(
            lambda: self.core.list_namespaced_pod(
                self.namespace, label_selector=selector, _preload_content=False
            )
        )
        return {p["metadata"]["name"]: p for p in listed.get("items", [])}

    def check_pods(self, replica: str, names: Sequence[str]) -> None:
        if not names:
            return
        pods = self.pods()
        for n in names:
            labels = mapping(mapping(pods.get(n, {}).get("metadata")).get("labels"))
            if labels.get(api.LABEL_REPLICA) != replica:
                _fail(EXIT_REFUSED, f"{n} is not a pod of replica {replica} of {self.ref}")

    def running(self, names: Sequence[str]) -> int:
        pods = self.pods()
        return sum(1 for n in names if PodView.from_dict(pods.get(n, {})).running)

    def watch(self, edited: Mapping[str, Any], replica: str, patience: int) -> NoReturn:
        """watch polls the job until the operation of this edit ends, printing each change."""
        generation = int(mapping(edited.get("metadata")).get("generation") or 0)
        deadline = time.monotonic() + patience
        shown = ""
        with err.status("", spinner="dots") as spinner:
            while True:
                progress = follow(self.job(), replica, generation, self.running, dt.datetime.now(dt.UTC))
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
                    _fail(
                        EXIT_NO_ANSWER,
                        f"no answer from the operator within {patience}s (is it running?); last: {shown}",
                    )
                time.sleep(POLL_SECONDS)
