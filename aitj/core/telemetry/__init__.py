"""What the operator measures, computed purely: the figures behind its metrics.

Pure and clock-free (callers pass the times). The controller's metrics module
(``aitj.controller.metrics``) declares the families and moves them; the arithmetic is here,
table-tested:

- ``labels``: the closed label values that are the operator's own (replica states, scaling
  directions and results);
- ``gauges``: a job's phase, its replicas by state and its restart budgets, from the job's
  body and its pods (computed at scrape time);
- ``recovery_time``: a restart followed from the pass that decided it to its replacements Running
  (recovery time, fault detection, GPU time lost), and to the end of the pass that listed them
  for discovery (the job's own recovery figure);
- ``scaling``: the scale operations a status write finished.
"""

from aitj.core.telemetry import recovery_time
from aitj.core.telemetry.gauges import JobGauges, ReplicaCount, desired_replicas, job_gauges, own_pods
from aitj.core.telemetry.labels import ReplicaState, ScaleDirection, ScaleResult
from aitj.core.telemetry.recovery_time import Awaited, Recovery
from aitj.core.telemetry.scaling import Scaled, finished_scalings

__all__ = [
    "Awaited",
    "JobGauges",
    "Recovery",
    "ReplicaCount",
    "ReplicaState",
    "ScaleDirection",
    "ScaleResult",
    "Scaled",
    "desired_replicas",
    "finished_scalings",
    "job_gauges",
    "own_pods",
    "recovery_time",
]
