"""The closed label values the operator defines itself (the others are the core's own enums:
``FailureKind``, ``RestartScope``, ``Phase``, ``DeleteReason``). The values are what dashboards
and alerts match: do not change them."""

from __future__ import annotations

import enum


class ReplicaState(enum.StrEnum):
    """ReplicaState: the ``state`` label of ``aitj_job_replicas``."""

    DESIRED = "desired"  # spec.replicaSpecs.<name>.replicas
    RUNNING = "running"  # indexes whose newest pod is Running (and not being deleted)
    PENDING = "pending"  # indexes whose newest pod exists, has not finished and is not Running
    VACANT = "vacant"  # desired indexes with no pod at all


class ScaleDirection(enum.StrEnum):
    """ScaleDirection: the ``direction`` label of ``aitj_scaling_operations_total``."""

    OUT = "out"
    IN = "in"


class ScaleResult(enum.StrEnum):
    """ScaleResult: the ``result`` label of ``aitj_scaling_operations_total``, from the reason of
    the operation's ``status.scaleHistory`` entry."""

    SUCCEEDED = "succeeded"  # ScaleSucceeded
    FAILED = "failed"  # ScaleFailed: a pod of the scale-out failed for good; rolled back
    ROLLED_BACK = "rolledBack"  # ScaleTimeout: not all Running within scaleTimeout; rolled back
    CANCELLED = "cancelled"  # ScaleCancelled: an edit of replicas replaced it in flight
