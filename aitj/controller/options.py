"""What ``aitj run`` starts the operator with, as one frozen value.

The command line (aitj/cli/run.py) parses and checks its flags into ``OperatorOptions``; the
runner, the Operator and the Settings the planner is given (``aitj.controller.settings``) read
it from there, so an option is named once on its way down instead of passed by hand through
each layer. ``aitj explain`` reads the same planner-facing options (priority classes, node
signals) from the same flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aitj.controller.leader import ElectionConfig
from aitj.controller.metrics_server import DEFAULT_METRICS, MetricsEndpoint
from aitj.core.nodesignals import DEFAULT_SIGNALS, NodeSignals


@dataclass(frozen=True)
class OperatorOptions:
    """OperatorOptions: ``kubeconfig`` (None: $KUBECONFIG, ~/.kube/config or in-cluster);
    ``namespaces`` operated in (empty: all); ``metrics``: where and how /metrics is served
    (``aitj.controller.metrics_server``); ``priority_classes``: job priority -> PriorityClass
    name; ``node_signals``: the node conditions and taints that are node failures;
    ``json_logs``; ``log_level`` (the least level logged); ``liveness``: the URL of kopf's
    health endpoint (None: off); ``recovery_watchdog``: read the jobs' master logs and restart
    the ranks still waiting after a recovery, or out of the ring (aitj.controller.training_watch);
    ``election``: the Lease to hold before acting (None: act at once, the only replica)."""

    kubeconfig: Path | None = None
    namespaces: tuple[str, ...] = ()
    metrics: MetricsEndpoint = DEFAULT_METRICS
    priority_classes: Mapping[str, str] = field(default_factory=dict, hash=False)
    node_signals: NodeSignals = DEFAULT_SIGNALS
    json_logs: bool = False
    log_level: str = "INFO"
    liveness: str | None = None
    election: ElectionConfig | None = None
    recovery_watchdog: bool = True
