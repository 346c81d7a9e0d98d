"""A job's pods are the ones it made (issue 24): controlled by the job and named as the operator
names them. A pod that only carries the job's labels (anyone who may create pods in the
namespace can set them) is counted for nothing: it supersedes no pod, joins no host list, ends
no job and brings no restart ledger; it only gets back the operator's finalizer if it has it."""

from __future__ import annotations

import json

import pytest

from aitj.core.api import LABEL_INDEX
from aitj.core.observed import ANNOTATION_LEDGER, TRACKING_FINALIZER
from aitj.core.planner import plan
from aitj.core.planner.core import owned_by
from tests.unit.builders import Cluster, Pod, at, name_of, node, running_seed, seed_job

TRAINER0 = name_of("trainer", 0)


def running() -> Cluster:
    """running: the seed job with every pod Running, as the operator made them."""
    cluster = Cluster(seed_job(), running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def bare(replica: str, index: int, generation: int = 0, *, name: str | None = None) -> Pod:
    """bare: a pod labelled as the job's (``replica``, ``index``, ``generation``) that the job
    did not make: no ownerReference, any name."""
    pod = Pod(replica, index, generation)
    del pod.raw["metadata"]["ownerReferences"]
    pod.raw["metadata"]["name"] = name or f"intruder-{replica}-{index}"
    return pod


def test_a_bare_pod_of_a_later_generation_supersedes_nothing_and_joins_no_host_list() -> None:
    cluster = running()
    intruder = bare("trainer", 0, generation=7).running(20)
    pods = [*cluster.pods.values(), intruder]
    result = plan(cluster.job, [p.view() for p in pods], {"node-a": node()}, at(21))
    assert result.deletes == () and result.creates == ()
    assert intruder.name in result.release  # it had the operator's finalizer: let go
    # The host list is unchanged: nothing rewritten, no one new in it.
    assert result.discovery is None and result.hosts is None


def test_a_succeeded_bare_pod_labelled_as_the_launcher_does_not_end_the_job() -> None:
    cluster = running()
    intruder = bare("launcher", 0).exited(0, finished=20)
    pods = [*cluster.pods.values(), intruder]
    result = plan(cluster.job, [p.view() for p in pods], {"node-a": node()}, at(21))
    assert result.outcome is None and result.deletes == ()


def test_a_bare_pod_with_a_restart_ledger_stamp_restarts_nothing() -> None:
    cluster = running()
    intruder = bare("trainer", 1).running(20)
    intruder.raw["metadata"]["annotations"] = {ANNOTATION_LEDGER: json.dumps({"trainer": {"epoch": 5}})}
    pods = [*cluster.pods.values(), intruder]
    result = plan(cluster.job, [p.view() for p in pods], {"node-a": node()}, at(21))
    assert result.deletes == () and result.creates == () and result.restarts == ()


@pytest.mark.parametrize(
    ("change", "mine"),
    [
        pytest.param(lambda raw: None, True, id="made by the job, named by the operator"),
        pytest.param(lambda raw: raw["metadata"].pop("ownerReferences"), False, id="no owner"),
        pytest.param(
            lambda raw: raw["metadata"]["ownerReferences"][0].update(uid="other"), False, id="another owner"
        ),
        pytest.param(
            lambda raw: raw["metadata"]["ownerReferences"][0].update(controller=False),
            False,
            id="owned but not controlled",
        ),
        pytest.param(
            lambda raw: raw["metadata"].update(name="test-horovod-elastic-trainer-aaaaa-0"),
            False,
            id="a name the operator would not give it",
        ),
        pytest.param(
            lambda raw: raw["metadata"]["labels"].update({LABEL_INDEX: "1"}),
            False,
            id="labels that do not match its name",
        ),
    ],
)
def test_owned_by(change: object, mine: bool) -> None:
    pod = Pod("trainer", 0)
    assert callable(change)
    change(pod.raw)
    assert owned_by(seed_job(), pod.view()) is mine


def test_a_bare_pod_without_the_finalizer_is_left_alone() -> None:
    cluster = running()
    intruder = bare("trainer", 2).running(20)
    intruder.raw["metadata"]["finalizers"].remove(TRACKING_FINALIZER)
    pods = [*cluster.pods.values(), intruder]
    result = plan(cluster.job, [p.view() for p in pods], {"node-a": node()}, at(21))
    assert intruder.name not in result.release and result.deletes == ()
