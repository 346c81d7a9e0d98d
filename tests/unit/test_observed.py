"""PodView and NodeView, built from raw API dicts."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core.observed import ANNOTATION_LEDGER, NodeView, PodView
from aitj.core.wire import format_time, parse_time
from tests.unit.builders import T0, Pod, at, name_of


def raw_pod(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec, "status": status}


def terminated(name: str, code: int, finished: float = 10) -> dict[str, Any]:
    return {
        "name": name,
        "state": {"terminated": {"exitCode": code, "finishedAt": format_time(at(finished))}},
    }


def test_a_pod_reads_its_job_replica_index_and_generation_from_labels() -> None:
    view = Pod("trainer", 2, generation=3).view()
    assert (view.job, view.replica, view.index, view.generation) == ("test-horovod-elastic", "trainer", 2, 3)
    assert view.name == name_of("trainer", 2, 3)
    assert view.tracked and not view.deleting and view.phase == "Pending" and view.node_name is None


def test_a_pod_without_the_operators_labels_has_no_job_and_generation_zero() -> None:
    view = PodView.from_dict({"metadata": {"name": "stray", "labels": {"app": "x"}}, "status": {}})
    assert (view.job, view.replica, view.index, view.generation) == (None, None, None, 0)


def test_a_running_pod_knows_its_node_and_when_it_started() -> None:
    view = Pod("trainer", 0).running(since=7, node="node-b").view()
    assert view.running and view.node_name == "node-b" and view.running_since == at(7)


def test_running_since_falls_back_to_the_ready_condition() -> None:
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": format_time(at(4))}
    view = PodView.from_dict(raw_pod({}, {"phase": "Running", "conditions": [ready]}))
    assert view.running_since == at(4)


@pytest.mark.parametrize(
    ("spec", "statuses", "expected"),
    [
        pytest.param(
            {"containers": [{"name": "a"}, {"name": "b"}]},
            {"containerStatuses": [terminated("b", 2), terminated("a", 1)]},
            (1, "a"),
            id="the first non-zero code in spec order wins even when the API lists statuses in another order",
        ),
        pytest.param(
            {"containers": [{"name": "a"}, {"name": "b"}]},
            {"containerStatuses": [terminated("a", 0), terminated("b", 137)]},
            (137, "b"),
            id="a container that exited 0 is skipped",
        ),
        pytest.param(
            {"containers": [{"name": "a"}]},
            {"containerStatuses": [terminated("a", 0)]},
            (None, None),
            id="all zero means no exit code",
        ),
        pytest.param(
            {"initContainers": [{"name": "job-barrier"}], "containers": [{"name": "aitj-0"}]},
            {
                "initContainerStatuses": [terminated("job-barrier", 3)],
                "containerStatuses": [terminated("aitj-0", 1)],
            },
            (3, "job-barrier"),
            id="init containers come first because they run first",
        ),
        pytest.param(
            {
                "initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
                "containers": [{"name": "aitj-0"}],
            },
            {
                "initContainerStatuses": [terminated("proxy", 143)],
                "containerStatuses": [terminated("aitj-0", 0)],
            },
            (None, None),
            id="a sidecar killed when the pod ends is not the pod's exit code",
        ),
        pytest.param(
            {"containers": [{"name": "a"}]},
            {"containerStatuses": [{"name": "a", "state": {"running": {}}}]},
            (None, None),
            id="a running container has no exit code",
        ),
    ],
)
def test_exit_code_is_the_first_non_zero_terminated_code(
    spec: dict[str, Any], statuses: dict[str, Any], expected: tuple[int | None, str | None]
) -> None:
    view = PodView.from_dict(raw_pod(spec, {"phase": "Failed", **statuses}))
    assert (view.exit_code, view.exit_container) == expected


def test_the_exit_code_carries_the_time_the_container_finished() -> None:
    view = Pod("launcher", 0).exited(129, finished=42).view()
    assert view.exit_code == 129 and view.exit_at == at(42) and view.phase == "Failed"


def test_a_disruption_target_condition_is_read_only_when_true() -> None:
    pod = Pod("trainer", 0).running().disrupted("PreemptionByScheduler", when=5)
    assert pod.view().disruption == "PreemptionByScheduler" and pod.view().disruption_at == at(5)
    pod.raw["status"]["conditions"][0]["status"] = "False"
    assert pod.view().disruption is None


def test_a_kubelet_eviction_shows_in_status_reason() -> None:
    view = Pod("trainer", 0).running().evicted_by_kubelet().view()
    assert view.reason == "Evicted" and view.phase == "Failed" and view.message


def test_deletion_start_is_the_deletion_timestamp_minus_the_grace_period() -> None:
    view = Pod("trainer", 0).running().deleted(when=100, grace=30).view()
    assert view.deleting and view.deleted_at == at(130) and view.deletion_grace_seconds == 30
    assert view.deletion_started == at(100)
    assert not view.running


def test_a_pod_without_the_finalizer_is_not_tracked() -> None:
    assert not Pod("trainer", 0).untracked().view().tracked


@pytest.mark.parametrize(
    ("conditions", "ready", "is_ready"),
    [
        ([{"type": "Ready", "status": "True"}], "True", True),
        ([{"type": "Ready", "status": "False"}], "False", False),
        ([{"type": "Ready", "status": "Unknown"}], "Unknown", False),
        ([{"type": "MemoryPressure", "status": "False"}], "Unknown", False),
        ([], "Unknown", False),
    ],
    ids=[
        "a Ready node is ready",
        "Ready False is not ready",
        "Ready Unknown is not ready",
        "a node without a Ready condition is Unknown",
        "a node without conditions is Unknown",
    ],
)
def test_node_view_reads_the_ready_condition(
    conditions: list[dict[str, Any]], ready: str, is_ready: bool
) -> None:
    view = NodeView.from_dict({"metadata": {"name": "n"}, "status": {"conditions": conditions}})
    assert (view.ready, view.is_ready) == (ready, is_ready)


def test_times_round_trip_in_the_api_format() -> None:
    assert format_time(T0) == "2022-01-14T09:01:52Z"
    assert parse_time("2022-01-14T09:01:52Z") == T0
    assert parse_time("not a time") is None and parse_time(None) is None


def test_a_pods_ledger_annotation_is_kept_raw() -> None:
    pod = Pod("trainer", 1, 2)
    pod.raw["metadata"]["annotations"] = {ANNOTATION_LEDGER: "{not json"}
    assert pod.view().ledger_annotation == "{not json"
    pod.raw["metadata"]["annotations"] = {ANNOTATION_LEDGER: 7}
    assert pod.view().ledger_annotation is None
