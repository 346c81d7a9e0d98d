"""torchrun elastic on real nodes: manifests/examples/torchrun.yaml as it is, but for its name and
a training that ends on request. Its launcher hosts the c10d rendezvous store and runs torchrun
on every listed trainer over ssh; a trainer lost or added changes the rendezvous' membership,
torchrun's agents restart their workers, and train.py resumes from its checkpoints
(docs/training.md). The workers' lines come back through the ssh sessions, so the test reads
them from the launcher's log: training heals from a force-deleted trainer and from a scale 3 to
5 to 3 at full width, redoing at most a checkpoint interval per re-forming, and, asked to
finish once they are over, succeeds. Times are printed (pytest -s), never asserted."""

from __future__ import annotations

import pytest

from tests.clusters import KubeCluster
from tests.e2e.real.training import OUTLASTS_FAULTS, example_job, heals_through_faults
from tests.operator_process import OperatorProcess

pytestmark = pytest.mark.e2e

CHECKPOINT_EVERY = 20  # train.py's default --checkpoint-every


def test_torchrun_trains_through_a_lost_trainer_and_a_scale_out_and_in_resuming_from_checkpoints(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    doc = example_job("torchrun.yaml", "torchrun", steps=OUTLASTS_FAULTS)
    heals_through_faults(
        real_cluster, real_namespace, doc, checkpoint_every=CHECKPOINT_EVERY, heal_seconds=120
    )
