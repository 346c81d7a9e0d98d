"""``aitj chaos --dry-run`` prints the schedule and does nothing; against a cluster that is not
the local control plane it lists only the faults any cluster allows."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from aitj.cli import main
from aitj.tools.chaos.main import Settings, allowed, options
from aitj.tools.chaos.schedule import ANY_CLUSTER, LOCAL_ONLY, Allowed, FaultKind


def staging_kubeconfig(tmp_path: Path) -> Path:
    """staging_kubeconfig: a kubeconfig naming a remote apiserver (never contacted)."""
    path = tmp_path / "staging.kubeconfig"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "staging", "cluster": {"server": "https://staging.example.invalid:6443"}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [
            {"name": "staging", "context": {"cluster": "staging", "user": "me", "namespace": "team-a"}}
        ],
        "current-context": "staging",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def dry_run(*args: str) -> str:
    result = CliRunner().invoke(main, ["chaos", "--dry-run", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_dry_run_against_a_remote_cluster_lists_only_faults_any_cluster_allows(tmp_path: Path) -> None:
    out = dry_run("--kubeconfig", str(staging_kubeconfig(tmp_path)), "--allow-drain", "--duration", "300")
    listed = {k for k in FaultKind if f"  {k}\n" in out}
    assert listed == set(ANY_CLUSTER)
    assert not listed & set(LOCAL_ONLY)
    assert "not the local control plane" in out


def test_a_dry_run_prints_the_same_schedule_for_the_same_seed(tmp_path: Path) -> None:
    config = str(staging_kubeconfig(tmp_path))
    first = dry_run("--kubeconfig", config, "--seed", "5", "--max-faults", "8")
    assert first == dry_run("--kubeconfig", config, "--seed", "5", "--max-faults", "8")
    assert first.count("t+") == 8


def test_two_operators_without_leader_election_are_refused(tmp_path: Path) -> None:
    config = str(staging_kubeconfig(tmp_path))
    result = CliRunner().invoke(main, ["chaos", "--kubeconfig", config, "--operators", "2", "--dry-run"])
    assert result.exit_code == 2
    assert "--leader-elect" in result.output


@pytest.mark.parametrize(
    ("operators", "pid_file", "local", "pod", "process"),
    [
        pytest.param(0, None, False, True, False, id="a remote cluster's operator pod"),
        pytest.param(0, None, True, False, False, id="a local cluster and no operator named"),
        pytest.param(2, None, True, False, True, id="the operators the command runs"),
        pytest.param(0, Path("op.pid"), True, False, True, id="an operator named by its pid file"),
        pytest.param(0, Path("op.pid"), False, False, False, id="a pid file, but not the local cluster"),
    ],
)
def test_the_operator_faults_follow_where_the_operator_runs(
    operators: int, pid_file: Path | None, local: bool, pod: bool, process: bool
) -> None:
    s = Settings(operators=operators, leader_elect=True, operator_pid_file=pid_file, allow_drain=True)
    assert allowed(s, local) == Allowed(local=local, drain=True, operator_pod=pod, operator_process=process)


def test_the_loop_keeps_faults_half_an_interval_apart_and_the_recovery_bound() -> None:
    opts = options(Settings(namespace="ns", interval=10, recovery_bound=30, delete_jobs=True), [])
    assert (opts.namespace, opts.plan, opts.min_gap, opts.bounds.recovery, opts.delete_jobs) == (
        "ns",
        (),
        5,
        30,
        True,
    )


@pytest.mark.parametrize(
    ("args", "faults"),
    [(("--duration", "60s", "--interval", "15s"), 3), (("--duration", "1m", "--interval", "15"), 3)],
)
def test_durations_are_written_as_kubectl_writes_them(
    tmp_path: Path, args: tuple[str, ...], faults: int
) -> None:
    out = dry_run("--kubeconfig", str(staging_kubeconfig(tmp_path)), *args)
    assert f"{faults} faults over 60s" in out, out


def test_a_duration_too_short_is_a_usage_error(tmp_path: Path) -> None:
    config = str(staging_kubeconfig(tmp_path))
    result = CliRunner().invoke(main, ["chaos", "--kubeconfig", config, "--duration", "0.5s", "--dry-run"])
    assert result.exit_code == 2 and "shorter than 1s" in result.output
