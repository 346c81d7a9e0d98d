"""The recovery watchdog on real nodes (issue 46): a trainer of the seed's Horovod training
SIGKILLed as the OOM killer does (exit 137, restarted by a rule), under the seed's own
HOROVOD_GLOO_TIMEOUT_SECONDS=300, is back at full width well within a minute, every time. Without
the watchdog, a surviving rank left blocked in a Gloo collective of the old ring stalled the
training until Gloo's 300 s in 2 of 3 such kills (docs/bench.md); the watchdog finds that rank
from the training's own log and restarts its pod, whose host then leaves Horovod's ring.

Each kill's time to full width is printed, with whether the watchdog acted; the bound asserted is
the issue's 60 s. AITJ_WATCHDOG_KILLS sets how many kills (default 3; make bench-real measures
more).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.clusters import KubeCluster
from tests.e2e.real.node_faults import pin_launcher, spread_trainers
from tests.e2e.real.test_training_recovery import COMMAND, restart_on_137
from tests.e2e.real.training import Training, started
from tests.jobs import get_job, seed_variant, set_path
from tests.operator_process import OperatorProcess

KILLS = int(os.environ.get("AITJ_WATCHDOG_KILLS", "3"))
BOUND_SECONDS = 60  # the issue's: back at full width within a minute
# Long: each kill takes a minute or two, and whether a kill stalls at all is Horovod's chance;
# its short twins in make test are the pure tests (tests/unit/test_watchdog.py,
# test_training_watch.py, test_trainlog.py). make real-nodes and make bench-real run it.
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(600 + KILLS * 150)]


def hit(
    cluster: KubeCluster, ns: str, job: str, what: str, fault: Callable[[Training], Callable[[], None]]
) -> tuple[list[float], list[dict[str, Any]]]:
    """hit: the seed's training started as ``job``, then ``fault`` made KILLS times, each 10 s
    after it was back at full width: each fault's time to full width (inf: not back within
    the bound and a minute more), and the job's restarts."""
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND]
    )
    doc = seed_variant(job, command=command, rule=restart_on_137, pin=pin_launcher, spread=spread_trainers)
    run = started(cluster, ns, doc, width=3, step=50)
    times: list[float] = []
    for n in range(KILLS):
        time.sleep(10)
        got = run.fault(f"{what} {n + 1}", 3, fault(run), heal_seconds=BOUND_SECONDS + 60)
        times.append(got.full_width if got.full_width is not None else float("inf"))
    restarts = (get_job(cluster, ns, job).get("status") or {}).get("restarts") or []
    return times, restarts


def test_a_sigkilled_horovod_worker_is_back_at_full_width_within_a_minute(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    times, restarts = hit(
        real_cluster, real_namespace, "watchdog", "SIGKILL", lambda run: run.kill_trainer(replicas=3)
    )
    by_watchdog = [r for r in restarts if r.get("rule") == "the recovery watchdog"]
    print(
        f"SIGKILLed trainer back at full width after {', '.join(f'{t:.1f}' for t in times)} s "
        f"(Gloo's timeout 300 s); the watchdog restarted {len(by_watchdog)} pod(s): "
        f"{[(r.get('pod'), r.get('message', '')[:80]) for r in by_watchdog]}"
    )
    assert all(t <= BOUND_SECONDS for t in times), times


def test_a_worker_killed_inside_its_running_pod_is_back_at_full_width_within_a_minute(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    """The seed's trainers run sshd as their first process: a worker's Python killed (the OOM
    killer's choice) leaves its pod Running. horovodrun's driver records the worker failed and
    blacklists the host for good, so Horovod would train on at 2 of 3; the watchdog reads the
    driver's record, restarts the pod (a new pod, a new host), and the width comes back."""
    times, restarts = hit(
        real_cluster,
        real_namespace,
        "inpod",
        "worker killed in its pod",
        lambda run: run.kill_worker_process(replicas=3),
    )
    left = [r for r in restarts if r.get("cause") == "leftRing"]
    print(
        f"worker killed in its Running pod: back at full width after "
        f"{', '.join(f'{t:.1f}' for t in times)} s; {len(left)} pod(s) restarted as out of the ring"
    )
    assert len(left) >= KILLS, restarts
    assert all(t <= BOUND_SECONDS for t in times), times
