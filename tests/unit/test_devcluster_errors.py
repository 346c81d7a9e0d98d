"""Bad input to the local control plane gets a clear message and a non-zero exit."""

from __future__ import annotations

import dataclasses
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from aitj.cli import main
from aitj.devcluster import build
from aitj.devcluster.cluster import Ports, free_base
from aitj.devcluster.config import EPHEMERAL_PORTS_START
from aitj.devcluster.versions import ETCD_COMPONENT


def test_cluster_up_on_a_taken_port_names_the_port_and_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AITJ_STATE", str(tmp_path))
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        # Make the taken port the scheduler's (base + 4) so the check must look past the first.
        result = CliRunner().invoke(
            main, ["dev", "cluster", "up", "--name", "ports", "--base-port", str(taken - 4)]
        )
    assert result.exit_code != 0
    assert f"port {taken}" in result.output
    assert "kube-scheduler" in result.output
    assert "--base-port" in result.output
    assert Ports.from_base(taken - 4).scheduler == taken


def test_building_without_go_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AITJ_CACHE", str(tmp_path / "cache"))  # nothing built yet
    monkeypatch.setenv("PATH", str(tmp_path))  # and no go on PATH
    result = CliRunner().invoke(main, ["dev", "cluster", "build"])
    assert result.exit_code != 0
    assert "Go is not installed" in result.output
    assert "1.26" in result.output


@pytest.mark.skipif(shutil.which("go") is None, reason="needs go")
def test_a_failed_build_shows_the_tail_of_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AITJ_CACHE", str(tmp_path / "cache"))
    module = tmp_path / "broken"
    module.mkdir()
    (module / "go.mod").write_text("module example.local/broken\n\ngo 1.22\n")
    (module / "main.go").write_text("package main\n\nfunc main() { this is not go }\n")
    broken = dataclasses.replace(
        ETCD_COMPONENT, name="broken", module_dir=module, packages=("example.local/broken",)
    )
    with pytest.raises(build.BuildError) as failed:
        build.build(broken, say=lambda _m: None)
    message = str(failed.value)
    assert "building broken" in message
    assert "main.go:3" in message  # the compiler's own words, from the log's tail
    assert not broken.bin_dir.exists()  # a failed build never looks complete


def test_a_free_base_keeps_every_port_below_the_ephemeral_range() -> None:
    base = free_base(17443)
    ports = Ports.from_base(base).by_component().values()
    assert base >= 17443 and all(p < EPHEMERAL_PORTS_START for p in ports)
