"""The example the demo applies is the CCE seed manifest, byte for byte."""

from __future__ import annotations

import pytest
import yaml

from aitj.core.api import parse_job
from tests.seeds import REPO, SEED_MANIFEST

EXAMPLE = REPO / "manifests" / "examples" / "horovod-elastic.yaml"


@pytest.mark.skipif(not SEED_MANIFEST.exists(), reason="shared/seeds is not beside this checkout")
def test_the_demo_example_is_the_seed_manifest_unchanged() -> None:
    assert EXAMPLE.read_bytes() == SEED_MANIFEST.read_bytes()


def test_the_demo_example_parses() -> None:
    job = parse_job(
        yaml.safe_load(EXAMPLE.read_text()) | {"metadata": {"name": "test-horovod-elastic", "uid": "u"}}
    )
    assert [r.name for r in job.spec.replicas] == ["trainer", "launcher"]
