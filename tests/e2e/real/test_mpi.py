"""MPI in the Volcano seed's style on real nodes: manifests/examples/mpi.yaml as it is, but for
its name and a training that ends on request. Its launcher runs ``mpiexec --host
<trainer.host>`` in a loop that starts mpiexec again on the trainers listed whenever the list
changes or mpiexec fails, and train.py resumes from its checkpoints (docs/training.md). The
test reads the training's own lines from the launcher's log: it trains, heals from a
force-deleted trainer and from a scale 3 to 5 to 3 at full width, redoing at most a checkpoint
interval per restart, and, asked to finish once they are over, succeeds. Times are printed
(pytest -s), never asserted, and so is how fast the launcher saw its host file change after the
force delete."""

from __future__ import annotations

import pytest

from aitj.tools.trainbench.timeline import runtime_time
from tests.clusters import KubeCluster
from tests.e2e.real.training import OUTLASTS_FAULTS, example_job, heals_through_faults
from tests.operator_process import OperatorProcess

pytestmark = pytest.mark.e2e

CHECKPOINT_EVERY = 20  # train.py's default --checkpoint-every


def test_mpi_trains_through_a_lost_trainer_and_a_scale_out_and_in_resuming_from_checkpoints(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    doc = example_job("mpi.yaml", "mpi", steps=OUTLASTS_FAULTS)
    run = heals_through_faults(
        real_cluster, real_namespace, doc, checkpoint_every=CHECKPOINT_EVERY, heal_seconds=120
    )
    # How fast the host file reaches the running launcher (docs/training.md): the loop prints a
    # line when it sees the file change; the lost trainer leaves the list at once.
    fault = run.recoveries[0].fault.t
    seen = [
        runtime_time(line.split()[0])
        for line in run.log().splitlines()
        if "trainers changed:" in line and runtime_time(line.split()[0]) > fault
    ]
    print(f"mpi: the launcher saw trainer.host change {min(seen) - fault:.2f}s after the force delete")
