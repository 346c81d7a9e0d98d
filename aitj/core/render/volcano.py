"""Volcano compatibility: the host files and variables of Volcano's ``svc`` plugin, and the
Volcano ``PodGroup`` that gang-schedules a job whose pods use ``schedulerName: volcano``.

Host files (plugin.discovery). Volcano's svc plugin mounts a ConfigMap at ``/etc/volcano``
holding ``<task>.host`` per task: the task's pod hostnames, ``<pod>.<service>``, one per line,
joined by newlines with none after the last (so ``cat worker.host | tr "\\n" ","`` gives a list
with no empty entry, which is what launchers built on it pass to ``mpiexec --host``). A task
name's ``-`` becomes ``_`` in the file name. The job's discovery ConfigMap carries the same
files (one stable DNS name per Running pod of the replica, in index order), and every pod
mounts just those keys at ``/etc/volcano``. The operator rewrites them together with the
Horovod host list, so they follow restarts and scaling.

``VC_<REPLICA>_HOSTS`` (comma-separated) and ``VC_<REPLICA>_NUM`` are set in every container,
from keys of the same ConfigMap (``configMapKeyRef``, as Volcano's svc plugin does: a literal
list in every pod would make each pod's size, and the job's, grow with the square of its pods).
The kubelet reads them when the container starts; from then on they are fixed, and scaling or
a peer's restart does not change them. The files do change: read the files. The launcher
starts once every worker runs (docs/semantics.md, section 2), so its list is complete.

PodGroup (``scheduling.volcano.sh/v1beta1``). ``minMember`` is the sum of ``minReplicas``
over the replicas whose pods use Volcano and start together (``gang.start_together``: not
the launcher of a job with workers, which is created once they run, so counting it would
deadlock the gang): the job can train with that many pods, so the gang is the smallest job
that can run, not its current size. A bigger gang would keep a job that can run from
starting; a scale-out's pods (and the launcher) join the group and are counted by the
scheduler without raising the bar. ``minResources`` is what those ``minReplicas`` pods request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from aitj.core import api, naming
from aitj.core.render._meta import object_meta
from aitj.core.render.gang import start_together
from aitj.core.wire import as_list, mapping

HOSTS_MOUNT_PATH = "/etc/volcano"  # Volcano's svc plugin's mount path
HOSTS_VOLUME = "aitj-volcano-hosts"
VOLCANO_SCHEDULER = "volcano"

PODGROUP_GROUP = "scheduling.volcano.sh"
PODGROUP_VERSION = "v1beta1"
PODGROUP_PLURAL = "podgroups"
PODGROUP_KIND = "PodGroup"
# The pod annotation Volcano's scheduler groups pods by (its own job controller sets it).
ANNOTATION_GROUP_NAME = "scheduling.k8s.io/group-name"
# Volcano's queue annotation; read from the job, else from a replica's pod template.
ANNOTATION_QUEUE = "scheduling.volcano.sh/queue-name"
DEFAULT_QUEUE = "default"


def task_key(replica_name: str) -> str:
    """task_key: a replica's name as Volcano spells a task in file names (``-`` as ``_``)."""
    return replica_name.replace("-", "_")


def host_file_key(replica_name: str) -> str:
    """host_file_key: the ConfigMap key, and file name, of a replica's host file."""
    return f"{task_key(replica_name)}.host"


def host_files(job: api.Job, running: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """host_files: ``<replica>.host`` for every replica of the job: the stable DNS name of each
    pod named in ``running[replica]`` (its Running pods, in index order), one per line."""
    return {
        host_file_key(r.name): "\n".join(naming.pod_host(job.name, pod) for pod in running.get(r.name, ()))
        for r in job.spec.replicas
    }


def hosts_volume(job: api.Job) -> dict[str, Any]:
    """hosts_volume: the discovery ConfigMap's host files, and only those, as a pod volume."""
    keys = [host_file_key(r.name) for r in job.spec.replicas]
    return {
        "name": HOSTS_VOLUME,
        "configMap": {
            "name": naming.discovery_configmap_name(job.name),
            "items": [{"key": key, "path": key} for key in keys],
        },
    }


def hosts_mount() -> dict[str, Any]:
    """hosts_mount mounts the host files read-only at /etc/volcano."""
    return {"name": HOSTS_VOLUME, "mountPath": HOSTS_MOUNT_PATH, "readOnly": True}


def env_names(replica_name: str) -> tuple[str, str]:
    """env_names: ``VC_<REPLICA>_HOSTS`` and ``VC_<REPLICA>_NUM`` of a replica."""
    suffix = task_key(replica_name).upper()
    return f"VC_{suffix}_HOSTS", f"VC_{suffix}_NUM"


def env_data(job: api.Job, running: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """env_data: the ConfigMap keys the VC_ variables are read from: each replica's pods in
    ``running`` as a comma-separated list of stable DNS names, and how many."""
    out: dict[str, str] = {}
    for r in job.spec.replicas:
        hosts_key, num_key = env_names(r.name)
        pods = running.get(r.name, ())
        out[hosts_key] = ",".join(naming.pod_host(job.name, pod) for pod in pods)
        out[num_key] = str(len(pods))
    return out


def volcano_env(job: api.Job) -> list[dict[str, Any]]:
    """volcano_env: the VC_ variables of every replica, read by the kubelet from the discovery
    ConfigMap when the container starts (as Volcano's svc plugin does), so a pod's size does
    not grow with the job's."""
    configmap = naming.discovery_configmap_name(job.name)
    return [
        {"name": name, "valueFrom": {"configMapKeyRef": {"name": configmap, "key": name}}}
        for r in job.spec.replicas
        for name in env_names(r.name)
    ]


# ---------------------------------------------------------------------------------------------
# The PodGroup


def uses_volcano(replica: api.ReplicaSpec) -> bool:
    """uses_volcano: the replica's pods are scheduled by Volcano."""
    return mapping(replica.template.get("spec")).get("schedulerName") == VOLCANO_SCHEDULER


def podgroup_name(job: api.Job) -> str:
    """podgroup_name: the job's PodGroup is named after the job."""
    return job.name


def queue(job: api.Job) -> str:
    """queue: the Volcano queue named by the job's annotation, else by the first replica
    template that names one, else Volcano's default queue."""
    if job.annotations.get(ANNOTATION_QUEUE):
        return job.annotations[ANNOTATION_QUEUE]
    for r in job.spec.replicas:
        named = mapping(mapping(r.template.get("metadata")).get("annotations")).get(ANNOTATION_QUEUE)
        if isinstance(named, str) and named:
            return named
    return DEFAULT_QUEUE


def render_podgroup(job: api.Job, priority_class: str | None) -> dict[str, Any]:
    """render_podgroup: the job's Volcano PodGroup (module docstring: why minReplicas)."""
    members = [r for r in start_together(job) if uses_volcano(r)]
    total: dict[str, Fraction] = {}
    for r in members:
        for name, amount in pod_requests(r.template).items():
            total[name] = total.get(name, Fraction(0)) + amount * r.min_replicas
    spec: dict[str, Any] = {
        "minMember": sum(r.min_replicas for r in members),
        "queue": queue(job),
    }
    if total:
        spec["minResources"] = {name: format_quantity(total[name]) for name in sorted(total)}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": f"{PODGROUP_GROUP}/{PODGROUP_VERSION}",
        "kind": PODGROUP_KIND,
        "metadata": object_meta(job, podgroup_name(job)),
        "spec": spec,
    }


def pod_requests(template: Mapping[str, Any]) -> dict[str, Fraction]:
    """pod_requests: what one pod of a template requests over its app containers (a
    container's request, else its limit, as Kubernetes defaults it). A quantity that does not
    parse is left out: the API server refuses the pod itself."""
    out: dict[str, Fraction] = {}
    for container in as_list(mapping(template.get("spec")).get("containers")):
        resources = mapping(mapping(container).get("resources"))
        asked = {**mapping(resources.get("limits")), **mapping(resources.get("requests"))}
        for name, value in asked.items():
            amount = parse_quantity(value)
            if amount is not None:
                out[str(name)] = out.get(str(name), Fraction(0)) + amount
    return out


_QUANTITY = re.compile(
    r"([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE]|[eE][+-]?[0-9]+)?"
)
_SUFFIX = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    **{s: Fraction(1000**n) for n, s in enumerate("kMGTPE", 1)},
    **{f"{s}i": Fraction(1024**n) for n, s in enumerate("KMGTPE", 1)},
}


def parse_quantity(value: object) -> Fraction | None:
    """parse_quantity: a Kubernetes quantity (``500m``, ``2Gi``, ``1e3``, ``4``) exactly, or
    None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    match = _QUANTITY.fullmatch(str(value).strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if len(suffix) > 1 and suffix[0] in "eE":  # an exponent; "E" alone is exa
        return number * Fraction(10) ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def format_quantity(amount: Fraction) -> str:
    """format_quantity: a whole amount as a plain integer, else in thousandths (``1500m``),
    rounded up: a minimum must not shrink."""
    if amount.denominator == 1:
        return str(amount.numerator)
    milli = -((-amount * 1000) // 1)
    return f"{milli}m"
