"""Node maintenance on the real control plane (issue 11): ``kubectl drain`` of a trainer's node
moves the trainer to another node under the same index, and the job's PodDisruptionBudgets
make a drain of several nodes take the trainers one at a time."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, cast

import pytest

from aitj.devcluster.versions import kubectl_binary
from tests.clusters import KubeCluster
from tests.e2e.pools import Pool
from tests.jobs import (
    create_job,
    events_for,
    get_job,
    running_trainers,
    seed_variant,
    spread,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "drain-job"
DRAIN = ("--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s")


def trainers(cluster: KubeCluster, namespace: str) -> dict[int, Any]:
    """trainers: the job's Running trainer pods, by index."""
    return running_trainers(cluster, namespace, NAME)


def start(cluster: KubeCluster, namespace: str, pool: Pool, nodes: int) -> dict[int, Any]:
    """start: ``nodes`` pool nodes, the seed job on them one trainer per node, Running."""
    for _ in range(nodes):
        pool.add()
    create_job(cluster, namespace, seed_variant(NAME, pin=pool.pin(), spread=spread(NAME)))
    wait_phase(cluster, namespace, NAME, "Running")
    wait_for(
        lambda: (get_job(cluster, namespace, NAME).get("status") or {}).get("disruptionBudgets"),
        30,
        "the budgets recorded",
    )
    found = trainers(cluster, namespace)
    assert len({p.spec.node_name for p in found.values()}) == 3
    return found


def drain(cluster: KubeCluster, node: str) -> subprocess.Popen[str]:
    """drain: ``kubectl drain`` of ``node`` as a cluster admin runs it, in the background."""
    return subprocess.Popen(
        [str(kubectl_binary()), f"--kubeconfig={cluster.kubeconfig}", "drain", node, *DRAIN],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_drained_trainer_comes_back_under_the_same_index_on_another_node(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    before = start(cluster, namespace, pool, 4)
    node = before[0].spec.node_name
    proc = drain(cluster, node)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out  # within kubectl's own --timeout of 30 s

    after = wait_for(
        lambda: (
            (m := trainers(cluster, namespace)).get(0) is not None
            and m[0].metadata.name != before[0].metadata.name
            and len(m) == 3
            and m
        ),
        30,
        "trainer 0 running again",
    )
    assert after[0].metadata.name.endswith("-0") and after[0].spec.node_name != node
    assert get_job(cluster, namespace, NAME)["status"]["RestartCount"]["trainer"] == 1
    events = wait_for(
        lambda: [e for e in events_for(cluster, namespace, NAME) if e.reason == "TrainingJobRestarting"],
        30,
        "the restart Event",
    )
    assert f"node {node} is cordoned: a drain" in events[0].message
    assert before[0].metadata.name in events[0].message


def test_draining_two_trainer_nodes_at_once_moves_the_trainers_one_at_a_time(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    before = start(cluster, namespace, pool, 5)
    nodes = [before[0].spec.node_name, before[1].spec.node_name]
    procs = [drain(cluster, n) for n in nodes]
    fewest = 3
    deadline = time.monotonic() + 90
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        fewest = min(fewest, len(trainers(cluster, namespace)))
        time.sleep(0.05)
    outputs = [p.communicate(timeout=5)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert fewest >= 2
    after = wait_for(lambda: len(m := trainers(cluster, namespace)) == 3 and m, 30, "three trainers running")
    assert not {p.spec.node_name for p in after.values()} & set(nodes)
    assert get_job(cluster, namespace, NAME)["status"]["RestartCount"]["trainer"] == 2


def budget_uid(cluster: KubeCluster, namespace: str, name: str) -> str:
    """budget_uid: the uid of PodDisruptionBudget ``name``, "" when there is none."""
    uid = "jsonpath={.metadata.uid}"
    found = cluster.kubectl("get", "pdb", name, "-n", namespace, "-o", uid, check=False)
    return found.stdout.strip() if found.returncode == 0 else ""


def test_the_budgets_are_owned_by_the_job_made_again_when_deleted_by_hand_and_go_with_it(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    start(cluster, namespace, pool, 3)
    out = cluster.kubectl("get", "pdb", "-n", namespace, "-o", "name").stdout.split()
    assert sorted(out) == [
        f"poddisruptionbudget.policy/{NAME}-launcher",
        f"poddisruptionbudget.policy/{NAME}-trainer",
    ]

    # The budgets are listed every 30 s, not watched (docs/operator.md, "A pass's own echoes, and
    # the budgets' status events"): one deleted by hand is made again at the next listing.
    def budget() -> dict[str, Any]:
        got = cluster.kubectl("get", "pdb", f"{NAME}-trainer", "-n", namespace, "-o", "json").stdout
        return cast(dict[str, Any], json.loads(got))

    first = budget()
    old = first["metadata"]["uid"]
    cluster.kubectl("delete", "pdb", f"{NAME}-trainer", "-n", namespace)
    new = wait_for(
        lambda: (uid := budget_uid(cluster, namespace, f"{NAME}-trainer")) not in ("", old) and uid,
        60,
        "the trainers' budget made again",
    )
    again = budget()
    assert again["metadata"]["uid"] == new
    assert again["metadata"]["ownerReferences"] == first["metadata"]["ownerReferences"]
    assert again["spec"] == first["spec"]
    cluster.kubectl("delete", "aitj", NAME, "-n", namespace, "--wait=false")
    wait_for(
        lambda: not cluster.kubectl("get", "pdb", "-n", namespace, "-o", "name").stdout.strip(),
        30,
        "the budgets gone with the job",
    )
