"""A checkpoint before a drain, on real nodes (issue 28; docs/semantics.md section 26).

The MPI example's training (train.py, checkpoints every CHECKPOINT_EVERY steps on the ranks' own
disks) runs twice, with two trainers on the two nodes and the launcher pinned to the first:
once without ``checkpointOnDrain``, once with a hook that asks train.py to checkpoint now (it
creates the file train.py polls each step and waits for train.py to remove it). Each time,
when the training is DRAIN_AT steps past its last periodic checkpoint, ``kubectl drain`` (the
cluster's own kubectl) drains the second node; its trainer is evicted and replaced on the first.

The steps lost are read from the training's own lines (rank 0, one a step): at each re-forming
after the drain started, the highest step trained before it less the step it resumed at.
Without the hook the drained rank's progress since the last periodic checkpoint is lost; with
it, only what was trained between the hook's checkpoint and the eviction (the drain's retry,
every 5 s). Both are printed, with how long each drain took; the test asserts fewer with the
hook.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

from aitj.core import api
from aitj.devcluster.versions import kubectl_binary
from aitj.tools.trainbench.timeline import Reset, Step
from tests.clusters import KubeCluster
from tests.e2e.real.jobs import pods_by_index
from tests.e2e.real.training import Training, example_job, started
from tests.jobs import Doc, delete_job, job_pods
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

# The cluster's first start here builds the images that changed (minutes), then two trainings.
# Long (make real-nodes): two drains of real training, about 2.5 minutes. Its short twin in make
# test is test_rbac_audit's drain, whose hook runs (and fails at a kwok node) while the budget
# holds the eviction, with the decision table-tested in tests/unit/test_drain_checkpoint.py.
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(1500)]

STEPS = 20_000  # longer than the test: the job is deleted once measured
CHECKPOINT_EVERY = 200
DRAIN_AT = 120  # steps past the last periodic checkpoint when the drain starts
TRAIN = f"--checkpoint-every={CHECKPOINT_EVERY} --log-every=1 --step-seconds=0.1"
# The hook: ask train.py for a checkpoint (its --checkpoint-now file) and wait until it is saved.
HOOK = [
    "/bin/sh",
    "-c",
    "mkdir -p /tmp/aitj-train && touch /tmp/aitj-train/checkpoint-now && "
    "while [ -e /tmp/aitj-train/checkpoint-now ]; do sleep 0.1; done",
]
DRAIN = ("--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=180s")


def training_job(name: str, launcher_node: str, *, hook: bool) -> Doc:
    """training_job: manifests/examples/mpi.yaml with two trainers spread over the nodes when
    they can be, the launcher on ``launcher_node``, and the hook if ``hook``."""
    doc = example_job("mpi.yaml", name, steps=STEPS)
    launcher = doc["spec"]["replicaSpecs"]["launcher"]
    (container,) = launcher["template"]["spec"]["containers"]
    container["command"][-1] = container["command"][-1].replace(
        f"--steps={STEPS}", f"--steps={STEPS} {TRAIN}"
    )
    host = {"key": "kubernetes.io/hostname", "operator": "In", "values": [launcher_node]}
    launcher["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [host]}]
            }
        }
    }
    trainer = doc["spec"]["replicaSpecs"]["trainer"]
    trainer["replicas"] = 2
    selector = {"matchLabels": {api.LABEL_JOB: name, api.LABEL_REPLICA: "trainer"}}
    term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
    trainer["template"]["spec"]["affinity"] = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
        }
    }
    if hook:
        trainer["checkpointOnDrain"] = {"command": HOOK, "timeoutSeconds": 60}
    return doc


def rank0(run: Training) -> tuple[list[Step], list[Reset]]:
    events = run.events()
    steps = [e for e in events if isinstance(e, Step) and e.rank == 0]
    resets = [e for e in events if isinstance(e, Reset) and e.rank == 0]
    return steps, resets


def steps_lost(run: Training, since: float) -> tuple[int, list[tuple[int, int]]]:
    """steps_lost: the steps redone after ``since``: at each re-forming, the highest step the
    world before it trained (since the re-forming before, if any) less the step it resumed at;
    and each (reached, resumed). A world that trained nothing before the next re-forming (the
    replacement joined first) loses nothing more."""
    steps, resets = rank0(run)
    pairs = []
    last = 0.0
    for reset in (r for r in resets if r.t > since):
        reached = max((s.step for s in steps if last < s.t < reset.t), default=reset.resume)
        pairs.append((reached, reset.resume))
        last = reset.t
    return sum(max(reached - resumed, 0) for reached, resumed in pairs), pairs


def drained_once(
    cluster: KubeCluster, namespace: str, nodes: list[str], name: str, *, hook: bool
) -> tuple[int, float, str]:
    """drained_once: run the job, drain the second node DRAIN_AT steps past a periodic
    checkpoint, wait until it trains at full width again; the steps lost, the drain's seconds
    and the launcher's log."""
    doc = training_job(name, nodes[0], hook=hook)
    run = started(cluster, namespace, doc, width=2, step=1)
    trainers = pods_by_index(cluster, namespace, name, "trainer")
    assert {p.spec.node_name for p in trainers.values()} == set(nodes), "the trainers did not spread"

    def due() -> bool:
        steps, _ = rank0(run)
        last = steps[-1].step if steps else 0
        return last > CHECKPOINT_EVERY and last % CHECKPOINT_EVERY >= DRAIN_AT

    wait_for(due, 240, f"the training {DRAIN_AT} steps past a checkpoint", interval=0.2)
    since = time.time()
    proc = subprocess.run(
        [str(kubectl_binary()), f"--kubeconfig={cluster.kubeconfig}", "drain", nodes[1], *DRAIN],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    drain_seconds = time.time() - since
    assert proc.returncode == 0, proc.stdout + proc.stderr

    def healed() -> bool:
        steps, resets = rank0(run)
        later = [r for r in resets if r.t > since and r.size == 2]
        return bool(later) and any(s.t > later[-1].t and s.size == 2 for s in steps)

    try:
        wait_for(healed, 180, "the training back at width 2", interval=1)
    finally:
        cluster.kubectl("uncordon", nodes[1], check=False)
    time.sleep(2)
    lost, pairs = steps_lost(run, since)
    log = run.log()
    print(
        f"{'with' if hook else 'without'} the hook: {lost} steps lost (reached, resumed at each "
        f"re-forming: {pairs}); the drain took {drain_seconds:.1f}s",
        flush=True,
    )
    return lost, drain_seconds, log


def real_nodes(cluster: KubeCluster) -> list[str]:
    items: list[Any] = cluster.core.list_node().items
    return sorted(n.metadata.name for n in items)


def test_a_drain_with_the_checkpoint_hook_loses_fewer_steps_than_one_without(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    nodes = real_nodes(real_cluster)
    assert len(nodes) == 2, nodes
    without, _, _ = drained_once(real_cluster, real_namespace, nodes, "drain-plain", hook=False)
    delete_job(real_cluster, real_namespace, "drain-plain")  # its CPU for the next job
    wait_for(
        lambda: not job_pods(real_cluster, real_namespace, "drain-plain"),
        120,
        "drain-plain's pods gone",
        interval=1,
    )
    with_hook, _, log = drained_once(real_cluster, real_namespace, nodes, "drain-hook", hook=True)
    assert "checkpoint asked for: saved at step" in log, log[-4000:]
    print(f"steps lost in a drain: {without} without the checkpoint hook, {with_hook} with it", flush=True)
    assert with_hook < without
