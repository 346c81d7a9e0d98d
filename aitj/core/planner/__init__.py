"""The planner: ``plan(job, pods, nodes, now) -> Plan``, the decision core of the operator.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it) and clock-free.
It decides; the executor (aitj/controller/executor.py) only carries the Plan out (see ``types``).

- ``types``: the Plan and its parts, and the order the executor follows.
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
    Event,
    HostEntry,
    Outcome,
    Plan,
    PodCreate,
    PodDelete,
    ReplicasPatch,
    ResourceAction,
    RestartRecord,
)

__all__ = [
    "Event",
    "HostEntry",
    "Outcome",
    "Plan",
    "PodCreate",
    "PodDelete",
    "ReplicasPatch",
    "ResourceAction",
    "RestartRecord",
    "plan",
]
