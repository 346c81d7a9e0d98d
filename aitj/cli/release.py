"""``aitj release --all``: let go of every pod the operator holds, for an operator removed for good.

The operator puts its tracking finalizer (``observed.TRACKING_FINALIZER``) on every pod it
creates and removes it as soon as it no longer needs the pod (docs/semantics.md). While the
operator runs, no pod is held for long; once it is uninstalled, nothing would remove the
finalizers any more, and a deleted pod would stay Terminating. This command removes them all:
it lists the pods that carry the job label (``api.LABEL_JOB``) and patches the finalizer off
each one that still has it. Safe to run twice; with the operator still running it only costs
the operator its exact view of force deletions until it creates new pods. ``-n`` means what it
means in every command (default: the context's namespace); ``-A`` every namespace.
"""

from __future__ import annotations

from typing import Any

import click

from aitj.cli.options import EXIT_ERROR, all_namespaces_option, connection, connection_options
from aitj.cli.output import say
from aitj.client import AitjError, NotFound
from aitj.client.transport import translated
from aitj.core import api
from aitj.core.observed import TRACKING_FINALIZER


@click.command(
    "release",
    epilog="""\b
Example:
  aitj release --all -A               # every namespace
  aitj release --all -n team-a        # one namespace (default: the context's)""",
)
@click.option(
    "--all", "everything", is_flag=True, required=True, help="Every pod that carries the finalizer."
)
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    help="In this namespace (repeatable; default: the context's, as every command).",
)
@all_namespaces_option
@connection_options
def release(everything: bool, namespaces: tuple[str, ...], all_namespaces: bool) -> None:
    """Remove the operator's tracking finalizer from every pod of every AITrainingJob.

    For an operator removed for good: without it nothing removes the finalizer, and a deleted
    pod would stay Terminating. Prints each pod it releases; exit code 1 if one could not be.
    """
    from kubernetes import client

    conn = connection()
    api_client = conn.api_client()
    server = str(api_client.configuration.host)
    core: Any = client.CoreV1Api(api_client)
    selector = api.LABEL_JOB
    t = conn.request_timeout
    if not namespaces and not all_namespaces:
        namespaces = (conn.namespace(),)
    with translated("listing the jobs' pods", server, t):
        if not all_namespaces:
            pods = [
                p
                for ns in namespaces
                for p in core.list_namespaced_pod(ns, label_selector=selector, _request_timeout=t).items
            ]
        else:
            pods = core.list_pod_for_all_namespaces(label_selector=selector, _request_timeout=t).items
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
    failed = 0
    held = [p for p in pods if TRACKING_FINALIZER in (p.metadata.finalizers or [])]
    for pod in held:
        where = f"{pod.metadata.namespace}/{pod.metadata.name}"
        try:
            with translated(f"releasing {where}", server, t):
                core.patch_namespaced_pod(
                    pod.metadata.name, pod.metadata.namespace, patch, _request_timeout=t
                )
        except NotFound:
            continue
        except AitjError as e:
            failed += 1
            say(f"error: {e}")
            continue
        click.echo(f"released {where}")
    say(f"released {len(held) - failed} of {len(held)} pods held by {TRACKING_FINALIZER}")
    if failed:
        raise SystemExit(EXIT_ERROR)
