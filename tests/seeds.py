"""The seed manifest, from the repository itself: ``manifests/examples/horovod-elastic.yaml`` is the
CCE seed's AITrainingJob byte for byte (tests/unit/test_examples.py pins it). Nothing in the
project reads files outside its own tree: people clone the repository alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SEED_MANIFEST = REPO / "manifests" / "examples" / "horovod-elastic.yaml"


def seed_job() -> dict[str, Any]:
    """seed_job is the seed's AITrainingJob as a dict (a fresh copy each call)."""
    doc: dict[str, Any] = yaml.safe_load(SEED_MANIFEST.read_text())
    return doc
