"""Goodput on real nodes (issue 28's acceptance): the seed's Horovod elastic training through an
``aitj chaos`` schedule, its goodput as the operator exports it (aitj_job_training_seconds_total
and aitj_job_badput_seconds_total, scraped before and after: the same interval) against the
goodput its own step log shows (aitj.tools.trainbench.goodput: new progress over wall time,
pauses and redone steps lost). Both are printed with what each lost; the two must agree within
TOLERANCE (relative).

What the operator cannot see is printed beside it: the steps redone, and the training's pauses
while the operator already counts it Running (a world re-forming around a new worker). A chaos
schedule that makes Horovod stall on a dead peer (Gloo's timeout, docs/bench.md) is a hang the
operator sees only with hang detection: the test says so rather than passing.

The job opts in to the progress signal (spec.progress on the launcher, Horovod's step lines:
``rank r/n: step k/m``), so the operator counts a recovery until the training's first step line
after it runs again (docs/semantics.md section 25), not only until its pods run; a stall of
STALL seconds is a hang its rule restarts.

AITJ_GOODPUT_DURATION (default 240 s) and AITJ_GOODPUT_INTERVAL (default 40 s) shape the
schedule.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from aitj.core.api import JobStatus
from aitj.core.planner.goodput import account
from aitj.tools.trainbench.goodput import training_goodput
from tests.clusters import KubeCluster
from tests.e2e.real.test_chaos_real import KINDS, PROGRESS_BOUND, chaos_ready
from tests.e2e.real.test_training_recovery import COMMAND
from tests.e2e.real.training import started
from tests.jobs import seed_variant, set_path
from tests.operator_process import OperatorProcess

DURATION = float(os.environ.get("AITJ_GOODPUT_DURATION", "240"))
INTERVAL = float(os.environ.get("AITJ_GOODPUT_INTERVAL", "40"))
TOLERANCE = 0.05
NAME = "goodput"
SETTLE = 15  # seconds after the schedule for the last fault to heal
STALL = 120  # spec.progress.stallSeconds: read every 6 s, beyond PROGRESS_BOUND's pauses
STEP_PATTERN = r"step \d+/\d+"  # a rank's step line; its "resuming at step k" is not one

# Long (make real-nodes): a 240 s chaos schedule on real training, about 6 minutes. Its short twins
# in make test: test_prometheus (the goodput families and panels on a real Prometheus),
# test_cli_jobs (aitj describe's goodput line) and tests/unit/test_goodput*.py.
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(900 + 2 * DURATION)]


def exported(operator: OperatorProcess, namespace: str) -> tuple[float, dict[str, float], float | None]:
    """exported: the job's training seconds, badput seconds by cause and goodput ratio, as
    /metrics shows them now."""
    found: dict[tuple[str, str], float] = {}
    for family, labels, value in re.findall(r"^(aitj_job_\w+)\{([^}]*)\} (\S+)$", operator.metrics(), re.M):
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if pairs.get("namespace") == namespace and pairs.get("job_name") == NAME:
            found[(family, pairs.get("cause", ""))] = float(value)
    badput = {
        cause: found.get(("aitj_job_badput_seconds_total", cause), 0.0)
        for cause in ("fault", "hang", "recovery", "scaling", "starting")
    }
    ratio = found.get(("aitj_job_goodput_ratio", ""))
    return found.get(("aitj_job_training_seconds_total", ""), 0.0), badput, ratio


def test_the_exported_goodput_matches_the_training_s_own_through_a_chaos_schedule(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess, tmp_path: Path
) -> None:
    ns = real_namespace
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND]
    )
    run = started(
        real_cluster,
        ns,
        seed_variant(NAME, command=command, chaos=chaos_ready, progress=watched),
        width=3,
        step=20,
    )
    t0, (train0, bad0, _) = time.time(), exported(real_operator, ns)
    kinds = [arg for kind in KINDS for arg in ("--fault", kind)]
    args = [
        *("--kubeconfig", str(real_cluster.kubeconfig), "-n", ns, "--seed", "28"),
        *("--duration", str(DURATION), "--interval", str(INTERVAL), *kinds, "--replica", "trainer"),
        *("--progress", "--progress-bound", str(PROGRESS_BOUND), "--report", str(tmp_path / "chaos.json")),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "aitj", "chaos", *args], capture_output=True, text=True, check=False
    )
    print(done.stdout[-6000:], done.stderr[-3000:], sep="\n", flush=True)
    time.sleep(SETTLE)
    t1, (train1, bad1, ratio) = time.time(), exported(real_operator, ns)

    training = train1 - train0
    lost = {c: bad1[c] - bad0[c] for c in bad1}
    operator = training / (training + sum(lost.values()))
    own = training_goodput(run.events(), t0, t1)
    body = real_cluster.kubectl("get", "aitj", NAME, "-n", ns, "-o", "json").stdout
    status = JobStatus.from_json(json.loads(body)["status"])
    print(
        f"interval {t1 - t0:.1f}s, chaos exit {done.returncode}\n"
        f"operator (exported counters): goodput {operator:.4f}: training {training:.1f}s, lost "
        + ", ".join(f"{c} {s:.1f}s" for c, s in lost.items())
        + f" (over the job's life: {ratio})\n"
        f"operator (its status, same interval): {status_goodput(status, t0, t1)}\n"
        f"training (its own step log): goodput {own.ratio:.4f}: progress {own.progress:.1f}s of "
        f"{own.seconds:.1f}s, {own.new} new steps, {own.redone} redone\n"
        f"difference {operator - own.ratio:+.4f} ({(operator - own.ratio) / own.ratio:+.2%} relative)",
        flush=True,
    )
    assert sum(lost.values()) > 0, "the schedule cost the operator's account nothing: no fault was made"
    assert abs(operator - own.ratio) <= TOLERANCE * own.ratio, (operator, own)


def watched(doc: dict[str, Any]) -> None:
    """watched: the job's launcher log is its progress signal, and a hang restarts the job."""
    doc["spec"]["progress"] = {"replica": "launcher", "stallSeconds": STALL, "stepPattern": STEP_PATTERN}
    launcher = doc["spec"]["replicaSpecs"]["launcher"]
    launcher.setdefault("faultTolerantPolicy", []).append(
        {"exceptionalEvent": "hang", "restartPolicy": "OnNodeFail", "restartScope": "All"}
    )


def status_goodput(status: JobStatus, t0: float, t1: float) -> str:
    """status_goodput: the operator's account (the one the metrics export, read from the job's
    status at the end), over t0 to t1, with what it lost by cause."""
    a, b = (account(status, datetime.fromtimestamp(t, UTC)) for t in (t0, t1))
    training = b.training - a.training
    lost = {c.value: b.badput[c] - a.badput[c] for c in b.badput}
    total = training + sum(lost.values())
    shown = ", ".join(f"{c} {s:.1f}s" for c, s in lost.items() if s)
    return f"{training / total if total else 0.0:.4f}: training {training:.1f}s, lost {shown or 'nothing'}"
