"""``aitj explain JOB [POD]``: what the operator sees of a job and what it would do, without doing it.

Thin: it reads the job, its pods (label ``api.LABEL_JOB``), the nodes and the job's other
objects with GET and LIST calls only, derives the Settings the operator plans with the way the
operator does (``aitj.controller.settings``: what the cluster serves, and the operator's flags,
which it takes as its own: ``--priority-class``, ``--node-fault-*``), hands them to the pure
``aitj.core.explain``, and prints the answer (rich for people,
with the lines of aitj/cli/explain_text.py; JSON with ``--json``). It never writes to the
cluster, so it is safe to run at any time, also while the operator is stopped.

Exit codes: 0 explained; 1 the job or the named pod does not exist, or the job's spec is
invalid (its field errors are printed).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.table import Table

from aitj.cli import explain_text
from aitj.cli.options import (
    complete_jobs,
    connection,
    example,
    job_options,
    node_signal_options,
    node_signals,
    priority_class_map,
    priority_class_option,
)
from aitj.cli.show import emit
from aitj.client import Client
from aitj.client.transport import translated
from aitj.controller.options import OperatorOptions
from aitj.controller.settings import Unlisted, owned_objects, planner_settings
from aitj.core import api
from aitj.core import explain as why
from aitj.core.explain import Explanation, PodExplanation, UnknownPod, Verdict
from aitj.core.observed import NodeView, PodView

# Verdicts with nothing more to say than the table's row.
_QUIET = frozenset({Verdict.HEALTHY, Verdict.SUCCEEDED})
_STYLE = {
    Verdict.HEALTHY: "green",
    Verdict.SUCCEEDED: "green",
    Verdict.PENDING: "cyan",
    Verdict.RESTART: "yellow",
    Verdict.FAILS: "red",
    Verdict.REPLACED: "magenta",
    Verdict.CREATE: "cyan",
    Verdict.GATED: "cyan",
    Verdict.FOREIGN: "red",
}


@click.command(
    "explain",
    epilog=example(
        "aitj explain test-horovod-elastic test-horovod-elastic-trainer-abcde-0 -n default",
        "aitj explain test-horovod-elastic --node-fault-condition KernelDeadlock=True   # as the operator",
        "aitj explain test-horovod-elastic --priority-class high=gpu-high   # its aitj run flags",
    ),
)
@click.argument("job", shell_complete=complete_jobs)
@click.argument("pod", required=False)
@job_options
@click.option(
    "-o", "--output", type=click.Choice(["json", "yaml"]), help="json or yaml; default: text for people."
)
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Deprecated: -o json.")
@priority_class_option
@node_signal_options
def explain(
    job: str,
    pod: str | None,
    namespace: str | None,
    output: str | None,
    as_json: bool,
    priority_classes: tuple[str, ...],
    node_fault_conditions: tuple[str, ...],
    node_fault_taints: tuple[str, ...],
) -> None:
    """Explain what the operator sees of JOB (or of its pod POD) and what its next pass would do.

    A dry run: for each pod, its replica, index, generation, phase, node and the node's Ready
    state, exit code, deletion and disruption; which faultTolerantPolicy rule fires and why (or
    why none does); and the job's next pass (pods created and deleted, status, requeue).
    Nothing is written to the cluster. It plans as the operator does: what the cluster serves
    (Volcano, the native gang API) and the job's own objects are read as the operator reads
    them; its flags cannot be, so give the --priority-class and --node-fault-* flags the
    operator runs with (its aitj run arguments) to plan exactly as it does.
    """
    output = "json" if as_json else output
    jobs = Client(connection(), namespace=namespace)
    ns = jobs.namespace
    body = jobs.get_json(job)
    pods = jobs.pods(job)
    # The operator's Settings, derived as it derives them (aitj.controller.settings); the gang
    # API's listability is asked in the job's namespace, with the caller's rights.
    flags = OperatorOptions(
        namespaces=(ns,),
        priority_classes=priority_class_map(priority_classes),
        node_signals=node_signals(node_fault_conditions, node_fault_taints),
    )
    cl = jobs.api
    with translated("listing nodes, and what the cluster serves", jobs.server):
        nodes = json.loads(core_api(cl).list_node(_preload_content=False).data)
        settings, served = planner_settings(cl, flags)
    try:
        with translated(f"reading the objects of {ns}/{job}", jobs.server):
            owned = owned_objects(cl, ns, job, served, settings.gang_version)
    except Unlisted as e:  # say, a user who may not list Secrets: plan no object of the job
        owned = None
        Console(stderr=True).print(
            f"note: the job's objects are not checked ({e})", highlight=False, markup=False
        )
    try:
        parsed = api.parse_job(body)
    except api.InvalidJob as e:
        if output:
            errors = [{"path": f.path, "message": f.message} for f in e.errors]
            emit({"namespace": ns, "name": job, "invalid": errors}, output)
        else:
            _say_lines([f"job {ns}/{job}:", *explain_text.invalid_lines(e)])
        sys.exit(1)
    views = [PodView.from_dict(p) for p in pods]
    node_views = {n.name: n for n in (NodeView.from_dict(item) for item in nodes.get("items") or [])}
    deleting = bool((body.get("metadata") or {}).get("deletionTimestamp"))
    try:
        now = dt.datetime.now(dt.UTC)
        result = why.explain(
            parsed, views, node_views, now, pod, deleting=deleting, settings=settings, owned=owned
        )
    except UnknownPod as e:
        _fail(f"pod {pod} not found in AITrainingJob {ns}/{job} (its pods: {', '.join(e.known) or 'none'})")
    if output:
        emit(result.to_json(), output)
    else:
        _print(result, detailed=pod is not None)


def core_api(api_client: Any) -> Any:
    """core_api: the core API on ``api_client``."""
    from kubernetes import client

    return client.CoreV1Api(api_client)


def _fail(message: str) -> NoReturn:
    Console(stderr=True).print(f"error: {message}", highlight=False, markup=False, soft_wrap=True)
    sys.exit(1)


def _console() -> Console:
    out = Console()
    # Piped or captured output: do not fold lines at 80 columns.
    return out if out.is_terminal else Console(width=200)


def _say_lines(lines: list[str]) -> None:
    out = _console()
    for line in lines:
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def _print(e: Explanation, *, detailed: bool) -> None:
    out = _console()
    for line in explain_text.header_lines(e):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    out.print()
    out.print(_table(e))
    for p in e.pods:
        if detailed or p.verdict not in _QUIET:
            out.print()
            for line in explain_text.pod_lines(p):
                out.print(line, highlight=False, markup=False, soft_wrap=True)


def _table(e: Explanation) -> Table:
    table = Table(title=None, show_lines=False)
    for column in (
        "pod",
        "replica",
        "idx",
        "gen",
        "phase",
        "node (Ready)",
        "exit",
        "deleting",
        "disruption",
        "verdict",
    ):
        table.add_column(column, overflow="fold")
    for p in e.pods:
        table.add_row(*_row(p))
    return table


def _row(p: PodExplanation) -> list[str]:
    node = "-"
    if p.node:
        node = f"{p.node} ({p.node_ready})"
    exit_code = "-" if p.exit_code is None else f"{p.exit_code} ({p.exit_container})"
    style = _STYLE.get(p.verdict, "")
    verdict = f"[{style}]{p.verdict}[/]" if style else str(p.verdict)
    return [
        p.name if p.present else f"{p.name} (no pod)",
        p.replica or "-",
        "-" if p.index is None else str(p.index),
        "-" if p.generation is None else str(p.generation),
        p.phase or "-",
        node,
        exit_code,
        "yes" if p.deletion else "-",
        p.disruption or "-",
        verdict,
    ]
