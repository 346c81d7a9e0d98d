"""The recovery users feel (``make bench-real``; docs/bench.md, "Training on real nodes"): the
seed's Horovod elastic training on real nodes, disturbed fault after fault, and timed from its
own output (aitj.tools.trainbench): until training runs again, until it is back at full width,
and the steps redone. Figures are printed and written to AITJ_BENCH_REAL_OUT, never asserted;
what is asserted is that training came back after every fault and finished.

AITJ_BENCH_REAL_ROUNDS (default 1) is how many times each fault is made.
"""

from __future__ import annotations

import os
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aitj.tools.trainbench import report
from aitj.tools.trainbench.recovery import Fault, Recovery, healed, pace, recovery
from aitj.tools.trainbench.timeline import Event, Step, parse
from tests.clusters import KubeCluster
from tests.e2e.real.jobs import pods_by_index
from tests.jobs import create_job, patch_job, seed_variant, set_path
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.long]

ROUNDS = int(os.environ.get("AITJ_BENCH_REAL_ROUNDS", "1"))
OUT = Path(os.environ.get("AITJ_BENCH_REAL_OUT", "bench-real"))
BATCH = 32  # the script's default --batch-size
# How long a fault may take to heal before it counts as not recovered. The seed sets Gloo's
# timeout to 300 s; a ring stuck on a dead peer shows as a fault that never recovered here.
HEAL_SECONDS = 90
COMMAND = (
    "export HOROVOD_GLOO_TIMEOUT_SECONDS=300 && horovodrun -np 3 --min-np=1 --max-np=5 --verbose "
    "--log-level=DEBUG --host-discovery-script /etc/edl/discover_hosts.sh python "
    "/horovod/examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py --num-iters=1000000"
)


class Training:
    """Training: the job's launcher log, read as events, and the faults made on it."""

    def __init__(self, cluster: KubeCluster, namespace: str, job: str) -> None:
        self.cluster, self.namespace, self.job = cluster, namespace, job
        self.launcher = ""
        self.recoveries: list[Recovery] = []

    def events(self) -> list[Event]:
        out = self.cluster.kubectl("logs", "--timestamps", "-n", self.namespace, self.launcher, check=False)
        return parse(out.stdout.splitlines())

    def wait(self, fault: Fault, timeout: float) -> bool:
        """wait: whether training healed from ``fault`` (recovery.healed) within ``timeout``."""
        try:
            wait_for(
                lambda: healed(self.events(), fault),
                timeout,
                f"training back at width {fault.width}",
                interval=1,
            )
        except AssertionError:
            return False
        return True

    def fault(self, kind: str, width: int, act: Callable[[], None]) -> Recovery:
        """fault does ``act``, waits until training is back at ``width`` (or HEAL_SECONDS),
        and keeps what the log says of it."""
        t = time.time()
        act()
        self.wait(Fault(kind, t, width, until=t), timeout=HEAL_SECONDS)
        time.sleep(3)  # a few steps at full width, so the next fault starts from steady training
        got = recovery(self.events(), Fault(kind, t, width, until=time.time()))
        print(
            f"{kind}: running again {got.running_again}, full width {got.full_width}, "
            f"redone {got.steps_redone}, resets {got.resets}",
            flush=True,
        )
        self.recoveries.append(got)
        return got


def _delete(cluster: KubeCluster, namespace: str, job: str, *, force: bool) -> Callable[[], None]:
    def act() -> None:
        victim = random.choice(list(pods_by_index(cluster, namespace, job, "trainer").values()))
        args = ["delete", "pod", "-n", namespace, victim.metadata.name, "--wait=false"]
        cluster.kubectl(*args, *(["--force", "--grace-period=0"] if force else []))

    return act


def _scale(cluster: KubeCluster, namespace: str, job: str, replicas: int) -> Callable[[], None]:
    def act() -> None:
        patch_job(cluster, namespace, job, {"spec": {"replicaSpecs": {"trainer": {"replicas": replicas}}}})

    return act


def test_the_seed_training_recovers_from_each_fault_and_the_time_it_takes_is_measured(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "bench"
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND]
    )
    create_job(real_cluster, ns, seed_variant(job, command=command))
    run = Training(real_cluster, ns, job)
    run.launcher = wait_for(
        lambda: pods_by_index(real_cluster, ns, job, "launcher").get(0), 300, "the launcher Running"
    ).metadata.name
    wait_for(
        lambda: any(isinstance(e, Step) and e.size == 3 and e.step >= 50 for e in run.events()),
        240,
        "training at width 3",
    )
    time.sleep(20)
    baseline = pace(run.events(), time.time() - 20, time.time(), BATCH)

    faults_from = time.time()
    for _ in range(ROUNDS):
        run.fault("force delete", 3, _delete(real_cluster, ns, job, force=True))
        run.fault("graceful delete", 3, _delete(real_cluster, ns, job, force=False))
        run.fault("scale-out 3 to 5", 5, _scale(real_cluster, ns, job, 5))
        run.fault("scale-in 5 to 3", 3, _scale(real_cluster, ns, job, 3))
    under_faults = pace(run.events(), faults_from, time.time(), BATCH)

    facts = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()}, {os.cpu_count()} cores",
        "training": "the seed's Horovod elastic command, 3 trainers (1 to 5), on 2 real nodes",
    }
    print(report.write(OUT, run.recoveries, baseline, under_faults, facts), flush=True)
    (OUT / "launcher.log").write_text(
        real_cluster.kubectl("logs", "--timestamps", "-n", ns, run.launcher, check=False).stdout
    )
    missed = [r for r in run.recoveries if r.full_width is None]
    assert not missed, f"training did not come back within {HEAL_SECONDS}s after: {missed}"
