"""``aitj get JOB``, ``aitj list`` and ``aitj describe JOB``: Arena's views of a job, read-only.

Thin: reads through ``aitj.client``; the rows come from the pure ``aitj.cli.jobview``;
``aitj.cli.show`` prints them (a table, or ``-o json|yaml|wide|name``). ``-w`` polls and prints
each row again when it changes, until Ctrl-C. Nothing is written to the cluster. Exit 0 shown;
1 an unknown job, a wrong namespace, no cluster; 2 a usage error.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from typing import Any

import click

from aitj.cli import goodput_view
from aitj.cli import jobview as view
from aitj.cli.options import (
    all_namespaces_option,
    client,
    complete_jobs,
    example,
    job_options,
    no_headers_option,
    output_option,
    selector_option,
    watch_option,
)
from aitj.cli.show import console, emit, name_of, table
from aitj.client import Client
from aitj.core import api

_INSTANCE_COLUMNS = ("NAME", "STATUS", "AGE", "REPLICA", "INDEX", "IS_CHIEF", "GPU", "NODE", "RESTARTS")
_REPLICA_COLUMNS = ("REPLICA", "TYPE", "DESIRED", "RUNNING", "RESTARTS", "LAST CAUSE")
_HISTORY_COLUMNS = ("TIME", "WHAT", "REASON", "MESSAGE")
_LIST_COLUMNS = ("NAMESPACE", "NAME", "PHASE", "REPLICAS (running/desired)", "RESTARTS", "DEGRADED", "AGE")
WATCH_SECONDS = 2.0


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _list_cells(rows: Sequence[view.JobRow], wide: bool) -> list[list[object]]:
    cells: list[list[object]] = []
    for r in rows:
        row: list[object] = [r.namespace, r.name, r.phase, r.replicas, r.restarts, r.degraded, r.age]
        cells.append([*row, r.reason, r.message] if wide else [*row, r.message])
    return cells


def _list_columns(wide: bool) -> tuple[str, ...]:
    return (*_LIST_COLUMNS, "REASON", "MESSAGE") if wide else (*_LIST_COLUMNS, "MESSAGE")


def _watch(rows: Callable[[], list[view.JobRow]], output: str | None, headers: bool) -> None:
    """_watch prints the rows, then every row that changed (its age aside) every WATCH_SECONDS,
    as ``kubectl get -w`` does, until Ctrl-C."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    out = console()
    try:
        while True:
            changed = []
            for r in rows():
                key, now = (r.namespace, r.name), {**r.to_json(), "age": ""}
                if seen.get(key) != now:
                    seen[key] = now
                    changed.append(r)
            if changed:
                _print_rows(out, changed, output, headers)
                headers = False
            time.sleep(WATCH_SECONDS)
    except KeyboardInterrupt:
        return


def _print_rows(out: Any, rows: Sequence[view.JobRow], output: str | None, headers: bool) -> None:
    if output == "name":
        for r in rows:
            click.echo(name_of(r.name))
    elif output in ("json", "yaml"):
        for r in rows:
            emit(r.to_json(), output)
    else:
        out.print(
            table(_list_columns(output == "wide"), _list_cells(rows, output == "wide"), headers=headers)
        )


@click.command("get", epilog=example("aitj get test-horovod-elastic -n default -o yaml"))
@click.argument("job", shell_complete=complete_jobs)
@job_options
@output_option("json", "yaml", "wide", "name")
@no_headers_option
@watch_option
def get(job: str, namespace: str | None, output: str | None, no_headers: bool, watch: bool) -> None:
    """Show JOB: phase, age, replicas desired/running, restarts by replica with the last cause,
    the current condition, why it runs short of pods (degraded), and its instances (pods) as
    Arena shows them."""
    jobs = client(namespace)
    if watch:
        _watch(lambda: [view.job_row(jobs.get_json(job), jobs.pods(job), _now())], output, not no_headers)
        return
    body = jobs.get_json(job)
    if output == "name":
        click.echo(name_of(job))
        return
    pods = jobs.pods(job)
    now = _now()
    header = view.job_row(body, pods, now)
    replicas = view.replica_rows(body, pods)
    instances = view.instance_rows(body, pods, now)
    short = view.shortfall_rows(body)
    if output in ("json", "yaml"):
        emit(
            {
                **header.to_json(),
                "replicaTypes": [r.to_json() for r in replicas],
                "instances": [i.to_json() for i in instances],
                "shortfalls": [s.to_json() for s in short],
            },
            output,
        )
        return
    headers = not no_headers
    out = console()
    out.print(f"{header.namespace}/{header.name}  phase {header.phase}  age {header.age}", markup=False)
    out.print(f"condition: {header.reason}: {header.message}", markup=False, soft_wrap=True)
    if header.degraded:
        out.print(f"degraded: {header.degraded}", markup=False, soft_wrap=True)
        cells = [[r.time, r.what, r.reason, r.message] for r in short]
        out.print(table(_HISTORY_COLUMNS, cells, headers=headers))
    out.print()
    out.print(table(_REPLICA_COLUMNS, [_replica_cells(r) for r in replicas], headers=headers))
    out.print()
    out.print(table(_INSTANCE_COLUMNS, [_instance_cells(i) for i in instances], headers=headers))


def _replica_cells(r: view.ReplicaRow) -> list[object]:
    return [r.replica, r.type, r.desired, r.running, r.restarts, r.last_cause]


def _instance_cells(i: view.InstanceRow) -> list[object]:
    return [i.name, i.status, i.age, i.replica, i.index, str(i.is_chief).lower(), i.gpu, i.node, i.restarts]


def _job_rows(jobs: Client, all_namespaces: bool, selector: str | None) -> list[view.JobRow]:
    """_job_rows: one row per job, its pods read in one call for them all."""
    listed = jobs.list_json(all_namespaces=all_namespaces, selector=selector)
    by_job: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in jobs.pods(all_namespaces=all_namespaces):
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), (meta.get("labels") or {}).get(api.LABEL_JOB, ""))
        by_job.setdefault(key, []).append(pod)
    now = _now()
    return [
        view.job_row(j, by_job.get((j["metadata"].get("namespace", ""), j["metadata"]["name"]), []), now)
        for j in listed
    ]


@click.command("list", epilog=example("aitj list -A", "aitj list -l team=nlp -o name"))
@job_options
@all_namespaces_option
@selector_option
@output_option("json", "yaml", "wide", "name")
@no_headers_option
@watch_option
def list_jobs(
    namespace: str | None,
    all_namespaces: bool,
    selector: str | None,
    output: str | None,
    no_headers: bool,
    watch: bool,
) -> None:
    """List the AITrainingJobs of the namespace (or of all with -A), one line each."""
    jobs = client(namespace)
    if watch:
        _watch(lambda: _job_rows(jobs, all_namespaces, selector), output, not no_headers)
        return
    rows = _job_rows(jobs, all_namespaces, selector)
    if output in ("json", "yaml"):
        emit([r.to_json() for r in rows], output)
        return
    if not rows and output != "name":
        where = "any namespace" if all_namespaces else f"namespace {jobs.namespace!r}"
        click.echo(f"no AITrainingJobs in {where}", err=True)
        return
    _print_rows(console(), rows, output, not no_headers)


@click.command("describe", epilog=example("aitj describe test-horovod-elastic -n default"))
@click.argument("job", shell_complete=complete_jobs)
@job_options
@output_option("json", "yaml")
def describe(job: str, namespace: str | None, output: str | None) -> None:
    """Describe JOB's history: its conditions, its restarts with causes and rules, its scale
    operations, the indices it runs short of (degraded), and its Events."""
    jobs = client(namespace)
    body = jobs.get(job)
    pods = jobs.pods(job)
    events = jobs.events(body)
    header = view.job_row(body.manifest, pods, _now())
    sections = {
        "conditions": view.condition_history(body.manifest),
        "restarts": view.restart_history(body.manifest),
        "scaling": view.scale_history(body.manifest),
        "shortfalls": view.shortfall_rows(body.manifest),
        "events": view.event_history(events),
    }
    now = _now()
    split = goodput_view.restart_split(body.manifest)
    if output is not None:
        extra = {"restartClasses": split, "goodput": goodput_view.goodput(body.manifest, now)}
        emit(
            {**header.to_json(), **extra, **{k: [r.to_json() for r in v] for k, v in sections.items()}},
            output,
        )
        return
    out = console()
    out.print(f"{header.namespace}/{header.name}  phase {header.phase}  age {header.age}", markup=False)
    out.print(
        f"replicas (running/desired): {header.replicas}; restarts {header.restarts} "
        f"(infrastructure {split['infrastructure']}, application {split['application']})",
        markup=False,
    )
    out.print(goodput_view.goodput_line(body.manifest, now), markup=False, soft_wrap=True)
    for title, rows in sections.items():
        out.print()
        if not rows:
            out.print(f"{title}: none", markup=False)
            continue
        cells = [[r.time, r.what, r.reason, r.message] for r in rows]
        out.print(table(_HISTORY_COLUMNS, cells, title=title))
