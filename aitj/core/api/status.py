"""The AITrainingJob status, typed: ``JobStatus`` and its parts, as frozen dataclasses.

Pure. The planner (aitj.core.planner) reads the status it plans from as a ``JobStatus`` and
returns the one to write; the executor writes ``to_json()``. Each field is declared once, with
its JSON key and its description: ``aitj.core.api.jsonform`` reads, writes and describes them
(hack/gen_crd.py builds the CRD's status schema from ``status_schema``), so the key is spelled
in one place. A field is None when its key is absent. Timestamps are kept as the text the API
server stores (``aitj.core.wire.parse_time`` reads them). Keys and values the types do not take
are kept in ``extra`` and written back (aitj.core.api.jsonform says why). Field meanings for
people are in docs/api.md.

The restart ledger's structure is the planner's (aitj.core.planner.ledger): the status keeps
it as JSON (``aitj.core.api.ledger_form.RestartLedger``), described by the forms there.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from aitj.core.api.jsonform import JsonObject, Schema, prop, schema, time_prop
from aitj.core.api.ledger_form import RestartLedger
from aitj.core.api.model import Phase, RestartScope, ScaleOperation
from aitj.core.api.names import (
    MAX_LISTED,
    MAX_RESTART_RECORDS,
    MAX_SCALE_HISTORY,
    MAX_STATUS_CONDITIONS,
    SCALE_REPLICA,
)
from aitj.core.wire import parse_time

# The items or values of a count: non-negative.
COUNT: Schema = {"minimum": 0}


class ConditionStatus(enum.StrEnum):
    """A condition's status: True for the current one."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class ShortfallCause(enum.StrEnum):
    """ShortfallCause: the closed set of reasons an index runs short (``degraded.indices[].cause``)."""

    UNSCHEDULABLE = "Unschedulable"  # its pod exists but the scheduler finds no node for it
    BACKOFF = "Backoff"  # its replacement waits out a rule's backoff before it is created
    BUDGET_EXHAUSTED = "BudgetExhausted"  # a rule's restart budget ran out for it
    NODE_EXCLUDED = "NodeExcluded"  # its replacement may not use the node its last pod failed on
    OUT_OF_RING = "OutOfRing"  # its pod runs, the training's own log shows it steps without it


@dataclass(frozen=True, kw_only=True)
class JobCondition(JsonObject):
    """One entry of ``conditions``, the job's history."""

    type: Phase | None = prop(description="The phase this condition records.", required=True)
    status: ConditionStatus | None = prop(description="True for the current condition.", required=True)
    reason: str | None = prop(description="One CamelCase word, e.g. TrainingJobRunning.")
    message: str | None = prop(description="What happened, for people.")
    last_probe_time: str | None = time_prop("lastProbeTime", "When the operator last observed it.")
    last_transition_time: str | None = time_prop("lastTransitionTime", "When it began.")


@dataclass(frozen=True, kw_only=True)
class ReplicaStatus(JsonObject):
    """``replicaStatuses.<replica>``: pod counts of one replica type."""

    SCHEMA_DESCRIPTION = "Pod counts of one replica type."

    active: int | None = prop(description="Pods not finished: pending or running.", minimum=0)
    running: int | None = prop(description="Pods running.", minimum=0)
    pending: int | None = prop(description="Pods waiting to be scheduled or to start.", minimum=0)
    succeeded: int | None = prop(description="Pods that succeeded.", minimum=0)
    failed: int | None = prop(description="Pods that failed.", minimum=0)


@dataclass(frozen=True, kw_only=True)
class PodGroupStatus(JsonObject):
    """``volcanoPodGroup``: the spec of the job's Volcano PodGroup as last written."""

    min_member: int | None = prop(
        "minMember", "The sum of minReplicas of the replicas Volcano schedules.", minimum=0
    )
    min_resources: Mapping[str, str] | None = prop(
        "minResources", "What those minReplicas pods request, per resource."
    )
    queue: str | None = prop(description="The Volcano queue.")
    priority_class_name: str | None = prop(
        "priorityClassName", "The PriorityClass of the job's priority, if mapped."
    )


@dataclass(frozen=True, kw_only=True)
class ExcludedNode(JsonObject):
    """One entry of ``excludedNodes``: a node replacements keep off (excludeNodeSeconds)."""

    node: str | None = prop(description="The node a pod of the index failed on.")
    replica: str | None = prop(description="The replica type.")
    index: int | None = prop(description="The index.", minimum=0)
    rule: str | None = prop(description="The rule that restarted the pod and excludes the node.")
    reason: str | None = prop(description="The failure's cause (exitCode 101, nodeNotReady, ...).")
    until: str | None = time_prop(description="When the exclusion expires.")
    message: str | None = prop(
        description="Set while the index's replacement waits Pending because no other node fits it."
    )


@dataclass(frozen=True, kw_only=True)
class DegradedIndex(JsonObject):
    """One entry of ``degraded.indices``: an index running short, and why."""

    replica: str | None = prop(description="The replica spec.")
    index: int | None = prop(description="The index.", minimum=0)
    cause: ShortfallCause | None = prop(description="Why it has no Running pod.")
    message: str | None = prop(description="The cause, for people (the scheduler's message, a rule, a node).")
    since: str | None = time_prop(description="When the cause began.")
    until: str | None = time_prop(description="When the cause ends by itself (a backoff, an exclusion).")


@dataclass(frozen=True, kw_only=True)
class Degraded(JsonObject):
    """``degraded``: the job, having run, goes on with fewer pods than it wants, and why."""

    since: str | None = time_prop(description="When the job became degraded.")
    reason: str | None = prop(
        description="The state in a few words (the DEGRADED column), e.g. trainer[1] Unschedulable."
    )
    message: str | None = prop(
        description="Per replica type running short: pods running of those wanted, and why."
    )
    count: int | None = prop(description="Indices running short (indices lists the first ones).", minimum=0)
    indices: tuple[DegradedIndex, ...] | None = prop(
        description=f"The indices running short, by replica then index. At most {MAX_LISTED}.",
        max_items=MAX_LISTED,
    )


@dataclass(frozen=True, kw_only=True)
class PassFailure(JsonObject):
    """``passFailure``: the operator's passes for the job fail, and why
    (aitj.core.planner.failed_pass decides what it says and when it goes)."""

    reason: str | None = prop(
        description="Why, in one CamelCase word: StatusRefused (the status write refused: a schema "
        "rule or an admission policy), CallRefused (another call refused) or PassError (an error "
        "in the operator)."
    )
    message: str | None = prop(description="What the API server said, or the error, for people.")
    since: str | None = time_prop(description="When the passes began to fail this way.")


_SCALE_GENERATION = "metadata.generation of the edit that asked for it."


@dataclass(frozen=True, kw_only=True)
class ScaleOperationStatus(JsonObject):
    """``scaling.<replica>``: a scale operation in flight (aitj.core.planner.scaling)."""

    SCHEMA_DESCRIPTION = "One scale operation in flight."

    operation: ScaleOperation | None = prop(
        description="scaleout, scalein, or rollback (a scale-out being undone: replicas is being set back)."
    )
    version: int | None = prop(
        description="The operation's number: 1 for the job's first (the job version).", minimum=0
    )
    generation: int | None = prop(description=_SCALE_GENERATION, fmt="int64")
    source: int | None = prop("from", "replicas before.", minimum=0)
    target: int | None = prop("to", "replicas asked for.", minimum=0)
    indices: tuple[int, ...] | None = prop(
        description="Indices added (scaleout) or leaving (scalein).", items=COUNT
    )
    pods: tuple[str, ...] | None = prop(description="Their pods.")
    draining: tuple[str, ...] | None = prop(
        description="Scale-in pods out of the host list, deleted at the deadline."
    )
    started: str | None = time_prop(description="When it began.")
    deadline: str | None = time_prop(
        description="scaleout: rolled back if its pods are not all Running by then; scalein: pods "
        "deleted then."
    )
    reason: str | None = prop(description="rollback: ScaleTimeout or ScaleFailed.")
    message: str | None = prop(description="rollback: why, for people.")


@dataclass(frozen=True, kw_only=True)
class ScaleHistoryEntry(JsonObject):
    """One entry of ``scaleHistory``: a finished scale operation or rollback."""

    time: str | None = time_prop(description="When it finished.")
    started: str | None = time_prop(description="When it began.")
    replica: str | None = prop(description="The replica spec scaled.")
    operation: ScaleOperation | None = prop(
        description="scaleout or scalein (done), or rollback (a scale-out rolled back, or an "
        "operation cancelled by a newer edit)."
    )
    version: int | None = prop(
        description="The operation's number (the job version of its message).", minimum=0
    )
    generation: int | None = prop(description=_SCALE_GENERATION, fmt="int64")
    source: int | None = prop("from", "replicas before.", minimum=0)
    target: int | None = prop("to", "replicas asked for.", minimum=0)
    pods: tuple[str, ...] | None = prop(
        description=f"Pods added or removed: the first {MAX_LISTED} (from and to say how many)."
    )
    reason: str | None = prop(
        description="ScaleSucceeded, ScaleTimeout (not Running within scaleTimeout), ScaleFailed "
        "(a new pod failed for good) or ScaleCancelled (a newer edit replaced it)."
    )
    message: str | None = prop(description="What happened, for people.")


@dataclass(frozen=True, kw_only=True)
class RestartEntry(JsonObject):
    """One entry of ``restarts``: a restart, as recorded (aitj.core.planner.ledger.record_to_json)."""

    time: str | None = time_prop(description="When the restart was decided.")
    replica: str | None = prop(description="Replica spec of the failed pod.")
    index: int | None = prop(description="Index of the failed pod.", minimum=0)
    generation: int | None = prop(
        description="Restart generation of the failed pod: with replica and index, the key.", minimum=0
    )
    pod: str | None = prop(description="Name of the failed pod.")
    cause: str | None = prop(description="What failed, e.g. exitCode 137 or nodeNotReady.")
    exit_code: int | None = prop("exitCode", "The exit code, for an exitCode failure.")
    message: str | None = prop(description="The failure, for people.")
    failure_time: str | None = time_prop("failureTime", "When the failure happened, if the cluster says.")
    rule: str | None = prop(description="The faultTolerantPolicy rule that matched, as written.")
    scope: RestartScope | None = prop(description="What was recreated.")


@dataclass(frozen=True, kw_only=True)
class Ownership(JsonObject):
    """``ownership``: what makes the job's pods and objects provably its own (docs/security.md,
    "What makes a pod the job's"): the names of its pods, and a proof on its other objects, are
    derived from ``key``, which only the operator writes, before it creates anything."""

    key: str | None = prop(
        description="A random key, written once by the operator before the job's first pod: "
        "the 5 characters of each pod's name and the proof annotation of the job's other objects "
        "are derived from it with HMAC-SHA256. Not for people."
    )
    legacy_before: str | None = time_prop(
        "legacyBefore",
        "For a job that had pods when its key was written (made by an operator before keys): "
        "its pods and objects created before this time keep their unkeyed names and no proof.",
    )

    def predates(self, created: datetime | None) -> bool:
        """predates: an object created at ``created`` (its creationTimestamp: the apiserver's,
        whole seconds) was made before the key was written (``legacyBefore``)."""
        before = parse_time(self.legacy_before)
        return created is not None and before is not None and created < before


@dataclass(frozen=True, kw_only=True)
class GoodputCarry(JsonObject):
    """``goodput``: the time accounted from conditions the history has dropped (docs/semantics.md
    section 25; aitj.core.planner.goodput folds them in as they go)."""

    through: str | None = time_prop(description="The account below covers the job's time up to this.")
    training_millis: int | None = prop(
        "trainingMillis",
        "Milliseconds the job was Running and not losing time to a fault.",
        minimum=0,
        fmt="int64",
    )
    badput_millis: Mapping[str, int] | None = prop(
        "badputMillis",
        "Milliseconds lost, per cause (fault, hang, recovery, scaling, starting).",
        values=COUNT,
    )


@dataclass(frozen=True, kw_only=True)
class JobStatus(JsonObject):
    """JobStatus: the job as the operator last observed it (``status``), written by it only."""

    phase: Phase | None = prop(description="Where the job is in its life.")
    conditions: tuple[JobCondition, ...] | None = prop(
        description="The job's history, oldest first: each new condition is appended with status True "
        f"and the previous one set to False. At most {MAX_STATUS_CONDITIONS}.",
        max_items=MAX_STATUS_CONDITIONS,
    )
    restart_count: Mapping[str, int] | None = prop(
        "RestartCount",
        "Restarts so far per replica type (the seed's spelling, capital R).",
        values=COUNT,
    )
    total_restarts: int | None = prop(
        "totalRestarts", "Restarts so far, all replica types together.", minimum=0
    )
    infrastructure_restarts: Mapping[str, int] | None = prop(
        "infrastructureRestarts",
        "Of RestartCount, the restarts per replica type caused by infrastructure faults "
        "(nodeNotReady: a node gone, NotReady, showing a health signal or drained; PodPreempted; "
        "PodEvicted); the rest are the application's (docs/semantics.md section 25). Counted "
        "when the restart is recorded in restarts, exactly once.",
        values=COUNT,
    )
    replica_statuses: Mapping[str, ReplicaStatus] | None = prop(
        "replicaStatuses", "Pod counts per replica type."
    )
    start_time: str | None = time_prop("startTime", "When the operator first acted on the job.")
    start_running_time: str | None = time_prop(
        "startRunningTime", "When the job first reached Running; timeLimit counts from it."
    )
    completion_time: str | None = time_prop(
        "completionTime", "When the job finished (Succeeded, Failed or Timeout)."
    )
    trainer_replicas: int | None = prop(
        "trainerReplicas", f"Pods of the {SCALE_REPLICA} replica, for the /scale subresource.", minimum=0
    )
    selector: str | None = prop(
        description=f"Label selector of the {SCALE_REPLICA} replica's pods, for the /scale subresource."
    )
    discovery_hosts: tuple[str, ...] | None = prop(
        "discoveryHosts",
        "The worker pods in the discovery plugin's host list (/etc/edl/discover_hosts.sh), "
        "in order; written when plugin.discovery is on.",
    )
    host_files: Mapping[str, tuple[str, ...]] | None = prop(
        "hostFiles",
        "Per master replica type, its pods in Volcano's host file /etc/volcano/<replica>.host, in "
        "index order (a worker replica's file lists its pods in discoveryHosts); written when "
        "plugin.discovery is on.",
    )
    volcano_pod_group: PodGroupStatus | None = prop(
        "volcanoPodGroup",
        "The spec of the job's Volcano PodGroup as last written (docs/volcano.md); rewritten when the "
        "job's spec changes it.",
    )
    restart_ledger: RestartLedger | None = prop(
        "restartLedger",
        "The operator's restart bookkeeping per replica type, which keeps restart counts exact "
        "across operator crashes (docs/semantics.md). Not for people.",
    )
    excluded_nodes: tuple[ExcludedNode, ...] | None = prop(
        "excludedNodes",
        "Nodes replacements keep off (a rule's excludeNodeSeconds): the node, the replica and "
        "index whose pod failed there, the rule, the failure's cause, and until when. Expired "
        "ones are dropped.",
    )
    disruption_budgets: Mapping[str, int] | None = prop(
        "disruptionBudgets",
        "Per replica type, the minAvailable of the PodDisruptionBudget the operator keeps for it "
        "(docs/semantics.md, node maintenance). Absent: no budgets.",
        values=COUNT,
    )
    degraded: Degraded | None = prop(
        description="Present while the job, having run, goes on with fewer pods than it wants, and "
        "why (docs/semantics.md, a visible degraded state). Absent otherwise."
    )
    observed_generation: int | None = prop(
        "observedGeneration", "The metadata.generation this status describes.", fmt="int64"
    )
    current_replicas: Mapping[str, int] | None = prop(
        "currentReplicas",
        "Per replica type, the pods the job runs with: what replicas was when the last scale "
        "operation finished (CCE's name). A scale operation runs while "
        "spec.replicaSpecs.<name>.replicas differs from it.",
        values=COUNT,
    )
    vacant_indices: Mapping[str, tuple[int, ...]] | None = prop(
        "vacantIndices",
        "Per replica type, indices below the highest current one without a pod: named pods were "
        "scaled in (scaleInpods). A scale-out fills them first.",
        values={"items": COUNT},
    )
    scaling: Mapping[str, ScaleOperationStatus] | None = prop(
        description="Scale operations in flight, by replica type (docs/scaling.md)."
    )
    scale_history: tuple[ScaleHistoryEntry, ...] | None = prop(
        "scaleHistory",
        f"Finished scale operations and rollbacks, oldest first. At most {MAX_SCALE_HISTORY}.",
        max_items=MAX_SCALE_HISTORY,
    )
    restarts: tuple[RestartEntry, ...] | None = prop(
        description=f"Recent restarts, oldest first. At most {MAX_RESTART_RECORDS}.",
        max_items=MAX_RESTART_RECORDS,
    )
    goodput: GoodputCarry | None = prop(
        description="Goodput accounted from conditions the 64-entry history has dropped, so the "
        "job's goodput (aitj_job_goodput_ratio) stays whole when its history does not "
        "(docs/semantics.md section 25). Absent until the history first drops a condition."
    )
    ownership: Ownership | None = prop(
        description="What proves the job's pods and objects its own (docs/security.md): written by "
        "the operator before it creates anything for the job, never changed after."
    )
    pass_failure: PassFailure | None = prop(
        "passFailure",
        "Present while the operator's passes for this job fail and are retried with a backoff: "
        'why, and since when (docs/operator.md, "Refusals and errors"). Removed by the first pass '
        "that goes through.",
    )

    def current_condition(self) -> JobCondition | None:
        """current_condition: the last condition of the history if it is True (None: none is)."""
        last = self.conditions[-1] if self.conditions else None
        return last if last is not None and last.status is ConditionStatus.TRUE else None


def status_schema() -> Schema:
    """status_schema: the CRD's schema of ``status``."""
    return schema(JobStatus, "The job as the operator last observed it. Written by the operator only.")
