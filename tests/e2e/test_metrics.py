"""The operator's metrics on the real control plane (issue 12): each fault, scale operation and
deletion moves /metrics exactly as docs/metrics.md says, and no key material reaches the logs."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from aitj.core import api, naming
from aitj.core.render.discovery import DISCOVERY_HOSTS_KEY
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.e2e.scrape import Samples, samples, value
from tests.jobs import (
    create_job,
    delete_job,
    get_job,
    job_pods,
    live,
    patch_job,
    running,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "metrics-job"


def series_of(found: Samples, job: str) -> list[str]:
    """series_of: the names of the samples labelled with ``job``."""
    return sorted({n for (n, ls), _ in found.items() if ("job_name", job) in ls})


def eventually(operator: OperatorProcess, check: Callable[[Samples], bool], what: str) -> Samples:
    """eventually: /metrics once ``check`` holds of it."""

    def ready() -> Samples | None:
        """ready: /metrics when ``check`` holds of it."""
        try:
            found = samples(operator)
        except OSError:  # a restarted operator is not serving yet
            return None
        return found if check(found) else None

    result: Samples = wait_for(ready, 60, what)
    return result


def start(cluster: KubeCluster, namespace: str, **changes: Callable[[dict[str, object]], None]) -> None:
    """start: the seed (with ``changes``) as NAME, every pod Running."""
    create_job(cluster, namespace, seed_variant(NAME, **changes))
    wait_phase(cluster, namespace, NAME, "Running")
    wait_for(lambda: len(running(job_pods(cluster, namespace, NAME))) == 4, 60, "every pod Running")


def test_a_force_delete_is_one_restart_one_recovery_one_detection_and_costs_gpu_time(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace)
    ns = {"namespace": namespace}
    cause = {"cause": "PodForceDeleted"}
    before = samples(live_operator)
    assert value(before, "aitj_jobs", phase="Running", **ns) == 1
    assert value(before, "aitj_job_replicas", job_name=NAME, replica="trainer", state="desired", **ns) == 3
    assert value(before, "aitj_job_replicas", job_name=NAME, replica="trainer", state="running", **ns) == 3
    assert value(before, "aitj_restart_budget_used_ratio", job_name=NAME, replica="trainer", **ns) == 0
    assert value(before, "aitj_build_info") == 1
    assert value(before, "aitj_leader") == 1

    victim = live(job_pods(cluster, namespace, NAME, "trainer"))[0].metadata
    faults.force_delete(cluster.api, namespace, victim.name)

    def recovered(s: Samples) -> bool:
        """recovered: one more recovery observed than before the fault."""
        return value(s, "aitj_recovery_seconds_count", scope="Pod", **cause) > value(
            before, "aitj_recovery_seconds_count", scope="Pod", **cause
        )

    after = eventually(live_operator, recovered, "the recovery observed")
    assert (
        value(after, "aitj_restarts_total", job_name=NAME, replica="trainer", scope="Pod", **ns, **cause) == 1
    )
    for name in ("aitj_recovery_seconds_count", "aitj_fault_detection_seconds_count"):
        assert value(after, name, **cause) - value(before, name, **cause) == 1, name
    listed = job_recovery_listed(cluster, namespace, live_operator, victim)
    # The job's figure ends later than the histogram's, at the end of the pass that listed it.
    running_seconds = value(after, "aitj_recovery_seconds_sum", **cause) - value(
        before, "aitj_recovery_seconds_sum", **cause
    )
    job_seconds = value(listed, "aitj_job_recovery_seconds_sum", job_name=NAME, **ns)
    assert running_seconds <= job_seconds < running_seconds + 5, (running_seconds, job_seconds)
    assert value(listed, "aitj_job_last_recovery_seconds", job_name=NAME, **ns) == job_seconds
    # One trainer (one cGPU card) was down from the delete until its replacement ran.
    assert value(after, "aitj_lost_gpu_seconds_total", job_name=NAME, **ns, **cause) > 0
    assert value(after, "aitj_restart_budget_used_ratio", job_name=NAME, replica="trainer", **ns) == 0.01

    # Passes go on (resync, status echoes): nothing is counted twice.
    wait_phase(cluster, namespace, NAME, "Running")
    again = samples(live_operator)
    for name in ("aitj_recovery_seconds_count", "aitj_fault_detection_seconds_count"):
        assert value(again, name, **cause) == value(after, name, **cause), name
    assert value(again, "aitj_restarts_total", job_name=NAME, **ns) == 1
    assert value(again, "aitj_job_recovery_seconds_count", job_name=NAME, **ns) == 1

    # The plugin.ssh key pair never reaches the log, as PEM or as the Secret's base64.
    secret = cluster.core.read_namespaced_secret(naming.ssh_secret_name(NAME), namespace)
    logs = live_operator.logs()
    assert "PRIVATE KEY" not in logs
    for encoded in secret.data.values():
        key = base64.b64decode(encoded).decode()
        body = "".join(line for line in key.splitlines() if "-----" not in line)
        assert encoded not in logs and body[:64] not in logs

    # A new operator process counts nothing the previous one recorded.
    live_operator.restart()
    fresh = eventually(live_operator, lambda s: value(s, "aitj_jobs", **ns) == 1, "the new operator synced")
    assert value(fresh, "aitj_restarts_total", job_name=NAME, **ns) == 0
    assert value(fresh, "aitj_job_recovery_seconds_count", job_name=NAME, **ns) == 0

    # Deleting the job takes every series labelled with it off /metrics.
    delete_job(cluster, namespace, NAME)
    gone = eventually(live_operator, lambda s: not series_of(s, NAME), "the job's series gone")
    assert value(gone, "aitj_jobs", **ns) == 0


def job_recovery_listed(
    cluster: KubeCluster, namespace: str, operator: OperatorProcess, victim: Any
) -> Samples:
    """job_recovery_listed: /metrics once the job's own recovery is observed, checking that by
    then the discovery ConfigMap lists the replacement of ``victim`` (the deleted pod's
    metadata): the ConfigMap is written before that recovery ends."""
    ns = {"namespace": namespace}
    listed = eventually(
        operator,
        lambda s: value(s, "aitj_job_recovery_seconds_count", job_name=NAME, **ns) == 1,
        "the job's recovery observed",
    )
    index = victim.labels[api.LABEL_INDEX]
    pods = live(job_pods(cluster, namespace, NAME, "trainer"))
    (replacement,) = [p.metadata.name for p in pods if p.metadata.labels[api.LABEL_INDEX] == index]
    assert replacement != victim.name
    hosts = cluster.core.read_namespaced_config_map(naming.discovery_configmap_name(NAME), namespace).data
    assert f"{replacement}." in hosts[DISCOVERY_HOSTS_KEY], hosts[DISCOVERY_HOSTS_KEY]
    return listed


def test_a_restart_recorded_then_deleted_job_leaves_no_series(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace)
    victim = live(job_pods(cluster, namespace, NAME, "trainer"))[1].metadata.name
    faults.force_delete(cluster.api, namespace, victim)
    found = eventually(
        live_operator,
        lambda s: (
            value(s, "aitj_lost_gpu_seconds_total", job_name=NAME, namespace=namespace) > 0
            and value(s, "aitj_job_recovery_seconds_count", job_name=NAME, namespace=namespace) == 1
        ),
        "the restart recovered, listed, and its GPU time counted",
    )
    made = {"aitj_restarts_total", "aitj_job_recovery_seconds_count", "aitj_job_last_recovery_seconds"}
    assert made <= set(series_of(found, NAME)), series_of(found, NAME)
    delete_job(cluster, namespace, NAME)
    eventually(live_operator, lambda s: not series_of(s, NAME), "the job's series gone")


def test_scale_out_and_scale_in_are_each_counted_once_when_they_finish(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace, grace=set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 0))
    ops = "aitj_scaling_operations_total"
    job = {"namespace": namespace, "job_name": NAME}

    patch_job(cluster, namespace, NAME, {"spec": {"replicaSpecs": {"trainer": {"replicas": 4}}}})
    eventually(
        live_operator,
        lambda s: value(s, ops, direction="out", result="succeeded", **job) == 1,
        "the scale-out counted",
    )
    assert value(samples(live_operator), "aitj_job_replicas", replica="trainer", state="desired", **job) == 4

    patch_job(cluster, namespace, NAME, {"spec": {"replicaSpecs": {"trainer": {"replicas": 3}}}})
    after = eventually(
        live_operator,
        lambda s: value(s, ops, direction="in", result="succeeded", **job) == 1,
        "the scale-in counted",
    )
    assert value(after, ops, **job) == 2
    history = get_job(cluster, namespace, NAME)["status"]["scaleHistory"]
    assert [(h["operation"], h["reason"]) for h in history] == [
        ("scaleout", "ScaleSucceeded"),
        ("scalein", "ScaleSucceeded"),
    ]
    wait_phase(cluster, namespace, NAME, "Running")
    assert value(samples(live_operator), ops, **job) == 2


@pytest.mark.parametrize("scope", ["Replica", "All"])
def test_a_scope_restart_is_one_restart_and_one_recovery_once_every_pod_it_took_down_runs(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, scope: str
) -> None:
    start(
        cluster,
        namespace,
        scope=set_path("spec.replicaSpecs.trainer.faultTolerantPolicy.0.restartScope", scope),
    )
    labels = {"cause": "PodForceDeleted", "scope": scope}
    before = samples(live_operator)
    faults.force_delete(
        cluster.api, namespace, live(job_pods(cluster, namespace, NAME, "trainer"))[1].metadata.name
    )

    def recovered(s: Samples) -> bool:
        """recovered: one more recovery observed than before the fault."""
        return value(s, "aitj_recovery_seconds_count", **labels) > value(
            before, "aitj_recovery_seconds_count", **labels
        )

    after = eventually(live_operator, recovered, f"the {scope} recovery observed")
    # Only once every pod it restarted runs again.
    assert len(running(job_pods(cluster, namespace, NAME))) == 4
    assert (
        value(after, "aitj_recovery_seconds_count", **labels)
        - value(before, "aitj_recovery_seconds_count", **labels)
        == 1
    )
    assert value(after, "aitj_restarts_total", job_name=NAME, namespace=namespace) == 1
    assert value(after, "aitj_lost_gpu_seconds_total", job_name=NAME, namespace=namespace) > 0


def test_an_exit_code_restart_is_detected_from_the_containers_finish(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    start(cluster, namespace)
    labels = {"cause": "exitCode"}
    before = samples(live_operator)
    faults.pod_exit(
        cluster.api, namespace, job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name, 129
    )

    def recovered(s: Samples) -> bool:
        """recovered: one more recovery observed than before the fault."""
        return value(s, "aitj_recovery_seconds_count", scope="Pod", **labels) > value(
            before, "aitj_recovery_seconds_count", scope="Pod", **labels
        )

    after = eventually(live_operator, recovered, "the launcher's recovery observed")
    for name in ("aitj_recovery_seconds_count", "aitj_fault_detection_seconds_count"):
        assert value(after, name, **labels) - value(before, name, **labels) == 1, name
    assert (
        value(after, "aitj_restarts_total", job_name=NAME, replica="launcher", namespace=namespace, **labels)
        == 1
    )
    # The launcher asks for no GPU: its restart costs none, and makes no series.
    assert value(after, "aitj_lost_gpu_seconds_total", job_name=NAME, namespace=namespace) == 0
