"""The planner: ``plan(job, pods, nodes, now) -> Plan``, the decision core of the operator.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it) and clock-free.
It decides and renders; the executor (aitj/controller/executor/) only sends the Plan.

- ``types``: the Plan and its parts, and the planner's input data (Settings, Owned, SshKeys).
- ``lifecycle``: the Plans that are not ``plan``'s: a job being deleted, an invalid spec, a
  terminating namespace, the pods of a job that is gone; ``triage`` picks.
- ``survey``: slots per replica index, failures, restart decisions, launcher gating (issue 5).
- ``ledger`` (and ``rulelog``): the restart ledger, which keeps restart counts exact across
  operator crashes; ``stamps``: the ledger the pods tell; ``rule_budgets``: what the recovery
  rules read from it.
- ``outcome``: completePolicy / failPolicy / timeLimit (issue 4).
- ``status``: phase, condition history, status fields.
- ``core``: ``plan`` itself: assess, then for a job that goes on combine the features' parts
  (``part``: what a part is given and gives back; ``context``: the facts the parts share),
  and cleanup on finish.
- The features, each with its ``part``: ``status_base``, ``creates``, ``restarts``, ``retire``,
  ``scaling`` (replicas edits as scale operations, issue 6; its part in ``scaling.part``),
  ``rule_status``, ``degraded``, ``hostfiles``, ``resources`` (the job's Service, ssh Secret,
  discovery ConfigMap, Volcano PodGroup), ``disruption_budgets``, ``gang``, ``timeouts``.

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
