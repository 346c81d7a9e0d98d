"""The operator image: this repository's Dockerfile, built by buildah (no Docker engine here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aitj.devcluster.build import BuildError


def build(
    context: Path, base_layout: Path, layout: Path, tag: str, *, log_path: Path, say: Callable[[str], None]
) -> None:
    raise BuildError("building the operator image is not done yet")
