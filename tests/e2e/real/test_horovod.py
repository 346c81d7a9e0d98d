"""The seed job as it is, on real nodes: Horovod's image, the job barrier, ssh, the discovery
script and elastic training from start to Succeeded, through a force-deleted worker and a
scale-out 3 -> 5 -> 3. Only the name and namespace differ from
manifests/examples/horovod-elastic.yaml (the namespace's annotations put its pods on the real
nodes). Times are printed (pytest -s), never asserted; the steps redone after each fault are
read from the training's own output (make bench-real measures the same faults many times)."""

from __future__ import annotations

import time

import pytest

from tests.clusters import KubeCluster
from tests.e2e.real import nodes
from tests.e2e.real.jobs import pods_by_index
from tests.e2e.real.training import Training
from tests.jobs import create_job, job_pods, phase, seed_variant
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

COMMIT_EVERY = 10  # the training script's --batches-per-commit, which the seed leaves at its default


def test_the_seed_job_trains_to_the_end_through_the_barrier_ssh_and_the_discovery_script(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "hvd"
    created = time.monotonic()
    create_job(real_cluster, ns, seed_variant(job))
    launcher = wait_for(
        lambda: pods_by_index(real_cluster, ns, job, "launcher").get(0), 300, "the launcher Running"
    )
    launched = time.monotonic()
    trainers = pods_by_index(real_cluster, ns, job, "trainer")
    assert sorted(trainers) == [0, 1, 2]

    # The barrier (the seed's job-barrier init container, as the launcher's own account) let
    # the launcher start, and only once every trainer ran.
    (barrier,) = launcher.status.init_container_statuses[-1:]
    assert barrier.name == "job-barrier" and barrier.state.terminated.exit_code == 0
    started = max(t.status.container_statuses[0].state.running.started_at for t in trainers.values())
    assert barrier.state.terminated.finished_at >= started.replace(microsecond=0)

    # ssh with the job's key, by the names discover_hosts.sh prints.
    hosts = nodes.exec_in(real_cluster, ns, launcher.metadata.name, "/etc/edl/discover_hosts.sh").split()
    assert sorted(hosts) == sorted(f"{t.metadata.name}.{job}:1" for t in trainers.values())
    for host in hosts:
        name = host.split(":")[0]
        out = nodes.exec_in(real_cluster, ns, launcher.metadata.name, "ssh", name, "hostname")
        assert out.strip() == name.split(".")[0]

    # Volcano's host file and variables (docs/volcano.md), as the launcher sees them: its
    # variables were read when it started, after every trainer ran.
    names = sorted(h.split(":")[0] for h in hosts)
    volcano = nodes.exec_in(real_cluster, ns, launcher.metadata.name, "cat", "/etc/volcano/trainer.host")
    assert sorted(volcano.split()) == names
    env = nodes.exec_in(
        real_cluster, ns, launcher.metadata.name, "sh", "-c", "echo $VC_TRAINER_HOSTS $VC_TRAINER_NUM"
    ).split()
    assert sorted(env[0].split(",")) == names and env[1] == "3", env

    def logs() -> str:
        return real_cluster.kubectl("logs", "-n", ns, launcher.metadata.name, check=False).stdout

    wait_for(lambda: "rank 0/3" in logs() and "step 10/1000" in logs(), 240, "training at full width")
    training = time.monotonic()

    # A worker lost, then two more and two fewer: training goes on from its last commit (the
    # script commits every 10 steps), at the width each time asks for. A ring that waits on
    # a dead peer waits Gloo's timeout (the seed's 300 s), hence the long heal time.
    run = Training(real_cluster, ns, job, launcher.metadata.name)
    run.heals_from_a_loss_and_a_scale(redo_bound=COMMIT_EVERY, heal_seconds=360)
    wait_for(lambda: phase(real_cluster, ns, job) == "Succeeded", 600, f"{job} Succeeded", 2)
    done = time.monotonic()
    text = logs()
    assert "step 1000/1000" in text and "done: 1000 steps" in text, text[-3000:]
    (status,) = job_pods(real_cluster, ns, job, "launcher")[0].status.container_statuses
    assert status.state.terminated.exit_code == 0
    print(
        f"seed job: launcher Running {launched - created:.1f}s after the job was created, training "
        f"at full width after {training - created:.1f}s, Succeeded after {done - created:.1f}s"
    )
