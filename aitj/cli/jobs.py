"""``aitj get JOB``, ``aitj list`` and ``aitj describe JOB``: Arena's views of a job, read-only.

Thin: GET and LIST calls through ``aitj.cli.kube``; the rows come from the pure
``aitj.cli.jobview``; ``aitj.cli.show`` prints them (a table, or ``-o json|yaml``). Nothing is
written to the cluster. Exit 0 shown; 1 an unknown job, a wrong namespace, no cluster.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import click

from aitj.cli import jobview as view
from aitj.cli.kube import Kube
from aitj.cli.options import (
    all_namespaces_option,
    example,
    job_namespace_option,
    kubeconfig_option,
    output_option,
)
from aitj.cli.show import console, emit, table
from aitj.core import api

_INSTANCE_COLUMNS = ("NAME", "STATUS", "AGE", "REPLICA", "INDEX", "IS_CHIEF", "GPU", "NODE", "RESTARTS")
_REPLICA_COLUMNS = ("REPLICA", "TYPE", "DESIRED", "RUNNING", "RESTARTS", "LAST CAUSE")
_HISTORY_COLUMNS = ("TIME", "WHAT", "REASON", "MESSAGE")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@click.command("get", epilog=example("aitj get test-horovod-elastic -n default -o yaml"))
@click.argument("job")
@job_namespace_option
@kubeconfig_option
@output_option
def get(job: str, namespace: str | None, kubeconfig: Path | None, output: str) -> None:
    """Show JOB: phase, age, replicas desired/running, restarts by replica with the last cause,
    the current condition, why it runs short of pods (degraded), and its instances (pods) as
    Arena shows them."""
    kube = Kube(kubeconfig, namespace)
    body = kube.job(job)
    pods = kube.pods(job)
    now = _now()
    header = view.job_row(body, pods, now)
    replicas = view.replica_rows(body, pods)
    instances = view.instance_rows(body, pods, now)
    short = view.shortfall_rows(body)
    if output != "table":
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
    out = console()
    out.print(f"{header.namespace}/{header.name}  phase {header.phase}  age {header.age}", markup=False)
    out.print(f"condition: {header.reason}: {header.message}", markup=False, soft_wrap=True)
    if header.degraded:
        out.print(f"degraded: {header.degraded}", markup=False, soft_wrap=True)
        out.print(table(_HISTORY_COLUMNS, [[r.time, r.what, r.reason, r.message] for r in short]))
    out.print()
    out.print(table(_REPLICA_COLUMNS, [_replica_cells(r) for r in replicas]))
    out.print()
    out.print(table(_INSTANCE_COLUMNS, [_instance_cells(i) for i in instances]))


def _replica_cells(r: view.ReplicaRow) -> list[object]:
    return [r.replica, r.type, r.desired, r.running, r.restarts, r.last_cause]


def _instance_cells(i: view.InstanceRow) -> list[object]:
    return [i.name, i.status, i.age, i.replica, i.index, str(i.is_chief).lower(), i.gpu, i.node, i.restarts]


@click.command("list", epilog=example("aitj list -A"))
@job_namespace_option
@all_namespaces_option
@kubeconfig_option
@output_option
def list_jobs(namespace: str | None, all_namespaces: bool, kubeconfig: Path | None, output: str) -> None:
    """List the AITrainingJobs of the namespace (or of all with -A), one line each."""
    kube = Kube(kubeconfig, namespace)
    jobs = kube.jobs(all_namespaces=all_namespaces)
    by_job: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in kube.all_pods(all_namespaces=all_namespaces):
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), (meta.get("labels") or {}).get(api.LABEL_JOB, ""))
        by_job.setdefault(key, []).append(pod)
    now = _now()
    rows = [
        view.job_row(j, by_job.get((j["metadata"].get("namespace", ""), j["metadata"]["name"]), []), now)
        for j in jobs
    ]
    if output != "table":
        emit([r.to_json() for r in rows], output)
        return
    out = console()
    if not rows:
        where = "any namespace" if all_namespaces else f"namespace {kube.namespace!r}"
        out.print(f"no AITrainingJobs in {where}", markup=False)
        return
    columns = (
        "NAMESPACE",
        "NAME",
        "PHASE",
        "REPLICAS (running/desired)",
        "RESTARTS",
        "DEGRADED",
        "AGE",
        "MESSAGE",
    )
    cells = [
        [r.namespace, r.name, r.phase, r.replicas, r.restarts, r.degraded, r.age, r.message] for r in rows
    ]
    out.print(table(columns, cells))


@click.command("describe", epilog=example("aitj describe test-horovod-elastic -n default"))
@click.argument("job")
@job_namespace_option
@kubeconfig_option
@output_option
def describe(job: str, namespace: str | None, kubeconfig: Path | None, output: str) -> None:
    """Describe JOB's history: its conditions, its restarts with causes and rules, its scale
    operations, the indices it runs short of (degraded), and its Events."""
    kube = Kube(kubeconfig, namespace)
    body = kube.job(job)
    pods = kube.pods(job)
    events = kube.events(body)
    header = view.job_row(body, pods, _now())
    sections = {
        "conditions": view.condition_history(body),
        "restarts": view.restart_history(body),
        "scaling": view.scale_history(body),
        "shortfalls": view.shortfall_rows(body),
        "events": view.event_history(events),
    }
    if output != "table":
        emit({**header.to_json(), **{k: [r.to_json() for r in v] for k, v in sections.items()}}, output)
        return
    out = console()
    out.print(f"{header.namespace}/{header.name}  phase {header.phase}  age {header.age}", markup=False)
    out.print(f"replicas (running/desired): {header.replicas}; restarts {header.restarts}", markup=False)
    for title, rows in sections.items():
        out.print()
        if not rows:
            out.print(f"{title}: none", markup=False)
            continue
        cells = [[r.time, r.what, r.reason, r.message] for r in rows]
        out.print(table(_HISTORY_COLUMNS, cells, title=title))
