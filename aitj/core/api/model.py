"""The AITrainingJob model: its enums, the defaults the CRD writes, and the typed, frozen spec.

Pure. ``parse_job`` (aitj.core.api.validation) builds a ``Job`` (aitj.core.api.job) from a
manifest; everything past it (the planner, the renderer, explanations) reads only these types.
Field meanings are in docs/api.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class StrEnumMixin(enum.StrEnum):
    """StrEnumMixin: members are their wire values (``str(Policy.ALL) == "All"``)."""


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
    # ours (issue 28): a rule's containers restart in the same pod, by the kubelet
    # (docs/semantics.md, "In-place restarts and the escalation ladder"); rules only
    IN_PLACE = "InPlace"


class ExceptionalEvent(StrEnumMixin):
    NODE_NOT_READY = "nodeNotReady"
    POD_FORCE_DELETED = "PodForceDeleted"
    POD_EVICTED = "PodEvicted"
    POD_PREEMPTED = "PodPreempted"
    # ours (issue 28): the watched pod printed no progress line for spec.progress.stallSeconds
    # while the job ran (docs/semantics.md, "Hangs")
    HANG = "hang"


class InfrastructureFaults(StrEnumMixin):
    """A rule's ``infrastructureFaults``: whether the restarts it makes for infrastructure faults
    (a node gone or NotReady, a drain, a preemption, an eviction) charge its restartLimit
    (docs/semantics.md section 25)."""

    CHARGE = "Charge"  # they count like any other (the default: a seed's rule keeps its meaning)
    EXEMPT = "Exempt"  # they neither count toward nor are refused by its restartLimit


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
    # ours: spec.suspend is true (docs/semantics.md, "Suspend and resume"); not finished
    SUSPENDED = "Suspended"


class FrameworkType(StrEnumMixin):
    """spec.frameworkType: informational (the pods' TRAININGJOB_FRAMEWORK, kubectl's FRAMEWORK
    column); it selects no defaults and turns no plugin on or off."""

    HOROVOD = "horovod"
    PADDLE = "paddle"
    PYTORCH = "pytorch"
    MPI = "mpi"
    TENSORFLOW = "tensorflow"


class Priority(StrEnumMixin):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class ScaleOperation(StrEnumMixin):
    """status.scaleHistory[].operation."""

    SCALE_OUT = "scaleout"
    SCALE_IN = "scalein"
    ROLLBACK = "rollback"


FINISHED_PHASES = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.TIMEOUT})

# Policies allowed at job level (over replica types); Rank0 only makes sense within one.
JOB_POLICIES = (Policy.ALL, Policy.ANY, Policy.NONE)
REPLICA_POLICIES = tuple(Policy)
# The replica-level restartScope: InPlace is a rule's rung only (it needs the rule's exit codes).
REPLICA_SCOPES = (RestartScope.POD, RestartScope.REPLICA, RestartScope.ALL)
# A rule's kind fixes its restartPolicy: the seed's pairing; any other is refused.
RULE_RESTART_POLICIES = (RestartPolicy.EXIT_CODE, RestartPolicy.ON_NODE_FAIL)

# Defaults. The CRD writes the same values as OpenAPI defaults (hack/gen_crd.py).
DEFAULT_FAULT_TOLERANT = False
DEFAULT_SUSPEND = False
DEFAULT_JOB_COMPLETE_POLICY = Policy.ALL
DEFAULT_JOB_FAIL_POLICY = Policy.ANY
DEFAULT_CLEAN_POD_POLICY = CleanPodPolicy.ALL
DEFAULT_REPLICA_TYPE = ReplicaType.WORKER
DEFAULT_REPLICAS = 1
DEFAULT_REPLICA_COMPLETE_POLICY = Policy.ALL
DEFAULT_REPLICA_FAIL_POLICY = Policy.ANY
DEFAULT_RESTART_POLICY = RestartPolicy.NEVER
DEFAULT_RESTART_SCOPE = RestartScope.POD
DEFAULT_RESTART_TIME_LIMIT = 60
DEFAULT_SCALE_TIMEOUT = 600
# A rule's backoff (issue 15): maxSeconds and resetAfterSeconds when unset.
DEFAULT_BACKOFF_MAX = 300
DEFAULT_BACKOFF_RESET_AFTER = 600
# Seconds scale-in pods stay alive after leaving the discovery host list: about one kubelet
# sync period, the time a ConfigMap edit takes to reach the launcher's mounted file.
DEFAULT_SCALE_IN_GRACE_PERIOD = 60

_EVENT_NAME = "(" + "|".join(e.value for e in ExceptionalEvent) + ")"
_SPACE = r"[ \t]*"
# exceptionalEvent: a comma list of known names, spaces allowed. The CRD's CEL rule uses it too.
EVENTS_PATTERN = rf"^{_SPACE}{_EVENT_NAME}{_SPACE}(,{_SPACE}{_EVENT_NAME}{_SPACE})*$"

EVENTS_HINT = "a comma-separated list of " + ", ".join(e.value for e in ExceptionalEvent)


@dataclass(frozen=True)
class Backoff:
    """Backoff: a rule's delay before recreating an index it restarted before: ``initial``
    seconds, doubled at each further failure up to ``maximum``; forgotten once the index has
    run ``reset_after`` seconds without failing (docs/semantics.md, "Backoff")."""

    initial: int
    maximum: int = DEFAULT_BACKOFF_MAX
    reset_after: int = DEFAULT_BACKOFF_RESET_AFTER

    def delay(self, streak: int) -> int:
        """delay: seconds to wait before recreating an index whose failure is the ``streak``-th
        in a row by the rule (the first is not delayed)."""
        if streak <= 1:
            return 0
        return min(self.initial << min(streak - 2, 32), self.maximum)


@dataclass(frozen=True)
class FaultTolerantRule:
    """One faultTolerantPolicy rule: exactly one of exit_codes / events is non-empty.

    The optional recovery fields (issue 15; None: not set): ``restart_limit`` restarts per
    replica within ``restart_window`` seconds (None: the job's life), ``backoff``, and
    ``exclude_node_seconds`` (a replacement keeps off the failed pod's node that long)."""

    restart_policy: RestartPolicy
    restart_scope: RestartScope
    exit_codes: frozenset[int] = frozenset()
    events: frozenset[ExceptionalEvent] = frozenset()
    source: str = ""  # the rule as written, for messages ("exitCodes 129,101")
    restart_limit: int | None = None
    restart_window: int | None = None
    backoff: Backoff | None = None
    exclude_node_seconds: int | None = None
    infrastructure_faults: InfrastructureFaults = InfrastructureFaults.CHARGE  # issue 28


# The hook's deadline: a drain waits at most this long for the checkpoint. 600 s is the
# longest a drain is commonly given (the cluster autoscaler's default max graceful termination);
# a user's own drain timeout should be longer than the spec's timeoutSeconds (section 26).
DEFAULT_CHECKPOINT_SECONDS = 60
MAX_CHECKPOINT_SECONDS = 600
MAX_COMMAND_ITEMS = 64
MAX_COMMAND_ITEM_LENGTH = 4096
# The CRD's CEL rule says the same (hack/gen_crd.py).
CHECKPOINT_COMMAND_MESSAGE = "command[0] must name the program to run, not be empty"


@dataclass(frozen=True)
class DrainCheckpoint:
    """DrainCheckpoint: ``command`` is exec'd in the pod's first container when its node is
    cordoned; the eviction waits until it exits or ``timeout_seconds`` have passed."""

    command: tuple[str, ...]
    timeout_seconds: int = DEFAULT_CHECKPOINT_SECONDS


@dataclass(frozen=True)
class ReplicaSpec:
    name: str
    replica_type: ReplicaType
    replicas: int
    min_replicas: int  # unset in the manifest: equal to replicas (no elasticity below it)
    max_replicas: int  # unset in the manifest: equal to replicas
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
    # seconds scale-in pods stay alive out of the host list before they are deleted
    scale_in_grace_period: int = DEFAULT_SCALE_IN_GRACE_PERIOD
    scale_in_pods: tuple[str, ...] = ()  # scaleInpods: pods to remove first at a scale-in (CCE)
    checkpoint_on_drain: DrainCheckpoint | None = None  # run before a drain evicts a pod (section 26)


# spec.progress (issue 28, docs/semantics.md "Hangs"): stallSeconds bounds. Below the minimum a
# pause of the training's own (a checkpoint, an evaluation) would read as a hang; a day is as
# long as a silent step can sensibly be.
MIN_STALL_SECONDS = 10
MAX_STALL_SECONDS = 86_400
MAX_STEP_PATTERN_LENGTH = 256


@dataclass(frozen=True)
class Progress:
    """Progress: spec.progress, the opt-in hang detection (docs/semantics.md, "Hangs"): the
    pod of index 0 of replica ``replica`` is watched; no line of ``container``'s log (one
    matching ``step_pattern`` when set) for ``stall_seconds`` while the job runs is a hang."""

    replica: str
    stall_seconds: int
    step_pattern: str | None = None
    container: str | None = None  # None: the pod's first container


@dataclass(frozen=True)
class JobSpec:
    framework_type: str  # "" when unset
    fault_tolerant: bool
    complete_policy: Policy
    fail_policy: Policy
    clean_pod_policy: CleanPodPolicy
    ssh: bool
    discovery: bool
    priority: str | None
    time_limit: int | None
    replicas: tuple[ReplicaSpec, ...]  # in a stable order: workers first, then masters, by name
    # spec.suspend (batch/v1 Job's, for Kueue): no pods, no restarts counted, no clocks running
    suspend: bool = DEFAULT_SUSPEND
    # spec.progress: hang detection, None when the job does not opt in (docs/semantics.md, "Hangs")
    progress: Progress | None = None

    def replica(self, name: str) -> ReplicaSpec:
        for r in self.replicas:
            if r.name == name:
                return r
        raise KeyError(name)


def parse_phase(value: object) -> Phase | None:
    """parse_phase reads a phase as status holds it; None if absent or not a phase we know."""
    try:
        return Phase(value) if isinstance(value, str) else None
    except ValueError:
        return None
