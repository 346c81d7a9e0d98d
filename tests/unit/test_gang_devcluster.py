"""The local control plane's native gang scheduling (aitj.devcluster.config; docs/gang.md):
which component gets which flag on each Kubernetes release, and which scheduler profile
gang-schedules."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitj.core.render import gang
from aitj.devcluster.config import (
    GANG_SCHEDULER,
    NATIVE_GANG,
    SCHEDULER_NAMES,
    ClusterConfig,
    Ports,
    commands,
    gang_flags,
    gang_on,
    native_gang,
    scheduler_config,
)
from aitj.devcluster.versions import KUBERNETES, KUBERNETES_RELEASES


def command_lines(config: ClusterConfig) -> dict[str, list[str]]:
    state = Path("/state")
    return commands(state, config, Ports.from_base(16443), state / "sched.yaml", state / "kwok.yaml")


@pytest.mark.parametrize(
    ("release", "gates", "served"),
    [
        (
            "v1.37.2",
            "--feature-gates=GenericWorkload=true",
            "--runtime-config=scheduling.k8s.io/v1beta1=true",
        ),
        (
            "v1.36.3",
            "--feature-gates=GenericWorkload=true,GangScheduling=true",
            "--runtime-config=scheduling.k8s.io/v1alpha2=true",
        ),
    ],
)
def test_each_release_gets_its_own_gates_and_api_version(release: str, gates: str, served: str) -> None:
    assert gang_flags(ClusterConfig(), release=release) == [gates]
    assert gang_flags(ClusterConfig(), release=release, runtime_config=True) == [gates, served]


def test_1_35_has_no_gang_the_operator_uses_so_its_cluster_runs_without() -> None:
    assert native_gang("v1.35.4") is None
    assert gang_flags(ClusterConfig(), release="v1.35.4", runtime_config=True) == []
    assert not gang_on(ClusterConfig(), "v1.35.4")
    assert gang_on(ClusterConfig(), "v1.37.2") and not gang_on(ClusterConfig(gang=False), "v1.37.2")


def test_every_version_the_devcluster_serves_is_one_the_operator_speaks() -> None:
    assert {g.api_version for g in NATIVE_GANG.values()} == {gang.api_version(v) for v in gang.VERSIONS}
    assert set(NATIVE_GANG) <= {r.removeprefix("v").rsplit(".", 1)[0] for r in KUBERNETES_RELEASES}


def test_the_gates_go_to_every_control_plane_component_and_the_api_to_the_apiserver() -> None:
    found = native_gang(KUBERNETES)
    assert found is not None  # the default release gang-schedules
    gates, served = f"--feature-gates={found.feature_gates}", f"--runtime-config={found.api_version}=true"
    lines = command_lines(ClusterConfig())
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert gates in lines[component], component
    assert served in lines["kube-apiserver"]
    assert all(served not in lines[c] for c in lines if c != "kube-apiserver")


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
