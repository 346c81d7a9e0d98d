"""Hang detection on real nodes (issue 28; docs/semantics.md, "24. Hangs"): a SIGSTOPped worker
is detected as a hang and the rule's restart follows.

The MPI example (manifests/examples/mpi.yaml) trains, its launcher printing a step line every
10 steps (about twice a second). Plain MPI has no timeout: a rank that stops holds every other
rank in its allreduce for ever, the pods all Running: what a NCCL stall looks like to a
controller. The job opts in with ``spec.progress`` (the launcher watched, step lines only,
STALL seconds), and its launcher restarts a hang with scope All. One trainer's training process
is stopped with ``kill -STOP`` through pods/exec. The test asserts that the restart is a hang
of the launcher (status.restarts and the Event say "hang: no line matching stepPattern for
N s"), that every pod is replaced, and that training goes on; it prints how long after the last
step line the hang was seen against STALL (the acceptance: within STALL + 10 %), never asserts
it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from aitj.controller.kubeclient import raw_get
from aitj.controller.progress import PATTERN_LINES
from aitj.core.planner import hang
from aitj.core.stepmatch import compile_step_pattern
from aitj.core.wire import parse_time
from aitj.tools.trainbench.timeline import Step
from tests.clusters import KubeCluster
from tests.e2e.real.jobs import pods_by_index
from tests.e2e.real.training import Training, example_job, run_chaos, started
from tests.jobs import events_for, get_job
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

# 15 s, not 30: make test's time (the detection was measured at +0.7 and +3.5 % over 30 s on
# 2026-11-26; its read interval, stallSeconds/20, scales with it). MPI prints a step line about
# twice a second, so 15 s of silence is still a hang, never a slow step.
STALL = 15
STEP_PATTERN = r"step \d+/\d+"
# Stops every process of the container whose command line names train.py (its rank), through
# /proc: the training image has no pkill. "[t]rain" keeps the shell's own command line, which
# holds the pattern, from matching it.
STOP = (
    "for p in /proc/[0-9]*; do "
    'if tr "\\0" " " < $p/cmdline 2>/dev/null | grep -q "aitj/[t]rain.py"; then '
    "kill -STOP ${p#/proc/}; fi; done"
)


def hang_entries(cluster: KubeCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    restarts = (get_job(cluster, namespace, job).get("status") or {}).get("restarts") or []
    return [r for r in restarts if r.get("cause") == "hang"]


def last_step_at(run: Training) -> float:
    """last_step_at: the kubelet's timestamp (epoch seconds) of the launcher's newest step line."""
    steps = [e for e in run.events() if isinstance(e, Step)]
    assert steps, run.log()[-2000:]
    return steps[-1].t


def cost_of_a_read(cluster: KubeCluster, namespace: str, pod: str, pattern: bool, reads: int = 50) -> None:
    """cost_of_a_read: the operator's read of a watched pod's log (aitj.controller.progress,
    the same query through the same client call) made ``reads`` times against the real kubelet:
    its wall time and the bytes it brings back, printed with what they come to at 1,000 jobs."""
    query = [
        ("tailLines", str(PATTERN_LINES if pattern else 1)),
        ("timestamps", "true"),
        ("limitBytes", "65536"),
    ]
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
    took, size = [], []
    cpu = time.thread_time()
    for _ in range(reads):
        t = time.perf_counter()
        status, data = raw_get(cluster.api, path, query=query, accept="*/*")
        wanted = compile_step_pattern(STEP_PATTERN) if pattern else None
        assert status == 200 and hang.newest_line(data.decode(), wanted) is not None, data[-500:]
        took.append(time.perf_counter() - t)
        size.append(len(data))
    cpu = (time.thread_time() - cpu) / reads
    took.sort()
    mean = sum(took) / reads
    print(
        f"one log read ({'tailLines 100, stepPattern' if pattern else 'tailLines 1'}): "
        f"{1000 * mean:.1f} ms mean, {1000 * took[reads // 2]:.1f} ms median, {1000 * took[-1]:.1f} ms max "
        f"wall, {1000 * cpu:.2f} ms of the reader's CPU, {sum(size) // reads} bytes back; at 1,000 jobs: "
        + ", ".join(
            f"stallSeconds {stall}: {1000 / hang.poll_seconds(stall):.0f} reads/s, "
            f"{1000 / hang.poll_seconds(stall) * cpu:.2f} reader CPU-s/s, "
            f"{1000 / hang.poll_seconds(stall) * sum(size) / reads / 1024:.0f} KiB/s"
            for stall in (60, 600)
        ),
        flush=True,
    )


def test_a_sigstopped_worker_is_a_hang_and_the_rule_restarts_the_job(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    doc = example_job("mpi.yaml", "hang", steps=100_000)
    doc["spec"]["progress"] = {"replica": "launcher", "stallSeconds": STALL, "stepPattern": STEP_PATTERN}
    doc["spec"]["replicaSpecs"]["launcher"]["faultTolerantPolicy"].append(
        {"exceptionalEvent": "hang", "restartPolicy": "OnNodeFail", "restartScope": "All"}
    )
    run = started(real_cluster, real_namespace, doc, width=3, step=20)
    for pattern in (False, True):
        cost_of_a_read(real_cluster, real_namespace, run.launcher, pattern)
    old = {p.metadata.name for p in pods_by_index(real_cluster, real_namespace, "hang", "trainer").values()}
    old.add(run.launcher)
    # Training for a while first: the hang clock must not fire on a healthy job.
    time.sleep(STALL + 5)
    assert not hang_entries(real_cluster, real_namespace, "hang"), "a hang on a job that trains"

    victim = pods_by_index(real_cluster, real_namespace, "hang", "trainer")[1].metadata.name
    stopped_at = time.time()
    real_cluster.kubectl("exec", "-n", real_namespace, victim, "--", "/bin/bash", "-c", STOP)
    entries = wait_for(
        lambda: hang_entries(real_cluster, real_namespace, "hang"),
        STALL * 3,
        "the hang restart",
        interval=0.2,
    )
    seen_at = time.time()
    last_line = last_step_at(run)
    entry = entries[0]
    print(f"hang restart: {entry}", flush=True)
    assert (entry["replica"], entry["index"], entry["scope"]) == ("launcher", 0, "All")
    assert entry["rule"] == "exceptionalEvent hang"
    assert entry["message"].startswith("hang: no line matching stepPattern for ")
    events = [
        e.message
        for e in events_for(real_cluster, real_namespace, "hang")
        if "hang: no line" in (e.message or "")
    ]
    assert events, "no Event says hang"

    decided = parse_time(entry["time"])
    assert decided is not None
    detection = seen_at - last_line
    decided_after = decided.timestamp() - last_line  # whole seconds: the status' resolution
    over = 100 * (detection - STALL) / STALL
    print(
        f"hang detection: stallSeconds {STALL}; the last step line {last_line - stopped_at:+.1f}s from the "
        f"SIGSTOP; the restart decided {decided_after:.0f}s (status, whole seconds) and seen by the test "
        f"{detection:.1f}s after that line: {over:+.1f} % over stallSeconds "
        f"({'within' if over <= 10 else 'NOT within'} the +10 % of the acceptance)",
        flush=True,
    )
    assert detection >= STALL - 1, "a hang before stallSeconds of silence"

    # The rule's restart: every pod replaced (scope All), and training goes on in the new launcher.
    def replaced() -> Any:
        launchers = pods_by_index(real_cluster, real_namespace, "hang", "launcher")
        trainers = pods_by_index(real_cluster, real_namespace, "hang", "trainer")
        fresh = [p for p in [*launchers.values(), *trainers.values()] if p.metadata.name not in old]
        return launchers.get(0) if len(fresh) == 4 else None

    launcher = wait_for(replaced, 300, "every pod replaced and Running", interval=1)
    again = Training(real_cluster, real_namespace, "hang", launcher.metadata.name)
    wait_for(
        lambda: any(isinstance(e, Step) and e.size == 3 for e in again.events()),
        240,
        "training again at width 3",
    )
    back = min(e.t for e in again.events() if isinstance(e, Step))
    print(f"training again {back - seen_at:.1f}s after the hang restart was seen", flush=True)
    assert len(hang_entries(real_cluster, real_namespace, "hang")) == 1, "more than one hang restart"


# Long (make real-nodes, make chaos-real's ground): about 3 minutes; the SIGSTOP test above is its
# short twin in make test (the same hang verdict and restart), with tests/unit/test_hang_chaos.py.
@pytest.mark.long
def test_the_chaos_commands_hang_fault_is_recovered_by_the_rule(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess, tmp_path: Path
) -> None:
    """``aitj chaos --fault hang`` (issue 28 item 5) against the same job: each fault stops a
    trainer through pods/exec, and the invariants (one hang restart of the watched launcher per
    fault, scope All, and nothing else; one live pod per index) hold."""
    doc = example_job("mpi.yaml", "chaos-hang", steps=100_000)
    doc["spec"]["progress"] = {"replica": "launcher", "stallSeconds": STALL, "stepPattern": STEP_PATTERN}
    doc["spec"]["replicaSpecs"]["launcher"]["faultTolerantPolicy"].append(
        {"exceptionalEvent": "hang", "restartPolicy": "OnNodeFail", "restartScope": "All"}
    )
    started(real_cluster, real_namespace, doc, width=3, step=20)
    args = [
        *("--kubeconfig", str(real_cluster.kubeconfig), "-n", real_namespace, "--seed", "28"),
        *("--duration", "100", "--interval", "45", "--max-faults", "2", "--fault", "hang"),
        *("--replica", "trainer", "--recovery-bound", "150"),
    ]
    report = run_chaos(args, tmp_path / "chaos.json")
    assert report["faults"] >= 1, report["faults_by_kind"]
    restarts = hang_entries(real_cluster, real_namespace, "chaos-hang")
    print(f"chaos: {report['faults']} hang faults, {len(restarts)} hang restarts", flush=True)
    assert len(restarts) == report["faults"]
