"""Running the operator in this process: ``aitj run``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

import kopf

from aitj.controller import metrics
from aitj.controller.kubeclient import api_client
from aitj.controller.leader import ElectionConfig
from aitj.controller.logs import configure
from aitj.core.nodesignals import DEFAULT_SIGNALS, NodeSignals
from aitj.core.planner.types import Settings


def run(
    *,
    kubeconfig: Path | None,
    namespaces: Sequence[str],
    metrics_port: int,
    metrics_address: str = "127.0.0.1",
    priority_classes: Mapping[str, str],
    node_signals: NodeSignals = DEFAULT_SIGNALS,
    json_logs: bool = False,
    liveness: str | None = None,
    stop_flag: threading.Event | None = None,
    ready_flag: threading.Event | None = None,
    election: ElectionConfig | None = None,
) -> None:
    """run blocks, operating on the given namespaces (all when empty) until stopped; with
    ``liveness`` (``http://0.0.0.0:8081/healthz``) kopf serves its health endpoint there; with
    ``election`` it acts only while it holds that Lease (``aitj.controller.leader``);
    ``node_signals``: the node conditions and taints that count as node failures."""
    configure(json=json_logs)
    import aitj.controller.handlers  # noqa: F401  (registers the handlers)

    metrics.serve(metrics_port, metrics_address)
    memo = SimpleNamespace(
        api_client=api_client(kubeconfig),
        kubeconfig=kubeconfig,
        namespaces=list(namespaces),
        settings=Settings(dict(priority_classes), node_signals),
        election=election,
    )
    asyncio.run(_main(namespaces, memo, stop_flag, ready_flag, liveness))


async def _main(
    namespaces: Sequence[str],
    memo: object,
    stop: threading.Event | None,
    ready: threading.Event | None,
    liveness: str | None = None,
) -> None:
    await kopf.operator(
        # kopf's health endpoint (the Deployment's liveness probe): it answers while the
        # operator's event loop runs.
        liveness_endpoint=liveness,
        standalone=True,
        clusterwide=not namespaces,
        namespaces=list(namespaces),
        memo=kopf.Memo(vars(memo)),
        stop_flag=stop,
        ready_flag=ready,
    )
