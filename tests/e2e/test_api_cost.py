"""The API calls a recovery costs, as the apiserver counts them (``apiserver_request_total``):
a force-deleted trainer of a job without plugins is replaced with one create, at most one pod
PATCH (the finalizer released), at most two status writes and one Event, and no Service
(hence no EndpointSlice churn) exists for the job."""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

import pytest
from kubernetes import client

from aitj.core import api
from aitj.devcluster.faults import force_delete
from tests.clusters import KubeCluster
from tests.jobs import create_job, job_pods, running, wait_phase
from tests.operator_process import OperatorProcess
from tests.seeds import seed_job
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "cost"
SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
# (verb, group, resource, subresource) -> what it is
WRITES = {
    ("POST", "", "pods", ""): "pod create",
    ("PATCH", "", "pods", ""): "pod patch",
    ("DELETE", "", "pods", ""): "pod delete",
    ("PATCH", api.GROUP, api.PLURAL, "status"): "status write",
    ("POST", "", "events", ""): "event",
    ("POST", "", "services", ""): "service create",
}


def writes(cluster: KubeCluster) -> Counter[str]:
    """writes: the apiserver's request counters for the calls in ``WRITES``, by what they are."""
    method, url, headers, body, post = cluster.api.param_serialize(
        "GET", "/metrics", auth_settings=["BearerToken"]
    )
    text = cluster.api.call_api(method, url, headers, body, post).response.data.decode()
    out: Counter[str] = Counter()
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        what = WRITES.get(
            (
                labels.get("verb", ""),
                labels.get("group", ""),
                labels.get("resource", ""),
                labels.get("subresource", ""),
            )
        )
        if what:
            out[what] += int(float(m["value"]))
    return out


def no_plugins(doc: dict[str, Any]) -> dict[str, Any]:
    """no_plugins: the seed's trainers only, without ssh or discovery."""
    doc["metadata"] = {"name": NAME}
    doc["spec"].pop("plugin", None)
    doc["spec"]["replicaSpecs"].pop("launcher")
    return doc


def test_a_recovery_costs_one_create_one_patch_two_status_writes_and_one_event(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, no_plugins(seed_job()))
    wait_for(lambda: len(running(job_pods(cluster, namespace, NAME))) == 3, 60, "three trainers Running")
    wait_phase(cluster, namespace, NAME, "Running")
    # No plugin, no Service. Read in the job's namespace: the apiserver's counters are the whole
    # cluster's, and a job an earlier test left behind may make its Service at any moment.
    assert client.CoreV1Api(cluster.api).list_namespaced_service(namespace).items == []

    victim = running(job_pods(cluster, namespace, NAME))[0]
    before = writes(cluster)
    force_delete(cluster.api, namespace, victim.metadata.name)
    wait_for(
        lambda: (
            len(running(job_pods(cluster, namespace, NAME))) == 3
            and victim.metadata.name not in {p.metadata.name for p in job_pods(cluster, namespace, NAME)}
        ),
        60,
        "the trainer replaced and Running, the old one gone",
    )
    wait_for(lambda: writes(cluster)["status write"] > before["status write"], 30, "the restart counted")
    time.sleep(3)  # any late pass would show here
    cost = writes(cluster) - before
    cost.pop("pod delete", None)  # the test's own
    print(f"API calls of one recovery: {dict(cost)}")
    assert cost["pod create"] == 1
    assert cost["pod patch"] <= 1
    assert 1 <= cost["status write"] <= 2
    assert cost["event"] == 1
    assert client.CoreV1Api(cluster.api).list_namespaced_service(namespace).items == []
