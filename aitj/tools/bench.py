"""``aitj bench`` (``make bench``): figures, not assertions.

- ``cluster-up``: how long a warm ``aitj cluster up`` takes to healthy.
- ``recovery``: the seed job running; a trainer force-deleted again and again; for each, the
  time from the delete call returning to the replacement pod's creation being seen on a watch
  (the operator's whole reaction: event, plan, create) and to the replacement Running.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import yaml
from kubernetes import client, watch

from aitj.controller.kubeclient import api_client
from aitj.core import api
from aitj.devcluster.build import ensure_built
from aitj.devcluster.cluster import ClusterConfig, LocalCluster
from aitj.devcluster.faults import force_delete
from aitj.tools.demo import EXAMPLE, install_crd, start_operator, wait


def bench_cluster_up(
    runs: int = 5, *, base_port: int = 39443, say: Callable[[str], None] = print
) -> list[float]:
    """bench_cluster_up starts and stops a throwaway cluster ``runs`` times; returns seconds to healthy."""
    ensure_built(say=say)
    cluster = LocalCluster("bench")
    cluster.down()
    times = []
    for i in range(runs):
        started = time.monotonic()
        cluster.up(ClusterConfig(nodes=3, base_port=base_port), say=lambda _m: None)
        times.append(time.monotonic() - started)
        cluster.down()
        say(f"cluster up run {i + 1}/{runs}: {times[-1]:.2f}s")
    say(
        f"warm `aitj cluster up` (3 nodes) to healthy: median {statistics.median(times):.2f}s, "
        f"min {min(times):.2f}s, max {max(times):.2f}s over {runs} runs"
    )
    return times


def summary(name: str, values: list[float]) -> str:
    """summary: one line of median, p90, min and max of ``values`` (seconds) in milliseconds."""
    ordered = sorted(values)
    p90 = ordered[max(0, round(0.9 * len(ordered)) - 1)]
    return (
        f"{name}: median {statistics.median(ordered) * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
        f"min {ordered[0] * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms (n={len(ordered)})"
    )


def bench_recovery(rounds: int = 10, *, base_port: int = 39443, say: Callable[[str], None] = print) -> None:
    """bench_recovery runs the seed job on a throwaway cluster and force-deletes a trainer
    ``rounds`` times, saying how long each replacement took to be created and to run."""
    cluster = LocalCluster("bench")
    cluster.down()
    cluster.up(ClusterConfig(nodes=4, node_profile="cce", base_port=base_port), say=lambda _m: None)
    operator = None
    try:
        install_crd(cluster)
        operator, _log = start_operator(cluster)
        cluster.kubectl("apply", "-f", str(EXAMPLE))
        doc: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
        name, ns = doc["metadata"]["name"], doc["metadata"]["namespace"]
        core: Any = client.CoreV1Api(api_client(cluster.kubeconfig))
        selector = f"{api.LABEL_JOB}={name},{api.LABEL_REPLICA}=trainer"

        def trainers() -> list[Any]:
            return [
                p
                for p in core.list_namespaced_pod(ns, label_selector=selector).items
                if p.metadata.deletion_timestamp is None and p.status.phase == "Running"
            ]

        wait(lambda: len(trainers()) == 3, 60, "three trainers Running")
        to_create: list[float] = []
        to_running: list[float] = []
        for i in range(rounds):
            victim = sorted(trainers(), key=lambda p: p.metadata.labels[api.LABEL_INDEX])[i % 3]
            index = victim.metadata.labels[api.LABEL_INDEX]
            rv = core.list_namespaced_pod(ns, label_selector=selector).metadata.resource_version
            w: Any = watch.Watch()  # type: ignore[no-untyped-call]
            stream = w.stream(
                core.list_namespaced_pod,
                ns,
                label_selector=f"{selector},{api.LABEL_INDEX}={index}",
                resource_version=rv,
                timeout_seconds=60,
            )
            started = time.monotonic()
            force_delete(core.api_client, ns, victim.metadata.name)
            created = running = None
            for event in stream:
                pod = event["object"]
                if pod.metadata.name == victim.metadata.name:
                    continue
                if created is None and event["type"] == "ADDED":
                    created = time.monotonic() - started
                if pod.status.phase == "Running":
                    running = time.monotonic() - started
                    break
            w.stop()
            if created is None or running is None:
                raise RuntimeError(f"round {i + 1}: no replacement seen within 60 s")
            to_create.append(created)
            to_running.append(running)
            say(
                f"round {i + 1}/{rounds}: trainer {index} force-deleted -> replacement created "
                f"{created * 1000:.0f} ms, Running {running * 1000:.0f} ms"
            )
            wait(lambda: len(trainers()) == 3, 30, "three trainers Running again")
        say(summary("force delete -> replacement created (watch)", to_create))
        say(summary("force delete -> replacement Running (kwok: no image pull)", to_running))
    finally:
        if operator is not None:
            operator.terminate()
            operator.wait(timeout=15)
        cluster.down()


def run_all(say: Callable[[str], None] = print) -> None:
    """run_all runs every benchmark (``aitj bench``)."""
    say("== warm cluster up")
    bench_cluster_up(5, say=say)
    say("== recovery from a force-deleted trainer (seed job, 4 kwok nodes)")
    bench_recovery(10, say=say)
