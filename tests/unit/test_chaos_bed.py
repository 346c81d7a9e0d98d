"""The jobs ``make chaos`` runs are valid AITrainingJobs whose policies restart every failure
the chaos faults cause, so their RestartCount must follow the faults one for one."""

from __future__ import annotations

import pytest

from aitj.core import api
from aitj.core.policy import Failure, FailureKind, RestartDecision, decide
from aitj.tools.chaos.bed import SELECTOR, bed_job


@pytest.mark.parametrize(
    "failure",
    [
        Failure(FailureKind.EXIT_CODE, "exit", exit_code=137),
        Failure(FailureKind.NODE_NOT_READY, "node"),
        Failure(FailureKind.POD_FORCE_DELETED, "deleted"),
        Failure(FailureKind.POD_EVICTED, "evicted"),
    ],
)
def test_the_bed_jobs_restart_every_failure_the_faults_cause(failure: Failure) -> None:
    job = api.parse_job(
        {**bed_job("chaos-0", "chaos", 6), "metadata": {"name": "chaos-0", "namespace": "chaos"}}
    )
    trainer = job.spec.replica("trainer")
    assert isinstance(decide(trainer, job.spec.fault_tolerant, failure), RestartDecision)


def test_the_bed_jobs_are_elastic_and_found_by_the_selector() -> None:
    doc = bed_job("chaos-1", "chaos", 5)
    key, value = SELECTOR.split("=")
    assert doc["metadata"]["labels"][key] == value
    trainer = api.parse_job(doc).spec.replica("trainer")
    assert (trainer.min_replicas, trainer.replicas, trainer.max_replicas) == (2, 5, 7)
