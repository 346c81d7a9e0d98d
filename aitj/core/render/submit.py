"""The AITrainingJob ``aitj submit`` makes from Arena-like flags (``arena submit etjob``).

Pure: a ``Submission`` (what the flags said) in, the manifest as a dict out, shaped like the CCE
seed (manifests/examples/horovod-elastic.yaml): a ``trainer`` worker replica that may scale
between ``min_workers`` and ``max_workers``, and, for launcher frameworks (horovod, mpi), a
``launcher`` master that runs the command while the trainers wait for it over ssh. Without a
launcher the command runs in every trainer and the job succeeds when all of them do.

The fault-tolerance defaults are the seed's: restartPolicy OnNodeFailWithExitCode, a restart
for pods lost to a node failure, a force delete or an eviction, restartLimit 100; exit codes
that should restart a pod are opt-in (``retry_exit_codes``). ``problems`` checks the flags
the way admission would, so a bad count is refused with one line before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aitj.core import api
from aitj.core.exitcodes import ExitCodesError, parse_exit_codes

TRAINER = api.SCALE_REPLICA
LAUNCHER = "launcher"
LAUNCHER_FRAMEWORKS = frozenset({"horovod", "mpi"})
# What a trainer runs while a launcher drives it: the seed's sshd, kept in the foreground.
TRAINER_WAIT = "/usr/sbin/sshd && sleep infinity"
NODE_EVENTS = "nodeNotReady,PodForceDeleted,PodEvicted"


@dataclass(frozen=True)
class Submission:
    """Submission: what ``aitj submit``'s flags say. ``command`` runs with ``/bin/sh -c``.
    ``launcher`` None: the framework decides (horovod and mpi have one)."""

    name: str
    image: str
    command: str
    namespace: str | None = None
    workers: int = 1
    min_workers: int | None = None
    max_workers: int | None = None
    gpus: int = 0
    gpu_resource: str = "nvidia.com/gpu"
    cpu: str | None = None
    memory: str | None = None
    framework: str = "horovod"
    launcher: bool | None = None
    fault_tolerant: bool = True
    restart_limit: int = 100
    retry_exit_codes: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    scheduler_name: str | None = None
    priority: str | None = None
    time_limit: int | None = None
    labels: tuple[tuple[str, str], ...] = field(default=())

    @property
    def has_launcher(self) -> bool:
        """has_launcher: whether a launcher replica runs the command."""
        return self.framework in LAUNCHER_FRAMEWORKS if self.launcher is None else self.launcher

    @property
    def low(self) -> int:
        return self.workers if self.min_workers is None else self.min_workers

    @property
    def high(self) -> int:
        return self.workers if self.max_workers is None else self.max_workers


def problems(s: Submission) -> list[str]:
    """problems: what admission would refuse in ``s``, as one sentence each (empty: fine)."""
    return _shape_problems(s) + _setting_problems(s)


def _shape_problems(s: Submission) -> list[str]:
    """_shape_problems: the name and the replica counts, and the pod names they make."""
    out = []
    if not api.is_dns1035_label(s.name):
        out.append(f"--name {s.name!r} must be a DNS-1035 label (a-z, 0-9, '-', starting with a letter)")
    counts = (("--workers", s.workers), ("--min-workers", s.min_workers), ("--max-workers", s.max_workers))
    for flag, value in counts:
        if value is not None and not 1 <= value <= api.MAX_REPLICAS:
            out.append(f"{flag} {value} is out of range: 1 to {api.MAX_REPLICAS}")
    if not out and not s.low <= s.workers <= s.high:
        out.append(f"--workers {s.workers} must lie within --min-workers {s.low} and --max-workers {s.high}")
    longest = max((TRAINER, LAUNCHER) if s.has_launcher else (TRAINER,), key=len)
    if (
        api.is_dns1035_label(s.name)
        and api.pod_name_length(s.name, longest, s.high - 1) > api.MAX_POD_NAME_LENGTH
    ):
        out.append(
            f"--name {s.name!r} is too long: pod names <name>-{longest}-xxxxx-<index> exceed 63 characters"
        )
    return out


def _setting_problems(s: Submission) -> list[str]:
    """_setting_problems: the flags each checked on its own (resources, limits, the rules)."""
    out = []
    if s.gpus < 0:
        out.append(f"--gpus {s.gpus} is out of range: 0 or more")
    if s.restart_limit < 0:
        out.append(f"--restart-limit {s.restart_limit} is out of range: 0 or more")
    if s.time_limit is not None and s.time_limit < 1:
        out.append(f"--time-limit {s.time_limit} is out of range: 1 second or more")
    if s.retry_exit_codes is not None:
        try:
            parse_exit_codes(s.retry_exit_codes)
        except ExitCodesError as e:
            out.append(f"--retry-exit-codes: {e}")
    if s.priority is not None and s.priority not in ("high", "normal", "low"):
        out.append(f"--priority {s.priority!r} must be high, normal or low")
    return out


def _container(s: Submission, name: str, command: str, gpus: int) -> dict[str, Any]:
    limits: dict[str, str] = {}
    if s.cpu:
        limits["cpu"] = s.cpu
    if s.memory:
        limits["memory"] = s.memory
    if gpus:
        limits[s.gpu_resource] = str(gpus)
    container: dict[str, Any] = {"name": name, "image": s.image, "command": ["/bin/sh", "-c", command]}
    if s.env:
        container["env"] = [{"name": k, "value": v} for k, v in s.env]
    if limits:
        container["resources"] = {"limits": limits, "requests": dict(limits)}
    return container


def _template(s: Submission, container: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container]}
    if s.scheduler_name:
        spec["schedulerName"] = s.scheduler_name
    template: dict[str, Any] = {"spec": spec}
    if s.labels:
        template["metadata"] = {"labels": dict(s.labels)}
    return template


def _rules(s: Submission) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [
        {"exceptionalEvent": NODE_EVENTS, "restartPolicy": "OnNodeFail", "restartScope": "Pod"}
    ]
    if s.retry_exit_codes is not None:
        rules.append({"exitCodes": s.retry_exit_codes, "restartPolicy": "ExitCode", "restartScope": "Pod"})
    return rules


def render_submission(s: Submission) -> dict[str, Any]:
    """render_submission: the AITrainingJob for ``s`` (call ``problems`` first)."""

    def replica_common() -> dict[str, Any]:
        return {
            "restartPolicy": "OnNodeFailWithExitCode",
            "restartScope": "Pod",
            "restartLimit": s.restart_limit,
            "faultTolerantPolicy": _rules(s),
        }

    trainer_command = TRAINER_WAIT if s.has_launcher else s.command
    trainer: dict[str, Any] = {
        "replicaType": "worker",
        "replicas": s.workers,
        "minReplicas": s.low,
        "maxReplicas": s.high,
        # With a launcher the launcher's exit decides; without one every trainer must succeed.
        "completePolicy": "None" if s.has_launcher else "All",
        "failPolicy": "None" if s.has_launcher else "Any",
        **replica_common(),
        "template": _template(s, _container(s, TRAINER, trainer_command, s.gpus)),
    }
    replicas: dict[str, Any] = {TRAINER: trainer}
    spec: dict[str, Any] = {
        "frameworkType": s.framework,
        "faultTolerant": s.fault_tolerant,
        "completePolicy": "Any",
        "failPolicy": "Any",
        "cleanPodPolicy": "None",
    }
    if s.has_launcher:
        replicas[LAUNCHER] = {
            "replicaType": "master",
            "replicas": 1,
            "completePolicy": "All",
            "failPolicy": "Any",
            **replica_common(),
            "template": _template(s, _container(s, LAUNCHER, s.command, 0)),
        }
        spec["plugin"] = {"ssh": [""], "discovery": [""]}
    if s.priority:
        spec["priority"] = s.priority
    if s.time_limit is not None:
        spec["timeLimit"] = s.time_limit
    spec["replicaSpecs"] = replicas
    metadata: dict[str, Any] = {"name": s.name}
    if s.namespace:
        metadata["namespace"] = s.namespace
    return {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": metadata, "spec": spec}
