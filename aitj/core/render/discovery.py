"""plugin.discovery: the host list Horovod elastic reads through ``/etc/edl/discover_hosts.sh``,
and the per-replica host files of Volcano's svc plugin (``aitj.core.render.volcano``).

The ConfigMap holds two files for Horovod, and ``<replica>.host`` per replica for Volcano (with
the ``VC_<REPLICA>_HOSTS`` / ``_NUM`` keys the pods' variables are read from).
``hosts`` is the list, one ``host:slots`` per line; the operator rewrites it (and the host
files) whenever the set of Running pods changes. ``wanted`` is how many hosts the job asks for
(the workers' ``replicas``), written with the list: a launcher that sees a host leave can tell a
replacement coming (fewer listed than wanted) from a scale-in (aitj's torchrun launcher holds
the lost agent's rendezvous round for it). ``discover_hosts.sh`` only prints that file,
so it never changes. The kubelet swaps a ConfigMap volume's files atomically (one
``..data`` symlink), so the script sees either the old list or the new one, never half of each;
expect the usual kubelet sync delay (up to about a minute) between the API write and the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aitj.core import api, naming
from aitj.core.render._meta import object_meta
from aitj.core.render.volcano import env_data, host_files
from aitj.core.wire import as_int, as_list, mapping

DISCOVERY_MOUNT_PATH = "/etc/edl"  # the path et-operator and Arena use (--host-discovery-script)
DISCOVERY_VOLUME = "aitj-discovery"
DISCOVERY_SCRIPT_KEY = "discover_hosts.sh"
DISCOVERY_HOSTS_KEY = "hosts"
DISCOVERY_WANTED_KEY = "wanted"
DISCOVERY_MODE = 0o755  # the script must be executable; horovodrun runs it directly

# Prints the hosts file that sits next to it. $0 is the path it was run by (horovodrun runs
# it by its absolute path), so "next to it" follows the volume, wherever it is mounted.
DISCOVER_HOSTS_SCRIPT = """\
#!/bin/sh
# Written by the aitj operator (plugin.discovery). Prints the job's current workers, one
# "host:slots" per line, as horovodrun --host-discovery-script expects. The operator rewrites
# the "hosts" file next to this script; the script itself never changes.
exec cat "$(dirname "$0")/hosts"
"""

# Resource names counted as GPUs, i.e. Horovod slots. baidu.com/<model>_cgpu is CCE's
# shared-GPU card count; its _cgpu_core and _cgpu_memory siblings are shares of one card and
# are not counted.
GPU_RESOURCE = "nvidia.com/gpu"
_BAIDU_CGPU = re.compile(r"baidu\.com/[A-Za-z0-9_.-]+_cgpu")
_WHOLE = re.compile(r"[0-9]+")


def is_gpu_resource(name: str) -> bool:
    """is_gpu_resource tells whether a resource name counts toward a pod's slots."""
    return name == GPU_RESOURCE or bool(_BAIDU_CGPU.fullmatch(name))


def gpus(pod: Mapping[str, Any]) -> int:
    """gpus: the GPU cards a pod (or pod template) asks for over its app containers (requests,
    else limits), the resources ``is_gpu_resource`` counts (``nvidia.com/gpu``, Baidu's
    ``baidu.com/*_cgpu``); 0 when none, or when a quantity is not a whole number."""
    total = 0
    for container in as_list(mapping(pod.get("spec")).get("containers")):
        resources = mapping(mapping(container).get("resources"))
        asked = {**mapping(resources.get("limits")), **mapping(resources.get("requests"))}
        for name, value in asked.items():
            if is_gpu_resource(name):
                total += as_int(value, 0) or 0
    return total


def slots_for(pod: Mapping[str, Any]) -> int:
    """slots_for is the number of Horovod slots of a pod: its GPU count, or 1 if it has none.

    ``pod`` is a Pod or PodTemplateSpec (anything with ``spec.containers``) or a bare PodSpec.
    The GPU count is the sum over the app containers (not init containers, which do not
    train) of every GPU resource (``is_gpu_resource``); a container's request is used, or its
    limit when it has no request (extended resources default their request to the limit).
    """
    spec = pod if "containers" in pod else (pod.get("spec") or {})
    total = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        counted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, quantity in counted.items():
            if is_gpu_resource(name):
                total += _whole_quantity(quantity, f"container {container.get('name')!r} {name}")
    return total or 1


def _whole_quantity(quantity: object, where: str) -> int:
    # Extended resources are whole numbers; the API server refuses "500m" or "1.5" for them.
    text = str(quantity).strip()
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"{where}: GPU quantity {quantity!r} is not a whole number")
    return int(text)


# What a host name must not hold: ':' or whitespace (``\s`` is ``str.isspace``'s set). One
# search per host: the check character by character was half a pass's CPU in a job of 4,096.
_NOT_IN_HOST = re.compile(r"[\s:]")


def hosts_file(hosts: Sequence[tuple[str, int]]) -> str:
    """hosts_file renders the ``hosts`` file: ``host:slots`` lines in the given order.

    Horovod splits each line at ':' and trusts the rest, so anything odd is refused here rather
    than turned into a phantom host by the launcher.
    """
    seen: set[str] = set()
    lines = []
    for host, slots in hosts:
        if not host or _NOT_IN_HOST.search(host):
            raise ValueError(f"discovery host {host!r} must be non-empty, without ':' or whitespace")
        if host in seen:
            raise ValueError(f"discovery host {host!r} is listed twice")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"discovery host {host!r} has {slots!r} slots; it needs a whole number >= 1")
        seen.add(host)
        lines.append(f"{host}:{slots}\n")
    return "".join(lines)


def wanted_hosts(job: api.Job) -> int:
    """wanted_hosts: how many pods the host list holds when the job runs whole: the replicas of
    its worker replicas (those the list is made of)."""
    return sum(r.replicas for r in job.spec.replicas if r.replica_type is api.ReplicaType.WORKER)


def render_discovery_configmap(
    job: api.Job, hosts: Sequence[tuple[str, int]], running: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """render_discovery_configmap returns the job's discovery ConfigMap listing ``hosts``.

    ``hosts`` are ``(naming.pod_host(job, pod), slots_for(pod))`` for the Running workers, in
    the order the launcher should learn them (the caller's choice; by replica index is natural).
    ``running``: each replica's Running pods in index order, for Volcano's host files (None:
    none of them, as for a job with no Running pod).
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(job, naming.discovery_configmap_name(job.name)),
        "data": {
            DISCOVERY_SCRIPT_KEY: DISCOVER_HOSTS_SCRIPT,
            DISCOVERY_HOSTS_KEY: hosts_file(hosts),
            DISCOVERY_WANTED_KEY: f"{wanted_hosts(job)}\n",
            **host_files(job, running or {}),
            **env_data(job, running or {}),
        },
    }


def discovery_volume(job: api.Job) -> dict[str, Any]:
    """discovery_volume is the pod volume of the discovery ConfigMap, files mode 0755."""
    return {
        "name": DISCOVERY_VOLUME,
        "configMap": {"name": naming.discovery_configmap_name(job.name), "defaultMode": DISCOVERY_MODE},
    }


def discovery_mount() -> dict[str, Any]:
    """discovery_mount mounts the discovery volume read-only at /etc/edl."""
    return {"name": DISCOVERY_VOLUME, "mountPath": DISCOVERY_MOUNT_PATH, "readOnly": True}
