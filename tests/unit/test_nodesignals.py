"""Node health signals (aitj.core.nodesignals): the conditions and taints the operator is told
are node failures, read from the Node, judged into nodeNotReady, and kept off by the pods the
planner creates; as tables."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from aitj.cli import main
from aitj.core.explain import Verdict, explain
from aitj.core.nodesignals import (
    DEFAULT_SIGNALS,
    OUT_OF_SERVICE_TAINT,
    NodeFault,
    NodeSignals,
    faulty_nodes,
    node_fault,
    parse_condition,
    parse_taint,
)
from aitj.core.observed import NodeCondition, NodeTaint, NodeView
from aitj.core.planner import Settings, plan
from aitj.core.policy import FailureKind, classify
from aitj.core.render import avoid_nodes
from aitj.core.wire import format_time
from tests.unit.builders import (
    Pod,
    at,
    name_of,
    node,
    running_seed,
    running_status,
    seed_job,
    views,
    with_status,
)

KERNEL_DEADLOCK = NodeSignals.parse(["KernelDeadlock=True"])
GPU = NodeSignals.parse(["example.com/GPUHealthy=False"], ["example.com/gpu-xid"])

# ---------------------------------------------------------------------------------------------
# The options


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("KernelDeadlock=True", ("KernelDeadlock", "True")),
        ("example.com/GPUHealthy=False", ("example.com/GPUHealthy", "False")),
        ("FrequentKubeletRestart=Unknown", ("FrequentKubeletRestart", "Unknown")),
    ],
)
def test_a_condition_option_is_a_type_and_a_status(text: str, parsed: tuple[str, str]) -> None:
    assert parse_condition(text) == parsed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("KernelDeadlock", "expected TYPE=STATUS"),
        ("KernelDeadlock=true", "True, False or Unknown"),
        ("=True", "expected TYPE=STATUS"),
        ("Kernel Deadlock=True", "expected TYPE=STATUS"),
        ("Ready=False", "the Ready condition is always read"),
    ],
)
def test_a_condition_option_that_is_not_type_equals_status_is_refused_saying_why(
    text: str, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        parse_condition(text)


@pytest.mark.parametrize("key", ["example.com/gpu-xid", "gpu-unhealthy", OUT_OF_SERVICE_TAINT])
def test_a_taint_option_is_a_qualified_key(key: str) -> None:
    assert parse_taint(key) == key


@pytest.mark.parametrize("key", ["", "bad key", "Example.com/x", "a/b/c", "-x", "x" * 64])
def test_a_taint_option_that_is_no_taint_key_is_refused(key: str) -> None:
    with pytest.raises(ValueError, match="expected a taint key"):
        parse_taint(key)


def test_the_out_of_service_taint_is_a_signal_without_options_and_with_any() -> None:
    assert (
        DEFAULT_SIGNALS == NodeSignals.parse() == NodeSignals(frozenset(), frozenset({OUT_OF_SERVICE_TAINT}))
    )
    assert GPU.taints == {OUT_OF_SERVICE_TAINT, "example.com/gpu-xid"}


@pytest.mark.parametrize("command", [["run"], ["explain", "job"]])
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--node-fault-condition", "Hung"], "'--node-fault-condition': 'Hung': expected TYPE=STATUS"),
        (["--node-fault-taint", "bad key"], "'--node-fault-taint': 'bad key': expected a taint key"),
    ],
)
def test_aitj_run_and_explain_refuse_a_bad_signal_option_in_one_line_naming_it(
    command: list[str], args: list[str], says: str
) -> None:
    result = CliRunner().invoke(main, [*command, *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


# ---------------------------------------------------------------------------------------------
# The Node, read


def test_a_node_view_keeps_its_conditions_and_taints_without_heartbeats() -> None:
    body: dict[str, Any] = {
        "metadata": {"name": "n1"},
        "spec": {
            "taints": [
                {
                    "key": OUT_OF_SERVICE_TAINT,
                    "value": "nodeshutdown",
                    "effect": "NoExecute",
                    "timeAdded": format_time(at(5)),
                },
                {"key": "example.com/gpu-xid", "effect": "NoSchedule"},
                {"effect": "NoSchedule"},
            ]
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": format_time(at(0))},
                {
                    "type": "KernelDeadlock",
                    "status": "True",
                    "reason": "DockerHung",
                    "lastHeartbeatTime": format_time(at(540)),
                    "lastTransitionTime": format_time(at(7)),
                },
                {"status": "True"},
            ]
        },
    }
    view = NodeView.from_dict(body)
    assert view.is_ready and view.ready_since == at(0)
    assert view.conditions == (NodeCondition("KernelDeadlock", "True", "DockerHung", at(7)),)
    assert view.taints == (
        NodeTaint(OUT_OF_SERVICE_TAINT, "NoExecute", at(5)),
        NodeTaint("example.com/gpu-xid", "NoSchedule", None),
    )
    body["status"]["conditions"][1]["lastHeartbeatTime"] = format_time(at(600))
    assert NodeView.from_dict(body).health == view.health  # a heartbeat changes nothing


# ---------------------------------------------------------------------------------------------
# Is the node faulty, and why


@pytest.mark.parametrize(
    ("view", "signals", "fault"),
    [
        pytest.param(node("n1"), KERNEL_DEADLOCK, None, id="a healthy node"),
        pytest.param(
            node("n1", since=7, conditions={"KernelDeadlock": "True"}),
            KERNEL_DEADLOCK,
            NodeFault("n1", ("KernelDeadlock=True",), at(7)),
            id="a configured condition",
        ),
        pytest.param(
            node("n1", conditions={"KernelDeadlock": "False"}),
            KERNEL_DEADLOCK,
            None,
            id="the same condition at another status",
        ),
        pytest.param(
            node("n1", conditions={"KernelDeadlock": "True"}),
            DEFAULT_SIGNALS,
            None,
            id="a condition the operator was not told about",
        ),
        pytest.param(
            node("n1", since=9, taints=[OUT_OF_SERVICE_TAINT]),
            DEFAULT_SIGNALS,
            NodeFault("n1", (f"taint {OUT_OF_SERVICE_TAINT}:NoExecute",), at(9)),
            id="the out-of-service taint, by default",
        ),
        pytest.param(node("n1", taints=["example.com/gpu-xid"]), DEFAULT_SIGNALS, None, id="another taint"),
        pytest.param(
            node(
                "n1", since=3, conditions={"example.com/GPUHealthy": "False"}, taints=["example.com/gpu-xid"]
            ),
            GPU,
            NodeFault("n1", ("example.com/GPUHealthy=False", "taint example.com/gpu-xid:NoExecute"), at(3)),
            id="every signal shown is named",
        ),
    ],
)
def test_a_node_is_faulty_when_it_shows_a_configured_signal(
    view: NodeView, signals: NodeSignals, fault: NodeFault | None
) -> None:
    assert node_fault(view, signals) == fault


def test_the_fault_reads_as_the_node_and_its_signals_with_the_reason_given() -> None:
    view = NodeView.from_dict(
        {
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "KernelDeadlock", "status": "True", "reason": "DockerHung"}]},
        }
    )
    fault = node_fault(view, KERNEL_DEADLOCK)
    assert fault is not None and fault.description == "node n1: KernelDeadlock=True (DockerHung)"
    assert fault.at is None  # no lastTransitionTime given: the time is unknown


def test_faulty_nodes_are_the_names_of_those_showing_a_signal_sorted() -> None:
    views_ = {
        n.name: n
        for n in (
            node("n3", conditions={"KernelDeadlock": "True"}),
            node("n2"),
            node("n1", taints=[OUT_OF_SERVICE_TAINT]),
        )
    }
    assert faulty_nodes(views_, KERNEL_DEADLOCK) == ("n1", "n3")
    assert faulty_nodes(views_, DEFAULT_SIGNALS) == ("n1",)


# ---------------------------------------------------------------------------------------------
# The pod on it: nodeNotReady


@pytest.mark.parametrize(
    ("pod", "view", "signals", "kind"),
    [
        pytest.param(
            Pod("trainer", 0).running(),
            node(conditions={"KernelDeadlock": "True"}),
            KERNEL_DEADLOCK,
            FailureKind.NODE_NOT_READY,
            id="running on a node with a configured condition",
        ),
        pytest.param(
            Pod("trainer", 0).creating(),
            node(conditions={"KernelDeadlock": "True"}),
            KERNEL_DEADLOCK,
            FailureKind.NODE_NOT_READY,
            id="bound there and not started yet",
        ),
        pytest.param(
            Pod("trainer", 0).running(),
            node(conditions={"KernelDeadlock": "True"}),
            DEFAULT_SIGNALS,
            None,
            id="a condition the operator was not told about is nothing",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("DeletionByTaintManager"),
            node(taints=[OUT_OF_SERVICE_TAINT]),
            DEFAULT_SIGNALS,
            FailureKind.NODE_NOT_READY,
            id="deleted by the taint manager for the out-of-service taint",
        ),
        pytest.param(
            Pod("trainer", 0).running().disrupted("DeletionByTaintManager"),
            node(taints=["example.com/other"]),
            DEFAULT_SIGNALS,
            FailureKind.POD_EVICTED,
            id="deleted for a taint that is no signal",
        ),
        pytest.param(
            Pod("trainer", 0).exited(137),
            node(conditions={"KernelDeadlock": "True"}),
            KERNEL_DEADLOCK,
            FailureKind.EXIT_CODE,
            id="an exit code the pod gave first stays the cause",
        ),
    ],
)
def test_a_pod_on_a_node_showing_a_signal_is_node_not_ready(
    pod: Pod, view: NodeView, signals: NodeSignals, kind: FailureKind | None
) -> None:
    failure = classify(pod.view(), view, signals)
    assert (failure.kind if failure else None) == kind


def test_its_failure_names_the_signal_and_dates_from_the_condition() -> None:
    failure = classify(
        Pod("trainer", 0).running().view(),
        node("n1", since=40, conditions={"KernelDeadlock": "True"}),
        KERNEL_DEADLOCK,
    )
    assert failure is not None
    assert (failure.description, failure.at) == ("node n1: KernelDeadlock=True", at(40))


# ---------------------------------------------------------------------------------------------
# The planner: replaced, and not on that node


def deadlocked_b(
    conditions: dict[str, str] | None = None, taints: tuple[str, ...] = ()
) -> dict[str, NodeView]:
    """deadlocked_b: node-a healthy, node-b showing ``conditions`` / ``taints`` since 95."""
    bad = node("node-b", since=95, conditions=conditions or {}, taints=taints)
    return {"node-a": node("node-a"), "node-b": bad}


def seed_on_b() -> tuple[Any, list[Pod]]:
    """seed_on_b: the seed job Running, trainer 2 on node-b, the rest on node-a."""
    pods = running_seed()
    pods[2].raw["spec"]["nodeName"] = "node-b"
    return with_status(seed_job(), running_status(seed_job(), pods)), pods


def node_affinity(body: Any) -> Any:
    return body["spec"].get("affinity", {}).get("nodeAffinity")


@pytest.mark.parametrize(
    ("cluster_nodes", "signals"),
    [
        pytest.param(
            deadlocked_b({"KernelDeadlock": "True"}), KERNEL_DEADLOCK, id="KernelDeadlock=True configured"
        ),
        pytest.param(
            deadlocked_b(taints=(OUT_OF_SERVICE_TAINT,)), DEFAULT_SIGNALS, id="the out-of-service taint"
        ),
    ],
)
def test_a_trainer_on_a_faulty_node_is_replaced_as_node_not_ready_and_kept_off_that_node(
    cluster_nodes: dict[str, NodeView], signals: NodeSignals
) -> None:
    job, pods = seed_on_b()
    result = plan(job, views(pods), cluster_nodes, at(100), settings=Settings(node_signals=signals))
    assert [c.name for c in result.creates] == [name_of("trainer", 2, 1)]
    assert [(d.name, d.grace_period_seconds) for d in result.deletes] == [(name_of("trainer", 2), None)]
    assert result.release == (name_of("trainer", 2),)  # as for a node not Ready: let go at once
    (restart,) = result.restarts
    assert restart.failure.kind is FailureKind.NODE_NOT_READY and restart.latency_seconds == 5
    assert restart.failure.description.startswith("node node-b: ")
    assert restart.failure.description in result.restart_events[0].message
    assert node_affinity(result.creates[0].body) == {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-b"]}]}
            ]
        }
    }


def test_without_the_condition_configured_the_trainer_stays_and_nothing_is_rendered_differently() -> None:
    job, pods = seed_on_b()
    result = plan(job, views(pods), deadlocked_b({"KernelDeadlock": "True"}), at(100))
    assert result.creates == () and result.deletes == () and result.restarts == ()


def test_a_first_pod_is_kept_off_a_faulty_node_too_and_off_no_other() -> None:
    healthy = plan(seed_job(), [], deadlocked_b(), at(1), settings=Settings(node_signals=KERNEL_DEADLOCK))
    assert all(node_affinity(c.body) is None for c in healthy.creates)
    result = plan(
        seed_job(),
        [],
        deadlocked_b({"KernelDeadlock": "True"}),
        at(1),
        settings=Settings(node_signals=KERNEL_DEADLOCK),
    )
    assert result.creates and all(
        node_affinity(c.body)["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
            "matchFields"
        ][0]["values"]
        == ["node-b"]
        for c in result.creates
    )


def test_aitj_explain_told_the_signals_judges_the_pod_as_the_operator_does() -> None:
    job, pods = seed_on_b()
    trainer_2 = name_of("trainer", 2)
    cluster_nodes = deadlocked_b({"KernelDeadlock": "True"})
    (untold,) = explain(job, views(pods), cluster_nodes, at(100), trainer_2).pods
    assert untold.verdict is Verdict.HEALTHY
    operator = Settings(node_signals=KERNEL_DEADLOCK)
    (told,) = explain(job, views(pods), cluster_nodes, at(100), trainer_2, settings=operator).pods
    assert told.verdict is Verdict.RESTART
    assert (told.failure, told.failure_detail) == ("nodeNotReady", "node node-b: KernelDeadlock=True")


# ---------------------------------------------------------------------------------------------
# The exclusion, rendered


def pod_with(affinity: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if affinity is not None:
        spec["affinity"] = affinity
    return {"spec": spec}


OFF = {"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]}
ZONE = {"key": "zone", "operator": "In", "values": ["a"]}
GPU_LABEL = {"key": "gpu", "operator": "Exists"}


@pytest.mark.parametrize(
    ("affinity", "terms"),
    [
        pytest.param(None, [{"matchFields": [OFF]}], id="no affinity: one term"),
        pytest.param(
            {
                "podAntiAffinity": {"x": 1},
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
            },
            [{"matchFields": [OFF]}],
            id="other affinities are kept",
        ),
        pytest.param(
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [ZONE]},
                            {"matchExpressions": [GPU_LABEL], "matchFields": [GPU_LABEL]},
                        ]
                    }
                }
            },
            [
                {"matchExpressions": [ZONE], "matchFields": [OFF]},
                {"matchExpressions": [GPU_LABEL], "matchFields": [GPU_LABEL, OFF]},
            ],
            id="each of the user's terms (ORed) excludes the nodes",
        ),
    ],
)
def test_the_nodes_to_avoid_are_excluded_by_name_from_every_required_term(
    affinity: dict[str, Any] | None, terms: list[dict[str, Any]]
) -> None:
    body = avoid_nodes(pod_with(affinity), ["n1", "n2"])
    required = body["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == terms
    if affinity is not None:
        assert body["spec"]["affinity"].get("podAntiAffinity") == affinity.get("podAntiAffinity")


def test_nothing_to_avoid_changes_nothing() -> None:
    assert avoid_nodes(pod_with(None), []) == pod_with(None)
