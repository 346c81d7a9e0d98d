"""Running the operator in this process: ``aitj run``."""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

import kopf

from aitj.controller import clientmetrics, gcpauses, metrics_server
from aitj.controller.kubeclient import OPERATOR_AGENT, api_client
from aitj.controller.logs import configure, log
from aitj.controller.options import OperatorOptions


def run(
    options: OperatorOptions,
    *,
    stop_flag: threading.Event | None = None,
    ready_flag: threading.Event | None = None,
) -> None:
    """run blocks, operating as ``options`` say until stopped: on their namespaces (all when
    none); with ``liveness`` kopf serves its health endpoint there; with ``election`` it acts
    only while it holds that Lease (``aitj.controller.leader``)."""
    configure(json=options.json_logs, level=options.log_level)
    # Full collections look at what came since the last one, not at every object the operator
    # holds: a recovery that meets one waits less (aitj.controller.gcpauses).
    gcpauses.install()
    if threading.current_thread() is threading.main_thread():  # signals go to the main thread only
        signal.signal(signal.SIGUSR2, log_thread_names)
    from aitj.controller import handlers  # registers the handlers
    from aitj.controller.operator import Operator

    api = clientmetrics.instrument(api_client(options.kubeconfig, user_agent=OPERATOR_AGENT))  # rest_client_*
    metrics_server.serve(options.metrics, api)
    operator = Operator(options, api)
    asyncio.run(_main(options, kopf.Memo({handlers.OPERATOR: operator}), stop_flag, ready_flag))


async def _main(
    options: OperatorOptions, memo: kopf.Memo, stop: threading.Event | None, ready: threading.Event | None
) -> None:
    await kopf.operator(
        # kopf's health endpoint (the Deployment's liveness probe): it answers while the
        # operator's event loop runs.
        liveness_endpoint=options.liveness,
        standalone=True,
        clusterwide=not options.namespaces,
        namespaces=list(options.namespaces),
        memo=memo,
        stop_flag=stop,
        ready_flag=ready,
    )


def log_thread_names(_signum: int = 0, _frame: Any = None) -> None:
    """log_thread_names (SIGUSR2): one log line naming each thread by its kernel id, the one
    /proc/<pid>/task lists, so the operator's CPU can be read per thread without py-spy
    (hack/recoverycost.py): Python 3.11 gives the kernel no thread names."""
    log.info("thread names", threads={str(t.native_id): t.name for t in threading.enumerate()})
