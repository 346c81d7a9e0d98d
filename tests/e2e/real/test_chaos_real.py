"""``aitj chaos --progress`` against the seed's Horovod elastic training on real nodes: pod
faults and replicas edits on a schedule, the operator's invariants checked from the command's
own watch, and the training's from its launcher's log (it steps past where it was after every
fault, and never starts again from step 0). The command is run as a user runs it, and its exit
status and report are what is asserted.

In ``make test`` it runs a short schedule (AITJ_CHAOS_REAL_DURATION, default 45 s: three
faults); ``make chaos-real`` runs it for ten minutes and keeps the report and the timeline
picture (samples per second with each fault marked) in AITJ_CHAOS_REAL_OUT. Either keeps the
launcher's and the operator's logs, the job and its events there too (``keep``; in make test's
run, pytest's temporary directory).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.clusters import KubeCluster
from tests.e2e.real.test_training_recovery import COMMAND
from tests.e2e.real.training import Training, run_chaos, started
from tests.jobs import Doc, seed_variant, set_path
from tests.operator_process import OperatorProcess

DURATION = float(os.environ.get("AITJ_CHAOS_REAL_DURATION", "45"))
INTERVAL = float(os.environ.get("AITJ_CHAOS_REAL_INTERVAL", "15"))
OUT = os.environ.get("AITJ_CHAOS_REAL_OUT")
# The trainers' scaleInGracePeriod: how long a trainer a scale-down lets go stays after leaving
# the host list (chaos_ready). make chaos-real keeps the default, 60 s.
SCALE_IN_GRACE = int(os.environ.get("AITJ_CHAOS_REAL_SCALE_IN_GRACE", "10"))
# The faults a real node allows from outside it (exit codes and node faults are kwok's here),
# on trainers only: the seed's launcher restarts on exit codes 129 and 101 and on a NotReady
# node, so deleting it ends the job, as its rules say.
KINDS = ("force-delete", "graceful-delete", "evict", "scale-up", "scale-down")


def chaos_ready(doc: Doc) -> None:
    """The seed's trainers, made for a chaos schedule:

    - they restart when evicted too: the seed restarts them for a NotReady node and a delete
      only, so an evicted trainer's index would stay empty (the job short) for good;
    - at least 2: Horovod elastic ends the training when every worker has failed at once, which
      a scale-down to 1 and then a delete of that one would do;
    - 30 s of grace (the launcher's), not the seed's 300 s: the trainer's shell ignores SIGTERM,
      so a trainer scaled away would keep the run's settling waiting the whole grace period;
    - in make test, a scale-in grace of SCALE_IN_GRACE (10 s), not the default 60 s: the
      launcher reads the host list within about a second and Horovod re-forms without the
      trainers let go in about 3.3 s (docs/bench.md), so they still leave cleanly, but 60 s of
      them held the short run's settling for a minute after its scale-down;
    - a request of a quarter of a CPU: the seed's trainers request none (only cGPU), so they
      are BestEffort, with 2 CPU shares against the node's 2,048, and on a loaded machine a
      replacement once took 37.5 s to start (docs/chaos.md): the run measures the operator and
      the training, not how long a starved process waits.
    """
    trainer = doc["spec"]["replicaSpecs"]["trainer"]
    (rule,) = trainer["faultTolerantPolicy"]
    rule["exceptionalEvent"] += ",PodEvicted"
    trainer["minReplicas"] = 2
    trainer["scaleInGracePeriod"] = SCALE_IN_GRACE
    trainer["template"]["spec"]["terminationGracePeriodSeconds"] = 30
    (container,) = trainer["template"]["spec"]["containers"]
    container["resources"].setdefault("requests", {})["cpu"] = "250m"


# A fault must be followed by new steps within this long: a ring that waits on a lost peer
# until Gloo gives up (the seed's 300 s) breaks it; re-forming takes seconds.
PROGRESS_BOUND = 60


def keep(cluster: KubeCluster, ns: str, run: Training, operator: OperatorProcess, out: Path) -> None:
    """keep writes what explains a run into ``out``, passed or failed, as ``*.log`` files (which
    git ignores): the launcher's log (the training's steps and Horovod's re-formings, the
    workers' output among them), the operator's log so far (pytest keeps its temporary
    directories for three runs only), the job as the API holds it (YAML: status, conditions,
    host list) and the namespace's events. A failed "training progresses" is explained by
    these, not by the report alone."""
    (out / "launcher.log").write_text(run.log())
    (out / "operator.log").write_text(operator.logs())
    for name, args in (
        ("job.log", ("get", "aitrainingjobs", "-n", ns, "-o", "yaml")),
        ("events.log", ("get", "events", "-n", ns, "--sort-by=.lastTimestamp", "-o", "wide")),
    ):
        (out / name).write_text(cluster.kubectl(*args, check=False).stdout)


pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900 + 2 * DURATION)]


def test_the_seed_training_keeps_progressing_through_a_chaos_schedule(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess, tmp_path: Path
) -> None:
    ns = real_namespace
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND]
    )
    run = started(
        real_cluster,
        ns,
        seed_variant("chaos", command=command, chaos=chaos_ready),
        width=3,
        step=20,
    )
    out = Path(OUT) if OUT else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    kinds = [arg for kind in KINDS for arg in ("--fault", kind)]
    args = [
        *("--kubeconfig", str(real_cluster.kubeconfig), "-n", ns, "--seed", "25"),
        *("--duration", str(DURATION), "--interval", str(INTERVAL), *kinds, "--replica", "trainer"),
        *("--progress", "--progress-bound", str(PROGRESS_BOUND)),
        *("--timeline", str(out / "timeline.png")),
    ]
    try:
        report = run_chaos(args, out / "chaos.json")
    finally:
        keep(real_cluster, ns, run, real_operator, out)
    assert report["faults"] >= min(len(KINDS), int(DURATION // INTERVAL)) - 1, report["faults_by_kind"]
    (training,) = report["training"].values()
    assert training["stepped_past"] == training["faults"] == report["faults"], training
    assert {c["name"] for c in report["invariants"]} >= {"training progresses", "never from step 0 again"}
