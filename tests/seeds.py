"""Where the seed documents are: ``shared/`` stands beside the repository checkout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO.parent / "shared" / "seeds"
SEED_MANIFEST = SEEDS / "001_e4b904c7b850aaa5.aitrainingjob.yaml"


def seed_job() -> dict[str, Any]:
    """seed_job is the seed's AITrainingJob as a dict (a fresh copy each call)."""
    doc: dict[str, Any] = yaml.safe_load(SEED_MANIFEST.read_text())
    return doc
