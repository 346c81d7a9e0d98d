"""The environment every container of a job's pod gets (init containers included).

| variable | value |
|---|---|
| ``TRAININGJOB_NAME`` | the job's name |
| ``TRAININGJOB_NAMESPACE`` | the job's namespace |
| ``TRAININGJOB_FRAMEWORK`` | ``spec.frameworkType`` (horovod, paddle, ...) |
| ``TRAININGJOB_REPLICA_NAME`` | this pod's replica, e.g. ``trainer`` |
| ``TRAININGJOB_REPLICA_TYPE`` | ``master`` or ``worker`` |
| ``TRAININGJOB_REPLICA_INDEX`` | this pod's index within its replica, from 0 |
| ``TRAININGJOB_REPLICA_RESTARTCOUNT`` | restarts of this replica so far (``status.RestartCount.<replica>``) |
| ``TRAININGJOB_SERVICE`` | the headless Service; ``<pod>.$TRAININGJOB_SERVICE`` is a pod's stable DNS name |
| ``TRAININGJOB_<R>_REPLICAS`` | for every replica R of the job: its ``replicas`` |
| ``TRAININGJOB_<R>_MIN_REPLICAS`` / ``_MAX_REPLICAS`` | its ``minReplicas`` / ``maxReplicas`` |
| ``TRAININGJOB_<R>_SLOTS`` | slots (GPUs, 1 if none) of each R pod, as the discovery list counts them |
| ``VC_<R>_HOSTS`` / ``VC_<R>_NUM`` | plugin.discovery: Volcano's, from the ConfigMap (``render.volcano``) |

``<R>`` is the replica name in upper case with every character outside A-Z and 0-9 turned into
``_`` (``trainer`` → ``TRAININGJOB_TRAINER_REPLICAS``). The first five names come from
elasticdeeplearning/trainingjob-operator, the operator CCE's API descends from; the per-replica
counts let a launcher size ``horovodrun -np/--min-np/--max-np`` the way Arena's etjob does
(``-np $((workers*gpus))``) instead of hard-coding them.

All values are fixed when the pod is created: a running container's environment cannot change.
After a scale the counts describe the job as it was when the pod started; the live host list
is ``/etc/edl/discover_hosts.sh`` (plugin.discovery). For the same reason there is no list of
peer addresses, nor PyTorch's ``MASTER_ADDR`` / ``WORLD_SIZE`` or Paddle's ``PADDLE_TRAINER_*``:
a peer's name changes when it is restarted, and the count when the job is scaled.

Ours come first in ``env`` because Kubernetes expands ``$(VAR)`` in command, args and env only
from variables defined earlier in the list (the seed's init container passes
``--name=$(TRAININGJOB_NAME)``). A name the user already sets in the container's ``env`` is
left to the user: ours is dropped, theirs stays where it is. (``envFrom`` is weaker than
``env`` in Kubernetes, so a TRAININGJOB_* name coming from ``envFrom`` is overridden by ours.)
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from typing import Any

from aitj.core import api, naming
from aitj.core.render.discovery import slots_for
from aitj.core.render.volcano import volcano_env

ENV_JOB_NAME = "TRAININGJOB_NAME"
ENV_JOB_NAMESPACE = "TRAININGJOB_NAMESPACE"
ENV_FRAMEWORK = "TRAININGJOB_FRAMEWORK"
ENV_REPLICA_NAME = "TRAININGJOB_REPLICA_NAME"
ENV_REPLICA_TYPE = "TRAININGJOB_REPLICA_TYPE"
ENV_REPLICA_INDEX = "TRAININGJOB_REPLICA_INDEX"
ENV_REPLICA_RESTARTCOUNT = "TRAININGJOB_REPLICA_RESTARTCOUNT"
ENV_SERVICE = "TRAININGJOB_SERVICE"

_NOT_ENV_CHAR = re.compile(r"[^A-Z0-9]")


def replica_env_prefix(replica_name: str) -> str:
    """replica_env_prefix is ``TRAININGJOB_<R>_`` for a replica name."""
    return f"TRAININGJOB_{_NOT_ENV_CHAR.sub('_', replica_name.upper())}_"


def job_env(job: api.Job, replica: api.ReplicaSpec, index: int, restart_count: int) -> list[dict[str, Any]]:
    """job_env is the operator's environment for one pod, in the order it goes into ``env``."""
    pairs = [
        (ENV_JOB_NAME, job.name),
        (ENV_JOB_NAMESPACE, job.namespace),
        (ENV_FRAMEWORK, job.spec.framework_type),
        (ENV_REPLICA_NAME, replica.name),
        (ENV_REPLICA_TYPE, str(replica.replica_type)),
        (ENV_REPLICA_INDEX, str(index)),
        (ENV_REPLICA_RESTARTCOUNT, str(restart_count)),
        (ENV_SERVICE, naming.service_name(job.name)),
    ]
    for other in job.spec.replicas:
        prefix = replica_env_prefix(other.name)
        pairs += [
            (f"{prefix}REPLICAS", str(other.replicas)),
            (f"{prefix}MIN_REPLICAS", str(other.min_replicas)),
            (f"{prefix}MAX_REPLICAS", str(other.max_replicas)),
            (f"{prefix}SLOTS", str(slots_for(other.template))),
        ]
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in pairs]
    if job.spec.discovery:
        env += volcano_env(job)
    # Two replica names may map to one name ("a-b", "a_b"): the first wins.
    first = {var["name"]: var for var in reversed(env)}
    return [var for var in env if first[var["name"]] is var]


def inject_env(container: MutableMapping[str, Any], ours: Sequence[dict[str, Any]]) -> None:
    """inject_env puts ``ours`` first in the container's env, minus names the user sets."""
    theirs = container.get("env") or []  # the seed has "env:" with no value: None
    taken = {var.get("name") for var in theirs}
    container["env"] = [dict(var) for var in ours if var["name"] not in taken] + list(theirs)
