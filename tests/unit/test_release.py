"""``make release VERSION=x.y.z`` (hack/release.py): a version or an image name it cannot put in
the artifacts is refused with one line saying what to give, before anything is built.
tests/e2e/test_chart.py makes a release and applies it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.seeds import REPO

RELEASE = REPO / "hack" / "release.py"


def release(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RELEASE), *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param([], "VERSION is missing: make release VERSION=x.y.z", id="no version"),
        pytest.param(["--version", "v1.2.3"], "VERSION 'v1.2.3' is not x.y.z", id="a leading v"),
        pytest.param(["--version", "1.2"], "VERSION '1.2' is not x.y.z", id="two numbers"),
        pytest.param(["--version", "01.2.3"], "is not x.y.z", id="a leading zero"),
        pytest.param(
            ["--version", "1.2.3+build.5"], "no build metadata", id="build metadata, no tag holds a +"
        ),
        pytest.param(
            ["--version", "1.2.3", "--image-repo", "registry.example.com/aitj:1.2.3"],
            "IMAGE_REPO 'registry.example.com/aitj:1.2.3' is not an image name without a tag",
            id="an image repository with a tag",
        ),
    ],
)
def test_a_release_refuses_what_it_cannot_pin_with_one_line(
    args: list[str], said: str, tmp_path: Path
) -> None:
    refused = release(*args, "--out", str(tmp_path))
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert line.startswith("make release: ") and said in line, line


@pytest.mark.parametrize("version", ["0.2.0", "1.0.0-rc.1", "10.20.30"])
def test_semantic_versions_and_pre_releases_are_accepted(version: str) -> None:
    spec = importlib.util.spec_from_file_location("release", RELEASE)  # hack/ is not a package
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.check_version(version) == version
    assert module.check_image_repo("localhost:5000/team/aitj") == "localhost:5000/team/aitj"
