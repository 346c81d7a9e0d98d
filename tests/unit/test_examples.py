"""The example the demo applies is the CCE seed manifest, byte for byte."""

from __future__ import annotations

import hashlib

import yaml

from aitj.core.api import parse_job
from tests.seeds import SEED_MANIFEST

# sha256 of the CCE seed document's AITrainingJob manifest (its indentation restored), as users
# copy it: CCE manifests must apply unchanged, so the example must never be edited.
SEED_SHA256 = "9bae69bbe193e28284741d3f5efe4a19163948f325eecdc0365e4a6c77a048fc"


def test_the_demo_example_is_the_seed_manifest_unchanged() -> None:
    assert hashlib.sha256(SEED_MANIFEST.read_bytes()).hexdigest() == SEED_SHA256


def test_the_demo_example_parses() -> None:
    job = parse_job(
        yaml.safe_load(SEED_MANIFEST.read_text()) | {"metadata": {"name": "test-horovod-elastic", "uid": "u"}}
    )
    assert [r.name for r in job.spec.replicas] == ["trainer", "launcher"]
