"""The planner: ``plan(job, pods, nodes, now) -> Plan``, the decision core of the operator.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it) and clock-free.
It decides and renders; the executor (aitj/controller/executor/) only sends the Plan.

- ``types``: the Plan and its parts, and the planner's input data (Settings, Owned, SshKeys).
- ``lifecycle``: the Plans that are not ``plan``'s: a job being deleted, an invalid spec, a
  terminating namespace, the pods of a job that is gone; ``triage`` picks.
- ``resources``: the job's Service, ssh Secret and discovery ConfigMap.
- ``survey``: slots per replica index, failures, restart decisions, launcher gating (issue 5).
- ``ledger``: the restart ledger, which keeps restart counts exact across operator crashes.
- ``outcome``: completePolicy / failPolicy / timeLimit (issue 4).
- ``status``: phase, condition history, status fields.
- ``scaling``: replicas edits as scale operations: host list order, grace, rollback (issue 6).
- ``core``: ``plan`` itself, and cleanup on finish.

What each decision means for users: docs/semantics.md.
"""

from aitj.core.planner.core import plan
from aitj.core.planner.types import (
    DeleteReason,
    Event,
    HostEntry,
    Manifest,
    ObjectKind,
    ObjectRef,
    Outcome,
    Owned,
    Plan,
    PodCreate,
    PodDelete,
    PodNudge,
    ReplicasPatch,
    RestartRecord,
    Settings,
    SshKeys,
)

__all__ = [
    "DeleteReason",
    "Event",
    "HostEntry",
    "Manifest",
    "ObjectKind",
    "ObjectRef",
    "Outcome",
    "Owned",
    "Plan",
    "PodCreate",
    "PodDelete",
    "PodNudge",
    "ReplicasPatch",
    "RestartRecord",
    "Settings",
    "SshKeys",
    "plan",
]
