"""``aitj.client`` on the real control plane, as a notebook uses it: submit, wait, get, list,
scale, logs and delete a job under the operator; and each refusal as its typed error (an
unknown job naming where it is, admission's field paths, a forbidden user, a wait that runs
out, an unreachable cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aitj.client import (
    Client,
    Conflict,
    Connection,
    Forbidden,
    Invalid,
    NotFound,
    Submission,
    Timeout,
    Unreachable,
)
from tests.clusters import KubeCluster, free_port
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def jobs_of(cluster: KubeCluster, namespace: str, as_user: str | None = None) -> Client:
    return Client(Connection(cluster.kubeconfig, as_user=as_user), namespace=namespace)


def submission(name: str, workers: int = 2) -> Submission:
    return Submission(
        name=name,
        image="registry.example/horovod:0.28.1",
        command="horovodrun -np 2 python train.py",
        workers=workers,
        min_workers=1,
        max_workers=4,
    )


def test_a_notebook_submits_waits_scales_reads_logs_and_deletes(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    jobs = jobs_of(cluster, namespace)
    created = jobs.submit(submission("nb"))
    assert (created.namespace, created.name, created.replicas) == (
        namespace,
        "nb",
        {"launcher": 1, "trainer": 2},
    )
    with pytest.raises(Conflict, match="already exists"):
        jobs.submit(submission("nb"))

    running = jobs.wait("nb", phases={"Running"}, timeout=60)
    assert running.phase == "Running" and running.condition is not None and running.restarts == 0
    jobs.patch("nb", [{"op": "add", "path": "/metadata/labels", "value": {"team": "nlp"}}])
    assert [j.name for j in jobs.list(selector="team=nlp")] == ["nb"]
    assert jobs.list(selector="team=other") == []

    scaled = jobs.scale("nb", 3)
    assert scaled.replicas["trainer"] == 3 and scaled.generation > created.generation
    wait_for(
        lambda: (jobs.get("nb").status.current_replicas or {}).get("trainer") == 3, 60, "the scale-out done"
    )

    if cluster.local is not None:  # the simulated pod logs are the local control plane's
        lines = list(jobs.logs("nb", replica="trainer", tail=1))
        assert [line.prefix for line in lines] == ["[trainer 0] ", "[trainer 1] ", "[trainer 2] "]
        assert all(line.error is None and line.text for line in lines), lines

    with pytest.raises(Timeout, match="not Succeeded"):
        jobs.wait("nb", phases={"Succeeded"}, timeout=0.5, poll=0.2)
    jobs.delete("nb", wait=True, timeout=60)
    with pytest.raises(NotFound, match="no AITrainingJob 'nb'"):
        jobs.get("nb")


def test_refusals_are_typed_errors_with_what_to_do(
    cluster: KubeCluster, crd: None, namespace: str, tmp_path: Path
) -> None:
    jobs = jobs_of(cluster, namespace)
    jobs.submit(submission("here"))
    with pytest.raises(NotFound) as unknown:
        jobs_of(cluster, "default").get("here")
    assert namespace in unknown.value.elsewhere and f"(use -n {namespace})" in str(unknown.value)

    bad = yaml.safe_load(yaml.safe_dump(dict(jobs.get("here").manifest)))
    bad["metadata"] = {"name": "bad"}
    bad["spec"]["replicaSpecs"]["trainer"]["replicas"] = -1
    with pytest.raises(Invalid) as invalid:
        jobs.submit(bad)
    assert "spec.replicaSpecs.trainer.replicas" in [f.path for f in invalid.value.fields], invalid.value
    with pytest.raises(Invalid, match="out of range"):  # checked before anything is sent
        jobs.submit(submission("none", workers=0))
    assert jobs.submit(submission("dry"), dry_run=True).name == "dry"
    with pytest.raises(NotFound):
        jobs.get("dry")  # a server dry run stores nothing

    with pytest.raises(Forbidden, match="forbidden"):
        jobs_of(cluster, namespace, as_user="nobody-at-all").list()

    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for c in config["clusters"]:
        c["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    dead = tmp_path / "kubeconfig"
    dead.write_text(yaml.safe_dump(config))
    with pytest.raises(Unreachable, match="cannot reach the cluster at https"):
        Client(Connection(dead), namespace=namespace).get("here")
