"""A crash at any step converges (issue 24, acceptance): for every kind of pass, the operator
dies after each step of carrying its Plan out, another one starts from what the cluster holds,
and the job ends up where it would have without the crash.

The kinds of pass: bring-up, a restart of each scope (Pod, Replica, All), a scale-out, a
scale-in, a scale-out back into an index whose scaled-in pod still terminates (the race of
issue 24, section 2), and the job's end. For each, the test double (builders.Cluster) walks the
Plan's steps (aitj.controller.executor.STEPS) and stops after step k, for every k; the planner
keeps no state between passes, so the next passes, planned from the cluster alone, are the
restarted operator's. Once the pods have run (and those being deleted have gone), the job
must hold:

- the discovery ConfigMap's hosts = ``status.discoveryHosts`` = the Running trainers, one per
  wanted index;
- each PodDisruptionBudget's minAvailable = what the replica's count calls for (count - 1);
- ``RestartCount`` exact: each restart counted, recorded and announced once;
- after the end (cleanPodPolicy All): no pod left.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from aitj.controller.executor import STEPS
from aitj.core import naming
from aitj.core.api import LABEL_INDEX, CleanPodPolicy, RestartScope
from aitj.core.planner import ObjectKind, ObjectRef
from tests.unit.builders import (
    JOB,
    Cluster,
    exit_rule,
    launcher,
    name_of,
    running_seed,
    seed_job,
    trainer,
    with_replica,
)

CONFIGMAP = ObjectRef(ObjectKind.CONFIGMAP, f"{JOB}-discovery")
CRASH_AT = 100  # the pass that crashes
FIELDS = [s.field for s in STEPS]


def _pdb(replica: str) -> ObjectRef:
    return ObjectRef(ObjectKind.PDB, f"{JOB}-{replica}")


def _edit(cluster: Cluster, replicas: int) -> None:
    """_edit: the user sets the trainers' replicas (metadata.generation goes up)."""
    job = with_replica(cluster.job, "trainer", replicas=replicas)
    cluster.job = dataclasses.replace(job, generation=job.generation + 1)


def _running(scope: RestartScope = RestartScope.POD, **job: Any) -> Cluster:
    """_running: the seed job (trainers restart on exit code 1 with ``scope``, max 6) running,
    its first passes done: every object written, the status Running."""
    spec = seed_job(trainer(rules=(exit_rule("1", scope),), max_replicas=6), launcher(), **job)
    cluster = Cluster(spec, running_seed())
    cluster.step(10)
    cluster.step(11)
    assert cluster.status["phase"] == "Running"
    return cluster


# ---------------------------------------------------------------------------------------------
# The kinds of pass: each sets the cluster up so that the pass at CRASH_AT is of that kind


@dataclass(frozen=True)
class Kind:
    """Kind: a kind of pass. ``setup`` returns the cluster right before it; ``replicas``: the
    trainers wanted in the end; ``restarts``: the trainers' restarts in the end; ``ends``: the
    job ends (cleanPodPolicy All)."""

    setup: Callable[[], Cluster]
    replicas: int = 3
    restarts: int = 0
    ends: bool = False


def _bring_up() -> Cluster:
    return Cluster(seed_job(trainer(rules=(exit_rule("1"),)), launcher()))


def _restart(scope: RestartScope) -> Callable[[], Cluster]:
    def setup() -> Cluster:
        cluster = _running(scope)
        cluster.pods[name_of("trainer", 1)].exited(1, finished=CRASH_AT - 1)
        return cluster

    return setup


def _scale_out() -> Cluster:
    cluster = _running()
    _edit(cluster, 4)
    return cluster


def _scale_in() -> Cluster:
    cluster = _running()
    _edit(cluster, 2)
    return cluster


def _scale_out_back() -> Cluster:
    """_scale_out_back: 3 -> 2 done (trainer-2 deleted, still terminating), then 2 -> 3."""
    cluster = _running()
    _edit(cluster, 2)
    cluster.step(20)
    cluster.step(80)  # scaleInGracePeriod 60 s: trainer-2 is deleted and terminates
    _edit(cluster, 3)
    return cluster


def _end() -> Cluster:
    cluster = _running(clean_pod_policy=CleanPodPolicy.ALL)
    cluster.pods[name_of("launcher", 0)].exited(0, finished=CRASH_AT - 1)
    return cluster


KINDS = {
    "bring-up": Kind(_bring_up),
    "restart scope Pod": Kind(_restart(RestartScope.POD), restarts=1),
    "restart scope Replica": Kind(_restart(RestartScope.REPLICA), restarts=1),
    "restart scope All": Kind(_restart(RestartScope.ALL), restarts=1),
    "scale-out": Kind(_scale_out, replicas=4),
    "scale-in": Kind(_scale_in, replicas=2),
    "scale-out while the scaled-in pod terminates": Kind(_scale_out_back),
    "end": Kind(_end, ends=True),
}


# ---------------------------------------------------------------------------------------------
# Convergence and what it must reach


def _converge(cluster: Cluster) -> None:
    """_converge: the restarted operator's passes. First a few while the pods being deleted
    still terminate (a race needs them there), then, past every grace period and scale
    deadline, with each deletion finished and each new pod running."""
    for now in range(CRASH_AT + 1, CRASH_AT + 6):
        cluster.run_all(now)
        cluster.step(now)
    for now in range(CRASH_AT + 200, CRASH_AT + 206):
        cluster.terminate_deleted()
        cluster.run_all(now)
        cluster.step(now)


def _running_trainers(cluster: Cluster) -> list[str]:
    """_running_trainers: the trainer pods that run and are not being deleted, by index."""
    names = [n for n in cluster.live("trainer") if cluster.pods[n].raw["status"]["phase"] == "Running"]
    return sorted(names, key=lambda n: int(cluster.pods[n].raw["metadata"]["labels"][LABEL_INDEX]))


def _check_running(cluster: Cluster, kind: Kind) -> None:
    """_check_running: the invariants of a job that goes on."""
    assert cluster.status["phase"] == "Running"
    trainers = _running_trainers(cluster)
    indices = [int(cluster.pods[n].raw["metadata"]["labels"][LABEL_INDEX]) for n in trainers]
    assert indices == list(range(kind.replicas)) and cluster.live("trainer") == sorted(trainers)
    assert cluster.status["discoveryHosts"] == trainers
    configmap = cluster.objects[CONFIGMAP]["data"]["hosts"]
    assert configmap == "".join(f"{naming.pod_host(JOB, n)}:1\n" for n in trainers), "ConfigMap drifted"
    assert cluster.objects[_pdb("trainer")]["spec"]["minAvailable"] == kind.replicas - 1, "PDB drifted"
    assert cluster.objects[_pdb("launcher")]["spec"]["minAvailable"] == 0


def _check_restarts(cluster: Cluster, kind: Kind, stop_after: str | None = None) -> None:
    """_check_restarts: each restart counted, recorded and announced once. The metrics count
    it once too, but for a death between the status write and the count (when the executor
    returns): the counters die with the process (docs/operator.md)."""
    assert cluster.status.get("RestartCount", {}).get("trainer", 0) == kind.restarts
    assert len(cluster.status.get("restarts", [])) == kind.restarts
    died_after_the_write = stop_after is not None and FIELDS.index(stop_after) >= FIELDS.index("status")
    assert len(cluster.counted) == (0 if died_after_the_write else kind.restarts)
    assert sum(e.reason == "TrainingJobRestarting" for e in cluster.events.values()) == kind.restarts


def _cases() -> list[Any]:
    """_cases: every kind of pass, stopped after every step."""
    return [
        pytest.param(name, field, id=f"{name}, stopped after {field}") for name in KINDS for field in FIELDS
    ]


@pytest.mark.parametrize(("kind", "stop_after"), _cases())
def test_a_crash_after_any_step_of_any_pass_converges(kind: str, stop_after: str) -> None:
    spec = KINDS[kind]
    cluster = spec.setup()
    cluster.apply(cluster.plan(CRASH_AT), CRASH_AT, stop_after=stop_after)
    _converge(cluster)
    _check_restarts(cluster, spec, stop_after)
    if spec.ends:
        assert cluster.status["phase"] == "Succeeded" and cluster.pods == {}
    else:
        _check_running(cluster, spec)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_same_passes_without_a_crash_reach_the_same_state(kind: str) -> None:
    spec = KINDS[kind]
    cluster = spec.setup()
    cluster.step(CRASH_AT)
    _converge(cluster)
    _check_restarts(cluster, spec)
    if spec.ends:
        assert cluster.status["phase"] == "Succeeded" and cluster.pods == {}
    else:
        _check_running(cluster, spec)


def test_every_kind_of_pass_has_steps_to_crash_after() -> None:
    """The crash lands inside each kind's pass: its Plan sends something."""
    for name, spec in KINDS.items():
        cluster = spec.setup()
        planned = cluster.plan(CRASH_AT)
        assert any(getattr(planned, f) not in (None, ()) for f in FIELDS), name
