"""The example the demo applies is the CCE seed manifest, byte for byte; the MPI and torchrun
examples (docs/training.md) parse and run our training image."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from aitj.core.api import parse_job
from aitj.devcluster.images.specs import TRAIN
from tests.seeds import REPO, SEED_MANIFEST

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


@pytest.mark.parametrize(("file", "framework"), [("mpi.yaml", "mpi"), ("torchrun.yaml", "pytorch")])
def test_the_training_examples_parse_and_run_the_train_image(file: str, framework: str) -> None:
    doc = yaml.safe_load((REPO / "manifests" / "examples" / file).read_text())
    job = parse_job(doc | {"metadata": {"name": doc["metadata"]["name"], "uid": "u"}})
    assert job.spec.framework_type == framework
    assert {r.name for r in job.spec.replicas} == {"trainer", "launcher"}
    images = {
        c["image"] for r in doc["spec"]["replicaSpecs"].values() for c in r["template"]["spec"]["containers"]
    }
    assert images == {TRAIN.ref}
