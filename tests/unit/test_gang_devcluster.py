"""The local control plane's native gang scheduling (aitj.devcluster.config; docs/gang.md):
which component gets which flag, and which scheduler profile gang-schedules."""

from __future__ import annotations

from pathlib import Path

from aitj.devcluster.config import (
    GANG_API_VERSION,
    GANG_FEATURE_GATES,
    GANG_SCHEDULER,
    SCHEDULER_NAMES,
    ClusterConfig,
    Ports,
    commands,
    scheduler_config,
)

GATES = f"--feature-gates={GANG_FEATURE_GATES}"
RUNTIME = f"--runtime-config={GANG_API_VERSION}=true"


def command_lines(config: ClusterConfig) -> dict[str, list[str]]:
    state = Path("/state")
    return commands(state, config, Ports.from_base(16443), state / "sched.yaml", state / "kwok.yaml")


def test_the_gates_go_to_every_control_plane_component_and_the_alpha_api_to_the_apiserver() -> None:
    lines = command_lines(ClusterConfig())
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert GATES in lines[component], component
    assert RUNTIME in lines["kube-apiserver"]
    assert all(RUNTIME not in lines[c] for c in lines if c != "kube-apiserver")
    assert "GenericWorkload=true" in GATES and "GangScheduling=true" in GATES
    assert GANG_API_VERSION == "scheduling.k8s.io/v1alpha2"


def test_a_cluster_without_gang_gets_no_gate_and_serves_no_gang_api() -> None:
    lines = command_lines(ClusterConfig(gang=False))
    assert not any(
        a.startswith(("--feature-gates", "--runtime-config")) for argv in lines.values() for a in argv
    )
    profiles = scheduler_config(Path("k"), gang=False)["profiles"]
    assert profiles == [{"schedulerName": n} for n in SCHEDULER_NAMES]


def test_only_the_volcano_profile_gang_schedules() -> None:
    profiles = {p["schedulerName"]: p for p in scheduler_config(Path("k"))["profiles"]}
    assert GANG_SCHEDULER == "volcano" and set(profiles) == set(SCHEDULER_NAMES)
    assert "plugins" not in profiles["volcano"]  # the defaults: GangScheduling on with its gate
    assert profiles["default-scheduler"]["plugins"] == {
        "multiPoint": {"disabled": [{"name": "GangScheduling"}]}
    }
