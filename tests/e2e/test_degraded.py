"""A visible degraded state on the real control plane (issue 15): a force-deleted trainer whose
replacement the scheduler cannot place leaves the job degraded (status, kubectl column, one
Event) while it trains on with the Running trainers; room appears, the job regrows by itself and
says so once."""

from __future__ import annotations

import time
from typing import Any

import pytest

from aitj.core import naming
from aitj.core.wire import parse_time
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.e2e.pools import Pool
from tests.e2e.scrape import samples, value
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
NAME = "short-job"


def trainers(cluster: KubeCluster, namespace: str) -> dict[int, Any]:
    """trainers: the job's Running trainer pods, by index."""
    return running_trainers(cluster, namespace, NAME)


def status(cluster: KubeCluster, namespace: str) -> dict[str, Any]:
    """status: the job's status as the apiserver holds it now."""
    return dict(get_job(cluster, namespace, NAME).get("status") or {})


def hosts(cluster: KubeCluster, namespace: str) -> list[str]:
    """hosts: the pods in the discovery host list (the ConfigMap's ``hosts`` file), in order."""
    cm = cluster.core.read_namespaced_config_map(naming.discovery_configmap_name(NAME), namespace)
    return [line.split(".", 1)[0] for line in (cm.data or {}).get("hosts", "").splitlines()]


def said(cluster: KubeCluster, namespace: str, reason: str) -> list[Any]:
    """said: the job's Events of ``reason``."""
    return [e for e in events_for(cluster, namespace, NAME) if e.reason == reason]


def test_a_trainer_that_cannot_be_placed_leaves_the_job_degraded_until_room_appears(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, pool: Pool
) -> None:
    for _ in range(3):
        pool.add_ready()
    create_job(cluster, namespace, seed_variant(NAME, pin=pool.pin(), spread=spread(NAME)))
    wait_phase(cluster, namespace, NAME, "Running")
    before = trainers(cluster, namespace)
    assert len({p.spec.node_name for p in before.values()}) == 3
    assert "degraded" not in status(cluster, namespace)

    # No room for trainer 1's replacement: its node is cordoned, the others hold a trainer each.
    victim = before[1]
    cluster.core.patch_node(victim.spec.node_name, {"spec": {"unschedulable": True}})
    faults.force_delete(cluster.api, namespace, victim.metadata.name)

    state = wait_for(lambda: status(cluster, namespace).get("degraded"), 30, "the job degraded")
    assert state["reason"] == "trainer[1] Unschedulable", state
    (entry,) = state["indices"]
    assert (entry["replica"], entry["index"], entry["cause"]) == ("trainer", 1, "Unschedulable")
    assert "nodes are available" in entry["message"], entry  # the scheduler's own words
    since = parse_time(state["since"])
    assert since is not None and parse_time(entry["since"]) == since
    assert state["message"].startswith("replica trainer runs 2 of 3 pods: index 1 Unschedulable")

    # Training goes on with the Running trainers: the host list has only them.
    others = [before[0].metadata.name, before[2].metadata.name]
    assert status(cluster, namespace)["discoveryHosts"] == others
    wait_for(lambda: hosts(cluster, namespace) == others, 30, "the host list without trainer 1")

    table = cluster.kubectl("get", "aitj", NAME, "-n", namespace).stdout.splitlines()
    assert table[0].split()[:6] == ["NAME", "PHASE", "TRAINERS", "DESIRED", "RESTARTS", "DEGRADED"]
    assert table[1].split()[:7] == [NAME, "Restarting", "2", "3", "1", "trainer[1]", "Unschedulable"]

    wait_for(lambda: said(cluster, namespace, "Degraded"), 30, "the Degraded Event")
    short = {"namespace": namespace, "job_name": NAME}
    assert value(samples(live_operator), "aitj_job_degraded_indices", **short) == 1
    # Once, across later passes and an operator restart; since holds.
    live_operator.restart()
    time.sleep(5)
    degraded = said(cluster, namespace, "Degraded")
    assert len(degraded) == 1 and (degraded[0].count or 1) == 1, degraded
    assert degraded[0].type == "Warning" and "trainer[1]" not in degraded[0].message
    assert "index 1 Unschedulable" in degraded[0].message
    assert parse_time(status(cluster, namespace)["degraded"]["since"]) == since

    # Room appears: the replacement is placed, runs, and the job regrows by itself.
    pool.add_ready()
    wait_for(lambda: len(trainers(cluster, namespace)) == 3, 60, "trainer 1 running again")
    wait_for(lambda: "degraded" not in status(cluster, namespace), 30, "the degraded state gone")
    wait_phase(cluster, namespace, NAME, "Running")
    after = trainers(cluster, namespace)
    assert after[1].metadata.name != victim.metadata.name
    wait_for(lambda: len(hosts(cluster, namespace)) == 3, 30, "three hosts again")
    recovered = wait_for(lambda: said(cluster, namespace, "Recovered"), 30, "the Recovered Event")
    time.sleep(3)
    assert len(said(cluster, namespace, "Recovered")) == 1 and (recovered[0].count or 1) == 1
    assert recovered[0].type == "Normal" and "every index the job wants runs again" in recovered[0].message
    assert len(said(cluster, namespace, "Degraded")) == 1
    found = samples(live_operator)
    assert ("aitj_job_degraded_indices", frozenset(short.items())) in found  # 0, not absent
    assert value(found, "aitj_job_degraded_indices", **short) == 0
