"""The recovery users feel (``make bench-real``; docs/bench.md, "Training on real nodes"): the
seed's Horovod elastic training on real nodes (its trainers also restarted on exit code 137),
disturbed fault after fault, and timed from its own output (aitj.tools.trainbench): until
training runs again, until it is back at full width, and the steps redone. Figures are printed
and written to AITJ_BENCH_REAL_OUT, never asserted; what is asserted is that training came back
after every fault.

AITJ_BENCH_REAL_ROUNDS (default 1) is how many times each fault is made;
AITJ_BENCH_REAL_GLOO_TIMEOUT (default the seed's 300) is HOROVOD_GLOO_TIMEOUT_SECONDS, how long a
rank waits on a peer before Gloo gives up.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aitj.tools.trainbench import report
from aitj.tools.trainbench.recovery import pace
from tests.clusters import KubeCluster
from tests.e2e.real.training import Training, started
from tests.jobs import Doc, seed_variant, set_path
from tests.operator_process import OperatorProcess

ROUNDS = int(os.environ.get("AITJ_BENCH_REAL_ROUNDS", "1"))
OUT = Path(os.environ.get("AITJ_BENCH_REAL_OUT", "bench-real"))
BATCH = 32  # the script's default --batch-size
GLOO_TIMEOUT = int(os.environ.get("AITJ_BENCH_REAL_GLOO_TIMEOUT", "300"))
# How long a fault may take to heal before it counts as not recovered: beyond Gloo's timeout,
# so a ring that waits on a lost peer until Gloo gives up is measured as such.
HEAL_SECONDS = GLOO_TIMEOUT + 60
# A round: each fault (its name, the width training comes back to, how it is made).
ROUND: tuple[tuple[str, int, Callable[[Training], Callable[[], None]]], ...] = (
    ("force delete", 3, lambda run: run.delete_trainer(force=True, replicas=3)),
    ("graceful delete", 3, lambda run: run.delete_trainer(force=False, replicas=3)),
    ("exit code 137 (rule)", 3, lambda run: run.kill_trainer(replicas=3)),
    ("scale-out 3 to 5", 5, lambda run: run.scale_trainers(5)),
    ("scale-in 5 to 3", 3, lambda run: run.scale_trainers(3)),
)
# pytest's timeout: set-up, then every fault at its worst (each is waited on HEAL_SECONDS at most).
TIMEOUT = 600 + ROUNDS * len(ROUND) * (HEAL_SECONDS + 10)
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(TIMEOUT)]
COMMAND = (
    f"export HOROVOD_GLOO_TIMEOUT_SECONDS={GLOO_TIMEOUT} && horovodrun -np 3 --min-np=1 --max-np=5 --verbose "
    "--log-level=DEBUG --host-discovery-script /etc/edl/discover_hosts.sh python "
    "/horovod/examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py --num-iters=1000000"
)


def restart_on_137(doc: Doc) -> None:
    """The trainers restart on exit code 137 (a SIGKILL: the OOM killer's, or kill_trainer's),
    a rule the seed gives only its launcher (129 and 101); nothing else of the seed changes."""
    rule = {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "Pod"}
    doc["spec"]["replicaSpecs"]["trainer"]["faultTolerantPolicy"].append(rule)


def test_the_seed_training_recovers_from_each_fault_and_the_time_it_takes_is_measured(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "bench"
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND]
    )
    run = started(real_cluster, ns, seed_variant(job, command=command, rule=restart_on_137), width=3, step=50)
    time.sleep(20)
    baseline = pace(run.events(), time.time() - 20, time.time(), BATCH)

    faults_from = time.time()
    for _ in range(ROUNDS):
        for kind, width, make in ROUND:
            run.fault(kind, width, make(run), HEAL_SECONDS)
    under_faults = pace(run.events(), faults_from, time.time(), BATCH)

    facts = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()}, {os.cpu_count()} cores",
        "training": "the seed's Horovod elastic command, 3 trainers (1 to 5), on 2 real nodes",
        "HOROVOD_GLOO_TIMEOUT_SECONDS": str(GLOO_TIMEOUT),
    }
    print(report.write(OUT, run.recoveries, baseline, under_faults, facts), flush=True)
    (OUT / "launcher.log").write_text(run.log())
    missed = [r for r in run.recoveries if r.full_width is None]
    assert not missed, f"training did not come back within {HEAL_SECONDS}s after: {missed}"
