"""What ``aitj get``, ``list`` and ``describe`` show, without a cluster: the rows of
``aitj.cli.jobview`` from a job, its pods and Events as the API returns them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from aitj.cli import jobview as view
from aitj.core.render import gpus
from aitj.core.wire import format_time
from tests.unit.builders import JOB, NAMESPACE, T0, UID, Pod, at


def job(status: dict[str, Any] | None = None, **replicas: dict[str, Any]) -> dict[str, Any]:
    """job: the seed's shape as a raw dict: trainer (3, worker) and launcher (master)."""
    specs = replicas or {
        "trainer": {"replicaType": "worker", "replicas": 3},
        "launcher": {"replicaType": "master", "replicas": 1},
    }
    return {
        "metadata": {"name": JOB, "namespace": NAMESPACE, "uid": UID, "creationTimestamp": format_time(T0)},
        "spec": {"replicaSpecs": specs},
        "status": status or {},
    }


def gpu_pod(replica: str, index: int, limits: dict[str, str]) -> dict[str, Any]:
    raw = Pod(replica, index).running().raw
    raw["spec"]["containers"][0]["resources"] = {"limits": limits}
    return raw


RESTARTS = {
    "RestartCount": {"trainer": 2},
    "totalRestarts": 2,
    "restarts": [
        {
            "time": "t1",
            "replica": "trainer",
            "index": 0,
            "pod": "p0",
            "cause": "PodForceDeleted",
            "rule": "exceptionalEvent nodeNotReady,PodForceDeleted",
            "scope": "Pod",
        },
        {
            "time": "t2",
            "replica": "trainer",
            "index": 0,
            "pod": "p1",
            "cause": "nodeNotReady",
            "rule": "exceptionalEvent nodeNotReady,PodForceDeleted",
            "scope": "Pod",
        },
    ],
    "conditions": [
        {"type": "Creating", "status": "False", "reason": "Creating", "message": "all pods are waiting"},
        {"type": "Running", "status": "True", "reason": "Running", "message": "all pods are running"},
    ],
    "phase": "Running",
}


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        pytest.param(None, "-", id="an unknown time shows as a dash"),
        pytest.param(45, "45s", id="under two minutes in seconds"),
        pytest.param(7 * 60 + 5, "7m", id="under an hour in minutes"),
        pytest.param(3 * 3600 + 12 * 60, "3h12m", id="a few hours with their minutes"),
        pytest.param(12 * 3600 + 5 * 60, "12h", id="ten hours or more in hours"),
        pytest.param(2 * 86400 + 4 * 3600, "2d4h", id="a few days with their hours"),
        pytest.param(-5, "0s", id="a creation time in the future (clock skew) is 0s"),
    ],
)
def test_age_reads_as_kubectl_writes_it(seconds: int | None, shown: str) -> None:
    since = None if seconds is None else T0
    now = T0 if seconds is None else T0 + timedelta(seconds=seconds)
    assert view.age(since, now) == shown


@pytest.mark.parametrize(
    ("limits", "count"),
    [
        pytest.param({}, 0, id="a pod without GPUs has none"),
        pytest.param({"nvidia.com/gpu": "8"}, 8, id="nvidia GPUs count"),
        pytest.param(
            {
                "baidu.com/v100_32g_cgpu": "1",
                "baidu.com/v100_32g_cgpu_core": "20",
                "baidu.com/v100_32g_cgpu_memory": "4",
            },
            1,
            id="a CCE shared GPU counts its cards, not its core and memory shares",
        ),
        pytest.param({"cpu": "4", "memory": "1Gi"}, 0, id="cpu and memory are not GPUs"),
    ],
)
def test_gpus_counts_the_cards_a_pod_asks_for(limits: dict[str, str], count: int) -> None:
    assert gpus(gpu_pod("trainer", 0, limits)) == count


def test_replica_rows_put_workers_first_with_desired_running_restarts_and_the_last_cause() -> None:
    pods = [Pod("trainer", i).running().raw for i in range(2)] + [Pod("trainer", 2).raw]
    rows = view.replica_rows(job(RESTARTS), pods)
    assert rows == [
        view.ReplicaRow("trainer", "worker", 3, 2, 2, "nodeNotReady"),
        view.ReplicaRow("launcher", "master", 1, 0, 0, "-"),
    ]


def test_a_pod_that_only_carries_the_jobs_labels_is_not_counted_or_listed() -> None:
    # Anyone who may create pods in the namespace can set the labels (docs/semantics.md
    # section 1): neither the replica table nor the instance list counts such a pod.
    bare = Pod("trainer", 2).running()
    del bare.raw["metadata"]["ownerReferences"]
    pods = [Pod("trainer", i).running().raw for i in range(2)] + [bare.raw]
    assert view.replica_rows(job(), pods)[0].running == 2
    assert [r.index for r in view.instance_rows(job(), pods, at(61))] == [0, 1]


def test_instance_rows_show_arenas_columns_with_the_chief_and_restarts_of_each_index() -> None:
    pods = [
        gpu_pod("trainer", 1, {"nvidia.com/gpu": "1"}),
        gpu_pod("trainer", 0, {"nvidia.com/gpu": "1"}),
        Pod("launcher", 0).raw,
        Pod("trainer", 2).running().deleted().raw,
    ]
    rows = view.instance_rows(job(RESTARTS), pods, at(61))
    assert [(r.replica, r.index, r.status, r.is_chief, r.gpu, r.restarts) for r in rows] == [
        ("launcher", 0, "Pending", True, 0, 0),
        ("trainer", 0, "Running", False, 1, 2),
        ("trainer", 1, "Running", False, 1, 0),
        ("trainer", 2, "Terminating", False, 0, 0),
    ]
    assert rows[1].age == "61s" and rows[1].node == "node-a" and rows[0].node == "-"


def test_without_a_master_the_chief_is_index_0_of_the_first_replica() -> None:
    workers = job(None, trainer={"replicas": 2})
    rows = view.instance_rows(workers, [Pod("trainer", 0).raw, Pod("trainer", 1).raw], at(1))
    assert [r.is_chief for r in rows] == [True, False]


@pytest.mark.parametrize(
    ("pod", "status"),
    [
        pytest.param(
            Pod("trainer", 0).exited(137), "Failed (exit 137)", id="a failed pod shows its exit code"
        ),
        pytest.param(
            Pod("trainer", 0).running().evicted_by_kubelet(),
            "Evicted",
            id="a kubelet eviction shows its reason",
        ),
        pytest.param(Pod("trainer", 0).exited(0), "Succeeded", id="a succeeded pod shows its phase"),
    ],
)
def test_pod_status_says_why_a_pod_ended(pod: Pod, status: str) -> None:
    assert view.pod_status(pod.view()) == status


def test_pods_of_another_job_are_not_shown() -> None:
    other = Pod("trainer", 0).raw
    other["metadata"]["labels"]["aitj.kongming.cce.baiudbce.com/job-name"] = "other"
    assert view.instance_rows(job(), [other], at(1)) == []


def test_job_row_sums_up_phase_replicas_restarts_and_the_current_condition() -> None:
    pods = [Pod("trainer", i).running().raw for i in range(3)] + [Pod("launcher", 0).running().raw]
    row = view.job_row(job(RESTARTS), pods, at(600))
    assert row == view.JobRow(
        NAMESPACE, JOB, "Running", "10m", "trainer 3/3, launcher 1/1", 2, "Running", "all pods are running"
    )


def test_a_job_without_status_yet_shows_dashes_and_no_restarts() -> None:
    row = view.job_row(job(), [], at(5))
    assert (row.phase, row.restarts, row.reason, row.message) == ("-", 0, "-", "")


def test_total_restarts_falls_back_to_the_sum_of_restart_counts() -> None:
    status = {"RestartCount": {"trainer": 2, "launcher": 1}}
    assert view.job_row(job(status), [], at(5)).restarts == 3


def test_the_condition_history_marks_past_conditions() -> None:
    rows = view.condition_history(job(RESTARTS))
    assert [(r.what, r.reason) for r in rows] == [("Creating (past)", "Creating"), ("Running", "Running")]


def test_the_restart_history_names_the_pod_cause_rule_and_scope() -> None:
    first = view.restart_history(job(RESTARTS))[0]
    assert (first.what, first.reason) == ("trainer 0", "PodForceDeleted")
    assert first.message == "pod p0; rule exceptionalEvent nodeNotReady,PodForceDeleted; scope Pod"


def test_the_scale_history_lists_finished_operations_then_the_one_in_flight() -> None:
    status = {
        "scaleHistory": [
            {
                "time": "t1",
                "replica": "trainer",
                "operation": "scaleout",
                "from": 3,
                "to": 4,
                "pods": ["p3"],
                "reason": "ScaleSucceeded",
                "message": "done",
            }
        ],
        "scaling": {
            "trainer": {"operation": "scalein", "from": 4, "to": 2, "started": "t2", "deadline": "t3"}
        },
    }
    rows = view.scale_history(job(status))
    assert [(r.what, r.reason, r.message) for r in rows] == [
        ("scaleout trainer 3->4", "ScaleSucceeded", "done [p3]"),
        ("scalein trainer 4->2", "InProgress", "deadline t3"),
    ]


def test_events_are_sorted_oldest_first_with_their_count() -> None:
    events: list[dict[str, Any]] = [
        {
            "type": "Warning",
            "reason": "TrainingJobRestarting",
            "message": "m2",
            "lastTimestamp": "2026-01-02",
            "count": 3,
        },
        {"type": "Normal", "reason": "Created", "message": "m1", "lastTimestamp": "2026-01-01"},
    ]
    rows = view.event_history(events)
    assert [(r.what, r.reason) for r in rows] == [
        ("Normal", "Created"),
        ("Warning x3", "TrainingJobRestarting"),
    ]


def test_rows_become_json_with_their_column_names() -> None:
    row = view.InstanceRow("p", "Running", "1s", "trainer", 0, True, 1, "n", 0)
    assert row.to_json() == {
        "name": "p",
        "status": "Running",
        "age": "1s",
        "replica": "trainer",
        "index": 0,
        "is_chief": True,
        "gpu": 1,
        "node": "n",
        "restarts": 0,
    }
