"""Training under a steady fault rate (``make steady-real``; issue 46): each training the project
ships (the seed's Horovod elastic, the MPI and torchrun examples) on two real nodes, first
QUIET_SECONDS without faults, then one worker fault every INTERVAL seconds for CHAOS_SECONDS,
whether or not the last one has healed (aitj.tools.trainbench.steady). Each fault is followed
as make bench-real follows one (the log read every second until it heals, forensics written to
the output folder if it does not), and the launcher's log is read every LOG_SECONDS between
them, so the lines of a launcher a whole-job restart deletes are kept. The faults, in turns
shuffled by SEED: a trainer force-deleted, one deleted gracefully, one SIGKILLed from the
machine as the OOM killer does (exit 137, which the bench's rule restarts), and the training's
Python killed inside a Running trainer (its pod stays Running; nothing in the API changes).

The trainings take a slow step every SLOW_EVERY steps, SLOW_SECONDS long on every rank, as a
long checkpoint does. Printed and written to AITJ_STEADY_OUT/<training>/ (table.md,
results.json, faults.json, restarts.json, and the logs): each fault's time to full width, the
goodput (samples per second through the faults over those of the last CHAOS_SECONDS without
them, both read from the training's own step lines, the slow steps' time out of both; and
with it counted in) and the seconds of training each fault cost, the restarts the operator
made without faults, and the launcher's and the operator's logs. Asserted: no restart without
faults (the watchdog and the rules raise no false alarm, slow steps included), and training
back at full width after every fault before the next. The goodput is a figure, not an
assertion.

AITJ_STEADY_QUIET_SECONDS (default 3600: the issue's fault-free hour), AITJ_STEADY_CHAOS_SECONDS (1800),
AITJ_STEADY_INTERVAL (180), AITJ_STEADY_SEED (46), AITJ_STEADY_SLOW_EVERY (steps, default 2000:
about every three minutes of the seed's training) and AITJ_STEADY_SLOW_SECONDS (20). Long: its
short twins in make test are tests/unit/test_trainbench_steady.py (the schedule and the
arithmetic) and the real-node tests of each fault (test_horovod, test_mpi, test_torchrun).
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from aitj.tools.trainbench import report, steady
from aitj.tools.trainbench.recovery import pace, recovery
from tests.clusters import KubeCluster
from tests.e2e.real.node_faults import pin_launcher, spread_trainers
from tests.e2e.real.test_training_recovery import BATCH, COMMAND, alone, restart_on_137
from tests.e2e.real.training import Training, example_job, started
from tests.jobs import Doc, get_job, seed_variant, set_path
from tests.operator_process import OperatorProcess

QUIET_SECONDS = float(os.environ.get("AITJ_STEADY_QUIET_SECONDS", "3600"))
CHAOS_SECONDS = float(os.environ.get("AITJ_STEADY_CHAOS_SECONDS", "1800"))
INTERVAL = float(os.environ.get("AITJ_STEADY_INTERVAL", "180"))
SEED = int(os.environ.get("AITJ_STEADY_SEED", "46"))
SLOW_EVERY = int(os.environ.get("AITJ_STEADY_SLOW_EVERY", "2000"))
SLOW_SECONDS = float(os.environ.get("AITJ_STEADY_SLOW_SECONDS", "20"))
OUT = Path(os.environ.get("AITJ_STEADY_OUT", "steady-real"))
EXAMPLES_SLOW_EVERY = SLOW_EVERY * 2  # train.py steps about twice as fast as the Horovod script
WIDTH = 3
LOG_SECONDS = 30.0  # the launcher's log read this often between faults
HEAL_MARGIN = 10.0  # a fault is followed until it heals, or until this long before the next
FAULTS: dict[str, Callable[[Training], Callable[[], None]]] = {
    "force delete": lambda run: run.delete_trainer(force=True, replicas=WIDTH),
    "graceful delete": lambda run: run.delete_trainer(force=False, replicas=WIDTH),
    "SIGKILL (exit 137)": lambda run: run.kill_trainer(replicas=WIDTH),
    "worker killed in its pod": lambda run: run.kill_worker_process(replicas=WIDTH),
}
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(900 + QUIET_SECONDS + CHAOS_SECONDS)]


def horovod() -> Doc:
    """horovod: the seed's job, its launcher's command with a slow step (and the bench's)."""
    slow = f" --slow-every={SLOW_EVERY} --slow-seconds={SLOW_SECONDS}"
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND + slow]
    )
    return seed_variant(
        "steady", command=command, rule=restart_on_137, pin=pin_launcher, spread=spread_trainers
    )


def example(file: str) -> Callable[[], Doc]:
    """example: manifests/examples/``file``, long, with a slow step and the bench's changes."""

    def made() -> Doc:
        doc = example_job(file, "steady", steps=10_000_000)
        (container,) = doc["spec"]["replicaSpecs"]["launcher"]["template"]["spec"]["containers"]
        slow = f" --slow-every={EXAMPLES_SLOW_EVERY} --slow-seconds={SLOW_SECONDS}"
        container["command"][-1] = re.sub(r"--steps=\d+", lambda m: m[0] + slow, container["command"][-1])
        for change in (restart_on_137, pin_launcher, spread_trainers):
            change(doc)
        return doc

    return made


def restarts(cluster: KubeCluster, namespace: str) -> list[dict[str, Any]]:
    """restarts: the job's restart entries (status.restarts: time, replica, cause, rule)."""
    return list((get_job(cluster, namespace, "steady").get("status") or {}).get("restarts") or [])


def watched(run: Training, t: float) -> None:
    """watched: until ``t``, the launcher's log read every LOG_SECONDS. A whole-job restart
    (the watchdog's ringHung) deletes the launcher and its log with it; what was read of it is
    kept (Training.log), and a run that read it only at its end lost an hour of it (seen)."""
    while (left := t - time.time()) > 0:
        time.sleep(min(left, LOG_SECONDS))
        run.log()


@pytest.mark.parametrize(
    ("training", "job", "slow_every"),
    [
        ("horovod", horovod, SLOW_EVERY),
        ("mpi", example("mpi.yaml"), EXAMPLES_SLOW_EVERY),
        ("torchrun", example("torchrun.yaml"), EXAMPLES_SLOW_EVERY),
    ],
)
def test_training_keeps_its_goodput_under_a_fault_every_few_minutes(
    real_cluster: KubeCluster,
    real_namespace: str,
    real_operator: OperatorProcess,
    training: str,
    job: Callable[[], Doc],
    slow_every: int,
) -> None:
    ns = real_namespace
    alone(real_cluster, ns)
    run = started(real_cluster, ns, job(), width=WIDTH, step=50)
    out = OUT / training
    run.evidence = out  # each stall's forensics, written as taken
    quiet_from, before = time.time(), len(restarts(real_cluster, ns))
    watched(run, quiet_from + QUIET_SECONDS)
    quiet_to = time.time()
    false_alarms = restarts(real_cluster, ns)[before:]

    chaos_from = time.time()
    made: list[tuple[str, float]] = []
    for planned in steady.plan(tuple(FAULTS), CHAOS_SECONDS, INTERVAL, SEED):
        watched(run, chaos_from + planned.at)
        made.append((planned.kind, time.time()))
        # Followed as the bench follows a fault (the log read every second, forensics taken if
        # it does not heal), until it heals or the next is near.
        run.fault(planned.kind, WIDTH, FAULTS[planned.kind](run), heal_seconds=INTERVAL - HEAL_MARGIN)
    watched(run, chaos_from + CHAOS_SECONDS)
    chaos_to = time.time()

    events = run.events()
    recoveries = [recovery(events, f) for f in steady.faults(made, WIDTH, chaos_to)]
    # Against as long a stretch without faults, its last part (the first may hold the start). The
    # slow steps out of both (recovery.stretch): whether a stretch holds one more of them is luck.
    slow = (slow_every, SLOW_SECONDS)
    quiet = (max(quiet_from, quiet_to - (chaos_to - chaos_from)), quiet_to)
    without, through = pace(events, *quiet, BATCH, slow), pace(events, chaos_from, chaos_to, BATCH, slow)
    share = steady.goodput(without, through)
    counted_in = steady.goodput(pace(events, *quiet, BATCH), pace(events, chaos_from, chaos_to, BATCH))
    lost = [steady.lost(events, r.fault, without, BATCH, slow) for r in recoveries]
    facts = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()}, {os.cpu_count()} cores",
        "training": training,
        "schedule": f"{QUIET_SECONDS:.0f} s without faults, then a fault every {INTERVAL:.0f} s for "
        f"{CHAOS_SECONDS:.0f} s (seed {SEED}), a slow step of {SLOW_SECONDS:.0f} s on every rank "
        "every few minutes",
        "goodput": "none" if share is None else f"{share:.1%}",
        "goodput, the slow steps counted in": "none" if counted_in is None else f"{counted_in:.1%}",
        "worst full width": f"{steady.worst(recoveries)} s",
        "restarts without faults": str(len(false_alarms)),
    }
    text = report.write(out, recoveries, without, through, facts, lost)
    (out / "launcher.log").write_text(run.log())
    (out / "operator.log").write_text(real_operator.logs())  # pytest's own folders rotate
    chaos_restarts = restarts(real_cluster, ns)[before + len(false_alarms) :]
    (out / "restarts.json").write_text(
        json.dumps({"without_faults": false_alarms, "through_faults": chaos_restarts}, indent=2) + "\n"
    )
    (out / "faults.json").write_text(json.dumps([asdict(r) for r in recoveries], indent=2) + "\n")
    print(f"{training}: {json.dumps(facts, indent=1)}\n{text}", flush=True)
    assert not false_alarms, f"restarts without any fault: {false_alarms}"
    missed = steady.not_recovered(recoveries)
    assert not missed, f"not back at full width before the next fault: {missed}"
