"""The chaos command's kill fault (issue 28 item 5): SIGKILL of a pod's first app container
through its real node's containerd. Its command; the restarts it calls for, worked out with the
operator's own ladder (in place while the InPlace rung has budget within its window, then the
next rule's replacement; a pod made without in-place rules fails with 137 like any); and the
invariants of the in-place rung (the pod kept, the InPlace entries exact)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aitj.cli import main
from aitj.core.api import Job, RestartScope
from aitj.core.observed import ANNOTATION_IN_PLACE
from aitj.core.wire import format_time
from aitj.tools.chaos.expect import expected_restarts
from aitj.tools.chaos.faults import Context, heal
from aitj.tools.chaos.history import FaultRecord, History
from aitj.tools.chaos.inplace import in_place_entries, kept_in_place
from aitj.tools.chaos.invariants import restart_counts
from aitj.tools.chaos.kill import CannotKill, container_id, kill, kill_command
from aitj.tools.chaos.schedule import Allowed, FaultKind, available
from tests.unit.builders import Pod, at, event_rule, exit_rule, node, seed_job, trainer
from tests.unit.test_chaos_cli import staging_kubeconfig
from tests.unit.test_chaos_invariants import KEY, H
from tests.unit.test_hang_chaos import replayed


def test_the_kill_is_containerds_own_client_killing_the_containers_task_in_the_kubelets_namespace() -> None:
    assert kill_command(Path("/bin/ctr"), Path("/run/aitj/real-node-1/containerd.sock"), "abc123") == [
        "/bin/ctr",
        "--address",
        "/run/aitj/real-node-1/containerd.sock",
        "--namespace",
        "k8s.io",
        "tasks",
        "kill",
        "--signal",
        "SIGKILL",
        "abc123",
    ]


def raw(*statuses: dict[str, Any], node_name: str = "real-node-0") -> dict[str, Any]:
    return {
        "spec": {"nodeName": node_name, "containers": [{"name": "aitj-0"}, {"name": "side"}]},
        "status": {"containerStatuses": list(statuses)},
    }


RUNNING = {"name": "aitj-0", "containerID": "containerd://abc123", "state": {"running": {}}}


def test_the_container_killed_is_the_first_app_container_by_its_containerd_id() -> None:
    side = {"name": "side", "containerID": "containerd://zzz", "state": {"running": {}}}
    assert container_id(raw(side, RUNNING)) == ("aitj-0", "abc123")


@pytest.mark.parametrize(
    ("status", "said"),
    [
        ({**RUNNING, "containerID": "docker://abc"}, "no containerd id"),
        ({**RUNNING, "state": {"waiting": {}}}, "not running"),
        ({"name": "side"}, "no status yet"),
    ],
)
def test_a_container_that_cannot_be_killed_says_why(status: dict[str, Any], said: str) -> None:
    with pytest.raises(CannotKill, match=said):
        container_id(raw(status))


def test_a_pod_not_on_a_local_real_node_is_refused_clearly() -> None:
    with pytest.raises(
        CannotKill, match=r"node node-a, not a real node of the local testbed.*needs the node's containerd"
    ):
        kill(None, raw(RUNNING, node_name="node-a"))


def test_the_kill_fault_runs_only_when_asked_for_by_name() -> None:
    everything = Allowed(local=True, drain=True, operator_pod=True, operator_process=True)
    assert FaultKind.KILL not in available(everything)
    assert FaultKind.KILL in available(Allowed(), (FaultKind.KILL,))


# The ladder of tests/e2e/real/test_inplace.py: in place twice in 600 s, then a new pod.
IN_PLACE = dataclasses.replace(exit_rule("137", RestartScope.IN_PLACE), restart_limit=2, restart_window=600)
POD = dataclasses.replace(exit_rule("137"), source="exitCodes 137 (rule 2)", restart_limit=5)


def ladder_job(*rules: Any) -> Job:
    return seed_job(
        trainer(replicas=1, rules=rules or (IN_PLACE, POD, event_rule("nodeNotReady,PodForceDeleted")))
    )


def in_place(pod: Pod, codes: str = "137", served: bool = True) -> Pod:
    """in_place: the pod as the operator creates it for the rung (annotation, container rule)."""
    pod.raw["metadata"]["annotations"] = {ANNOTATION_IN_PLACE: codes}
    if served:
        rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [137]}}
        pod.raw["spec"]["containers"][0]["restartPolicyRules"] = [rule]
    return pod


def restarted(pod: Pod, n: int, since: float) -> Pod:
    """restarted: the kubelet restarted the pod's containers in place ``n`` times, last at ``since``."""
    status = pod.raw["status"]["containerStatuses"][0]
    status["restartCount"] = n
    status["state"] = {"running": {"startedAt": format_time(at(since))}}
    status["lastState"] = {"terminated": {"exitCode": 137, "reason": "Error"}}
    return pod


def kill_at(h: H, t: float, pod: Pod) -> H:
    n = len(h.h.faults) + 1
    uid = str(pod.raw["metadata"]["uid"])
    h.h.faults.append(
        FaultRecord(n, t, FaultKind.KILL, pod.name, jobs=(KEY,), pods=(uid,), restarts_before=0)
    )
    return h


def ladder_run(job: Job) -> tuple[H, Pod]:
    """ladder_run: 3 kills of the in-place pod (the third escalates: the operator replaces it),
    then a kill of its replacement, made while the rung is spent (no in-place rules: it fails)."""
    t0 = in_place(Pod("trainer", 0).running(node="real-node-0"))
    h = H().node(0, node("real-node-0")).job(0, job).pod(1, t0)
    kill_at(h, 10, t0).pod(12, restarted(t0.copy(), 1, 12))
    kill_at(h, 20, t0).pod(22, restarted(t0.copy(), 2, 22))
    kill_at(h, 30, t0).pod(32, restarted(t0.copy(), 3, 32))
    gone = restarted(t0.copy(), 3, 32).deleted(33)
    t1 = Pod("trainer", 0, generation=1).running(node="real-node-0")
    h.pod(33, gone).pod(34, t1)
    kill_at(h, 40, t1).pod(41, t1.copy().exited(137))
    t2 = Pod("trainer", 0, generation=2).running(node="real-node-0")
    h.pod(42, t1.copy().exited(137).deleted(42)).pod(43, t2)
    return h, t0


def test_kills_restart_in_place_while_the_rung_has_budget_then_the_next_rule_replaces_the_pod() -> None:
    h, _ = ladder_run(ladder_job())
    expected = expected_restarts(h.end(60))
    assert expected.counts[KEY]["trainer"] == 2, (
        "two replacements: the escalated kill, the kill of the new pod"
    )
    assert [c.rung for c in expected.in_place[KEY]] == [
        "rule 1 (InPlace) 1 of 2 in 600 s",
        "rule 1 (InPlace) 2 of 2 in 600 s",
    ]
    calls = [(c.generation, c.restart, c.why, c.scope) for c in expected.failures[KEY]]
    assert calls == [
        (0, True, "exitCodes 137", RestartScope.IN_PLACE),
        (0, True, "exitCodes 137", RestartScope.IN_PLACE),
        (0, True, "exitCodes 137 (rule 2)", RestartScope.POD),  # escalated: the rung is spent
        (1, True, "exitCodes 137 (rule 2)", RestartScope.POD),  # made without in-place rules
    ]


def test_restart_count_is_exact_across_in_place_restarts_and_replacements() -> None:
    h, _ = ladder_run(ladder_job())
    expected = expected_restarts(h.end(60))
    assert not expected.stood(KEY)
    history = h.job(50, ladder_job(), RestartCount={"trainer": 2}).end(60)
    assert restart_counts(history, expected_restarts(history)).violations == []
    wrong = ladder_run(ladder_job())[0].job(50, ladder_job(), RestartCount={"trainer": 4}).end(60)
    (v,) = restart_counts(wrong, expected_restarts(wrong)).violations
    assert v.message == "RestartCount.trainer is 4, the faults called for 2"


def test_the_rungs_window_frees_its_budget() -> None:
    t0 = in_place(Pod("trainer", 0).running(node="real-node-0"))
    h = H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0)
    kill_at(h, 10, t0).pod(12, restarted(t0.copy(), 1, 12))
    kill_at(h, 20, t0).pod(22, restarted(t0.copy(), 2, 22))
    kill_at(h, 611, t0).pod(613, restarted(t0.copy(), 3, 613))  # the first charge is 601 s old
    expected = expected_restarts(h.end(700))
    assert expected.counts[KEY]["trainer"] == 0
    assert [c.rung for c in expected.in_place[KEY]][-1] == "rule 1 (InPlace) 2 of 2 in 600 s"


def test_a_kill_of_a_pod_without_an_in_place_rule_is_an_exit_code_137_failure() -> None:
    job = ladder_job(exit_rule("137"), event_rule("nodeNotReady,PodForceDeleted"))
    t0 = Pod("trainer", 0).running(node="real-node-0")
    h = H().node(0, node("real-node-0")).job(0, job).pod(1, t0)
    kill_at(h, 10, t0).pod(11, t0.copy().exited(137))
    expected = expected_restarts(h.end(60))
    assert (expected.counts[KEY]["trainer"], expected.in_place) == (1, {})
    # Nor is one whose cluster dropped the rules (annotation, no rule): replaced, charged to the rung.
    t0 = in_place(Pod("trainer", 0).running(node="real-node-0"), served=False)
    h = H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0)
    kill_at(h, 10, t0).pod(11, t0.copy().exited(137))
    expected = expected_restarts(h.end(60))
    assert (expected.counts[KEY]["trainer"], expected.in_place) == (1, {})
    assert [(c.why, c.scope) for c in expected.failures[KEY]] == [("exitCodes 137", RestartScope.POD)]


def kept(h: History) -> tuple[list[str], list[float | None]]:
    check, seen = kept_in_place(h, expected_restarts(h), 90)
    return [v.message for v in check.violations], [s.seconds for s in seen]


def test_an_in_place_restart_keeps_the_pod_and_its_node_and_is_timed() -> None:
    h, _ = ladder_run(ladder_job())
    assert kept(h.end(60)) == ([], [2.0, 2.0])


def test_a_kill_restarted_in_place_whose_pod_is_replaced_or_never_restarts_is_reported() -> None:
    t0 = in_place(Pod("trainer", 0).running(node="real-node-0"))
    h = H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0)
    second = Pod("trainer", 0, generation=1).running(node="real-node-0")
    kill_at(h, 10, t0).pod(12, second)
    assert kept(h.end(60))[0] == [
        f"pod {t0.name}: a second pod {second.name} for its index after a kill restarted in place"
    ]
    h = H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0)
    kill_at(h, 10, t0)
    assert kept(h.end(60))[0] == [
        f"pod {t0.name}: not seen Running again in place within 90s of the kill "
        "(rule 1 (InPlace) 1 of 2 in 600 s)"
    ]
    h = H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0)
    moved = restarted(t0.copy(), 1, 12)
    moved.raw["spec"]["nodeName"] = "real-node-1"
    kill_at(h, 10, t0).pod(12, moved)
    assert kept(h.end(60))[0] == [
        f"pod {t0.name}: on node real-node-1, not real-node-0, after an in-place restart"
    ]


def entry(scope: str) -> dict[str, Any]:
    return {"replica": "trainer", "index": 0, "scope": scope}


def test_the_status_in_place_entries_match_the_in_place_restarts_called_for() -> None:
    h, _ = ladder_run(ladder_job())
    good = [entry("InPlace"), entry("InPlace"), entry("Pod"), entry("Pod")]
    history = h.job(50, ladder_job(), restarts=good).end(60)
    check = in_place_entries(history, expected_restarts(history))
    assert (check.checks, check.violations) == (1, [])
    h, _ = ladder_run(ladder_job())
    history = h.job(50, ladder_job(), restarts=good[1:]).end(60)
    (v,) = in_place_entries(history, expected_restarts(history)).violations
    assert v.message == "1 new status.restarts entries of scope InPlace, the kills called for 2"


def test_a_kill_lasts_until_its_pod_is_seen_restarted_in_place_or_failed() -> None:
    """No other fault hits the job while the kubelet restarts the containers."""
    ctx = Context(api=None, local=None, operators=None, kill_hold=60)  # type: ignore[arg-type]
    t0 = in_place(Pod("trainer", 0).running(node="real-node-0"))
    h = H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0)
    rec = kill_at(h, 10, t0).h.faults[-1]
    assert not heal(ctx, replayed(h.end(11)), rec, 11)
    h.pod(12, restarted(t0.copy(), 1, 12))
    assert heal(ctx, replayed(h.end(12)), rec, 12) and rec.effect == 12
    failed = kill_at(H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0), 10, t0)
    rec = failed.pod(11, t0.copy().exited(137)).h.faults[-1]
    assert heal(ctx, replayed(failed.end(11)), rec, 11)
    stuck = kill_at(H().node(0, node("real-node-0")).job(0, ladder_job()).pod(1, t0), 10, t0)
    rec = stuck.h.faults[-1]
    assert not heal(ctx, replayed(stuck.end(20)), rec, 20) and heal(ctx, replayed(stuck.end(71)), rec, 71)


def test_the_kill_fault_is_refused_against_a_cluster_that_is_not_the_local_testbed(tmp_path: Path) -> None:
    config = str(staging_kubeconfig(tmp_path))
    result = CliRunner().invoke(main, ["chaos", "--kubeconfig", config, "--fault", "kill", "--dry-run"])
    assert result.exit_code == 2 and "--fault kill needs the local testbed's real nodes" in result.output
