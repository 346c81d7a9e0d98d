"""``aitj logs JOB``: the job's pod logs through the apiserver's pod log endpoint, each line
prefixed with the pod's replica and index (``[trainer 0] ...``), as ``arena logs`` does.

Thin: the pods are the job's (label ``api.LABEL_JOB``), narrowed by ``--replica`` and
``--index``; each pod's container (the first, or ``--container``) is read through
``aitj.cli.kube``. With ``-f`` every chosen pod is followed at once, one thread each, until the
streams end or Ctrl-C. Exit 0; 1 an unknown job, no such pod, a log that cannot be read (the
other pods' logs are still printed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from aitj.cli.kube import Kube, fail
from aitj.cli.options import example, job_namespace_option, kubeconfig_option
from aitj.core.observed import PodView


def chosen(pods: list[dict[str, Any]], replica: str | None, index: int | None) -> list[PodView]:
    """chosen: the live pods of ``replica`` and ``index`` (None: any), by replica and index."""
    views = [PodView.from_dict(p) for p in pods]
    keep = [
        v
        for v in views
        if v.deleted_at is None
        and (replica is None or v.replica == replica)
        and (index is None or v.index == index)
    ]
    return sorted(keep, key=lambda v: (v.replica or "", -1 if v.index is None else v.index))


def prefix(view: PodView) -> str:
    """prefix: ``[trainer 0] `` for the pod of replica trainer, index 0."""
    return f"[{view.replica or '-'} {'-' if view.index is None else view.index}] "


def no_pod_message(
    namespace: str, job: str, pods: list[dict[str, Any]], replica: str | None, index: int | None
) -> str:
    """no_pod_message: the error when no live pod is ``replica`` and ``index`` (None: any),
    naming the pods the job has."""
    have = ", ".join(f"{v.replica} {v.index}" for v in chosen(pods, None, None)) or "none"
    wanted = " ".join(
        x for x in (replica and f"replica {replica}", index is not None and f"index {index}") if x
    )
    return f"job {namespace}/{job} has no pod {wanted or 'running'} (its pods: {have})"


def container_of(pod: dict[str, Any], container: str | None) -> str:
    """container_of: the container to read, ``container`` or else the pod's first."""
    containers = pod.get("spec", {}).get("containers") or [{}]
    return container or str(containers[0].get("name", ""))


def _show_all(views: list[PodView], show: Callable[[PodView], None], follow: bool) -> bool:
    """_show_all runs ``show`` for every pod, False if Ctrl-C stopped it. Followed streams only
    end with their pods, so with ``follow`` and more than one pod each gets a thread of its own;
    otherwise one after the other, in order."""
    if follow and len(views) > 1:
        threads = [threading.Thread(target=show, args=(v,), daemon=True) for v in views]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except KeyboardInterrupt:
            return False
        return True
    try:
        for v in views:
            show(v)
    except KeyboardInterrupt:
        return False
    return True


@click.command("logs", epilog=example("aitj logs test-horovod-elastic --replica launcher --tail 100 -f"))
@click.argument("job")
@click.option("--replica", help="Only the pods of this replica (e.g. trainer, launcher).")
@click.option("--index", type=click.IntRange(min=0), help="Only the pod of this index.")
@click.option("--container", help="The container to read (default: each pod's first).")
@click.option("--tail", type=click.IntRange(min=0), help="Only the last N lines of each pod.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until interrupted.")
@job_namespace_option
@kubeconfig_option
def logs(
    job: str,
    replica: str | None,
    index: int | None,
    container: str | None,
    tail: int | None,
    follow: bool,
    namespace: str | None,
    kubeconfig: Path | None,
) -> None:
    """Print the logs of JOB's pods, each line prefixed with the pod's replica and index."""
    kube = Kube(kubeconfig, namespace)
    kube.job(job)  # an unknown job (or namespace) is its own error, not "no pods"
    raw = kube.pods(job)
    views = chosen(raw, replica, index)
    if not views:
        fail(no_pod_message(kube.namespace, job, raw, replica, index))
    by_name = {p["metadata"]["name"]: p for p in raw}
    lock = threading.Lock()
    failed: list[str] = []

    def show(view: PodView) -> None:
        name = container_of(by_name[view.name], container)
        try:
            for line in kube.log_lines(view.name, name, tail=tail, follow=follow):
                with lock:
                    click.echo(prefix(view) + line)
        except SystemExit:  # kube.fail printed why; the other pods go on
            failed.append(view.name)

    if not _show_all(views, show, follow):
        return  # Ctrl-C: the user stopped it, not a failure
    if failed:
        raise SystemExit(1)
