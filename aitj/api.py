"""The AITrainingJob API: names, enums and the typed model of a job.

Pure: imports neither kopf, kubernetes nor prometheus_client (import-linter enforces it).
The CRD in ``crds/`` is the admission-time twin of this module; field meanings are in
docs/api.md and ../shared/REFERENCE.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

GROUP = "kongming.cce.baiudbce.com"  # the seed's spelling, so CCE manifests apply verbatim
VERSION = "v1"
KIND = "AITrainingJob"
PLURAL = "aitrainingjobs"
SHORT_NAME = "aitj"

# Labels and annotations the operator puts on what it creates.
LABEL_PREFIX = "aitj.kongming.cce.baiudbce.com"
LABEL_JOB = f"{LABEL_PREFIX}/job-name"
LABEL_REPLICA = f"{LABEL_PREFIX}/replica-name"
LABEL_INDEX = f"{LABEL_PREFIX}/replica-index"
LABEL_GENERATION = f"{LABEL_PREFIX}/restart-generation"
LABEL_PRIORITY = f"{LABEL_PREFIX}/priority"


class StrEnumMixin(str, enum.Enum):
    def __str__(self) -> str:
        return str(self.value)


class Policy(StrEnumMixin):
    """completePolicy / failPolicy. Rank0 is valid only at replica level."""

    ALL = "All"
    ANY = "Any"
    NONE = "None"
    RANK0 = "Rank0"


class CleanPodPolicy(StrEnumMixin):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class ReplicaType(StrEnumMixin):
    MASTER = "master"
    WORKER = "worker"


class RestartPolicy(StrEnumMixin):
    """Which failures of a replica may be restarted at all."""

    NEVER = "Never"
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    EXIT_CODE = "ExitCode"
    ON_NODE_FAIL = "OnNodeFail"
    ON_NODE_FAIL_WITH_EXIT_CODE = "OnNodeFailWithExitCode"


class RestartScope(StrEnumMixin):
    POD = "Pod"
    REPLICA = "Replica"
    ALL = "All"


class ExceptionalEvent(StrEnumMixin):
    NODE_NOT_READY = "nodeNotReady"
    POD_FORCE_DELETED = "PodForceDeleted"
    POD_EVICTED = "PodEvicted"
    POD_PREEMPTED = "PodPreempted"


class Phase(StrEnumMixin):
    """Job phase; also the condition types of the status history."""

    PENDING = "Pending"
    CREATING = "Creating"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SCALING = "Scaling"
    TERMINATING = "Terminating"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMEOUT = "Timeout"


FINISHED_PHASES = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.TIMEOUT})


@dataclass(frozen=True)
class FaultTolerantRule:
    """One faultTolerantPolicy rule: exactly one of exit_codes / events is non-empty."""

    restart_policy: RestartPolicy
    restart_scope: RestartScope
    exit_codes: frozenset[int] = frozenset()
    events: frozenset[ExceptionalEvent] = frozenset()
    source: str = ""  # the rule as written, for messages ("exitCodes 129,101")


@dataclass(frozen=True)
class ReplicaSpec:
    name: str
    replica_type: ReplicaType
    replicas: int
    min_replicas: int
    max_replicas: int
    complete_policy: Policy
    fail_policy: Policy
    restart_policy: RestartPolicy
    restart_scope: RestartScope
    restart_limit: int | None  # None: unlimited
    restart_time_limit: int  # seconds an old pod may take to terminate before it is force-deleted
    restart_timeout: int | None  # seconds a replacement may take to reach Running; None: no limit
    scale_timeout: int  # seconds a scale-out may take before it is rolled back
    rules: tuple[FaultTolerantRule, ...]
    template: dict[str, Any] = field(hash=False, compare=False)


@dataclass(frozen=True)
class JobSpec:
    framework_type: str
    fault_tolerant: bool
    complete_policy: Policy
    fail_policy: Policy
    clean_pod_policy: CleanPodPolicy
    ssh: bool
    discovery: bool
    priority: str | None
    time_limit: int | None
    replicas: tuple[ReplicaSpec, ...]  # in a stable order: workers first, then masters, by name

    def replica(self, name: str) -> ReplicaSpec:
        for r in self.replicas:
            if r.name == name:
                return r
        raise KeyError(name)


@dataclass(frozen=True)
class Job:
    namespace: str
    name: str
    uid: str
    generation: int
    spec: JobSpec
    status: dict[str, Any] = field(hash=False, compare=False)
