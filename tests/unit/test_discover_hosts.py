"""discover_hosts.sh, run with /bin/sh on the rendered ConfigMap laid out as the kubelet does.

The kubelet writes a ConfigMap volume as a timestamped directory, a ``..data`` symlink to it,
and one symlink per key (``hosts -> ..data/hosts``); an update writes a new directory and swaps
``..data``. The files here are laid out the same way, with the volume's defaultMode (0755).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aitj.core import naming
from aitj.core.render import render_discovery_configmap
from tests.unit.builders import seed_job

# The seed job (name test-horovod-elastic, discovery on).
JOB = seed_job()


def trainer(part: str, index: int) -> str:
    return naming.pod_host(JOB.name, f"test-horovod-elastic-trainer-{part}-{index}")


def mount(volume: Path, hosts: list[tuple[str, int]], version: int) -> None:
    """mount writes (or atomically replaces) the ConfigMap's files the way the kubelet does."""
    data = volume / f"..2026_01_01_00_00_0{version}"
    data.mkdir(parents=True)
    for key, text in render_discovery_configmap(JOB, hosts)["data"].items():
        (data / key).write_text(text)
        (data / key).chmod(0o755)
        if not (volume / key).is_symlink():
            (volume / key).symlink_to(f"..data/{key}")
    tmp = volume / "..data_tmp"
    tmp.symlink_to(data.name)
    os.replace(tmp, volume / "..data")


def run(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True)
    assert proc.stderr == ""
    return proc.stdout


def horovod_parse(output: str) -> dict[str, int]:
    """horovod_parse reads the output as horovod.runner.elastic.discovery.HostDiscoveryScript does."""
    slots = {}
    for line in set(output.strip().split("\n")):
        if line:
            host, count = line.split(":")
            slots[host] = int(count)
    return slots


HOST_LISTS = [
    pytest.param([], id="no Running trainers prints nothing"),
    pytest.param([(trainer("q7gmp", 0), 1)], id="one trainer"),
    pytest.param(
        [(trainer("q7gmp", 0), 1), (trainer("htbz4", 1), 1), (trainer("x2bcd", 2), 1)],
        id="the seed's three trainers",
    ),
    pytest.param([(trainer("q7gmp", 0), 8), (trainer("htbz4", 1), 4)], id="slots follow each pod's GPUs"),
]


@pytest.mark.parametrize("hosts", HOST_LISTS)
@pytest.mark.parametrize(
    "how",
    [
        pytest.param("sh", id="run by /bin/sh"),
        pytest.param("exec", id="run by its path as horovodrun does"),
        pytest.param("relative", id="run from its own directory"),
    ],
)
def test_prints_exactly_the_hosts(tmp_path: Path, hosts: list[tuple[str, int]], how: str) -> None:
    edl = tmp_path / "etc" / "edl"
    mount(edl, hosts, 1)
    script = edl / "discover_hosts.sh"
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    argv, cwd = {
        "sh": (["/bin/sh", str(script)], elsewhere),
        "exec": ([str(script)], elsewhere),
        "relative": (["./discover_hosts.sh"], edl),
    }[how]
    out = run(argv, cwd)
    assert out == "".join(f"{host}:{slots}\n" for host, slots in hosts)
    assert horovod_parse(out) == dict(hosts)


def test_an_updated_configmap_is_seen_by_the_unchanged_script(tmp_path: Path) -> None:
    edl = tmp_path / "edl"
    mount(edl, [(trainer("q7gmp", 0), 1), (trainer("htbz4", 1), 1)], 1)
    script_before = (edl / "discover_hosts.sh").read_text()
    assert run(["/bin/sh", str(edl / "discover_hosts.sh")], tmp_path).count("\n") == 2

    mount(edl, [(trainer("q7gmp", 0), 1), (trainer("htbz4", 1), 1), (trainer("x2bcd", 2), 1)], 2)
    assert (edl / "discover_hosts.sh").read_text() == script_before
    out = run(["/bin/sh", str(edl / "discover_hosts.sh")], tmp_path)
    assert out.splitlines() == [f"{trainer(p, i)}:1" for i, p in enumerate(["q7gmp", "htbz4", "x2bcd"])]


def test_a_missing_hosts_file_is_an_error_not_an_empty_list(tmp_path: Path) -> None:
    edl = tmp_path / "edl"
    mount(edl, [], 1)
    (edl / "hosts").unlink()
    proc = subprocess.run(["/bin/sh", str(edl / "discover_hosts.sh")], capture_output=True, text=True)
    assert proc.returncode != 0
    assert proc.stdout == ""
