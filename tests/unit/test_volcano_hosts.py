"""Volcano's host files and variables (issue 16, item 3): with plugin.discovery the job's
ConfigMap also carries ``<replica>.host``, one stable DNS name per Running pod of the replica in
index order, kept current through restarts and scaling; every pod mounts those files at
/etc/volcano and gets ``VC_<REPLICA>_HOSTS`` / ``VC_<REPLICA>_NUM``, read from the ConfigMap when
a container starts. Files and variables are read back as the kubelet lays them out
(tests/kubelet_volumes.py)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from aitj.core import api, naming, render
from aitj.core.planner import ObjectKind, ObjectRef, Plan
from aitj.core.render.volcano import host_file_key, host_files, volcano_env
from tests.kubelet_volumes import MountFailed, container_env, container_files, volume_files
from tests.unit.builders import JOB, Cluster, Pod, as_json, launcher, name_of, seed_job, trainer, with_replica

CONFIGMAP = ObjectRef(ObjectKind.CONFIGMAP, naming.discovery_configmap_name(JOB))
T = [name_of("trainer", i) for i in range(6)]


def dns(*pods: str) -> list[str]:
    return [naming.pod_host(JOB, p) for p in pods]


def running(trainers: int = 3) -> Cluster:
    """running: the seed job (plugin.discovery on) with its trainers and launcher Running."""
    job = with_replica(seed_job(), "trainer", replicas=trainers, max_replicas=6)
    cluster = Cluster(
        job, [Pod("trainer", i).running() for i in range(trainers)] + [Pod("launcher", 0).running(2)]
    )
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def scale(cluster: Cluster, replicas: int) -> None:
    job = with_replica(cluster.job, "trainer", replicas=replicas)
    cluster.job = dataclasses.replace(job, generation=job.generation + 1)


def data(cluster: Cluster) -> dict[str, str]:
    return dict(cluster.objects[CONFIGMAP]["data"])


def lines(cluster: Cluster, replica: str) -> list[str]:
    text = data(cluster)[host_file_key(replica)]
    return text.split("\n") if text else []


def created(result: Plan, replica: str) -> dict[str, Any]:
    return next(dict(c.body) for c in result.creates if c.replica == replica)


# ---------------------------------------------------------------------------------------------
# The files


def test_each_replica_gets_a_host_file_of_its_running_pods_in_index_order() -> None:
    cluster = running()
    assert lines(cluster, "trainer") == dns(*T[:3])
    assert lines(cluster, "launcher") == dns(name_of("launcher", 0))
    # The status records the master replicas' files; the workers' are discoveryHosts, by index.
    assert cluster.status["hostFiles"] == {"launcher": [name_of("launcher", 0)]}
    assert cluster.status["discoveryHosts"] == T[:3]


def test_a_host_file_has_one_name_per_line_and_no_newline_after_the_last() -> None:
    # Volcano's svc plugin joins with "\n": `cat worker.host | tr "\n" ","` then has no empty host.
    assert data(running())["trainer.host"] == "\n".join(dns(*T[:3]))


def test_the_horovod_host_list_is_unchanged_beside_the_host_files() -> None:
    assert data(running())["hosts"] == "".join(f"{h}:1\n" for h in dns(*T[:3]))


def test_a_pod_not_running_yet_is_not_in_its_file() -> None:
    job = seed_job()
    cluster = Cluster(job, [Pod("trainer", 0).running(), Pod("trainer", 1), Pod("launcher", 0)])
    cluster.step(10)
    assert lines(cluster, "trainer") == dns(T[0])
    assert lines(cluster, "launcher") == [] and data(cluster)["launcher.host"] == ""


def test_a_replaced_trainer_leaves_its_file_and_its_successor_joins_once_running() -> None:
    cluster = running()
    cluster.pods[T[1]].deleted(20, 0)  # force-deleted: the seed's PodForceDeleted rule restarts it
    cluster.step(20)
    successor = name_of("trainer", 1, 1)
    assert lines(cluster, "trainer") == dns(T[0], T[2])
    cluster.pods[successor].running(25)
    cluster.step(30)
    assert lines(cluster, "trainer") == dns(T[0], successor, T[2])


def test_a_scale_out_joins_the_file_once_all_its_pods_run_in_index_order() -> None:
    cluster = running()
    scale(cluster, 5)
    cluster.step(20)
    cluster.pods[T[4]].running(21)
    cluster.step(22)
    assert lines(cluster, "trainer") == dns(*T[:3])  # index 3 not running: the scale-out waits
    cluster.pods[T[3]].running(23)
    cluster.step(24)
    assert lines(cluster, "trainer") == dns(*T[:5])


def test_a_scale_in_leaves_the_file_first_and_the_order_holds() -> None:
    cluster = running(5)
    scale(cluster, 2)
    cluster.step(20)
    assert lines(cluster, "trainer") == dns(*T[:2])  # leaving, not deleted yet
    cluster.step(80)
    assert lines(cluster, "trainer") == dns(*T[:2]) and cluster.status["discoveryHosts"] == T[:2]


def test_the_configmap_is_rewritten_when_only_the_launcher_starts_running() -> None:
    cluster = Cluster(seed_job(), [*(Pod("trainer", i).running() for i in range(3)), Pod("launcher", 0)])
    cluster.step(10)
    assert lines(cluster, "launcher") == []
    cluster.pods[name_of("launcher", 0)].running(11)
    result = cluster.step(12)
    assert result.discovery is not None and result.hosts is None  # Horovod's list did not change
    assert lines(cluster, "launcher") == dns(name_of("launcher", 0))
    assert lines(cluster, "trainer") == dns(*T[:3])


def test_a_dash_in_a_replica_name_becomes_an_underscore_as_in_volcano() -> None:
    job = seed_job(trainer(name="my-workers"), launcher())
    assert host_file_key("my-workers") == "my_workers.host"
    assert set(host_files(job, {})) == {"my_workers.host", "launcher.host"}
    assert [v["name"] for v in volcano_env(job)] == [
        "VC_MY_WORKERS_HOSTS",
        "VC_MY_WORKERS_NUM",
        "VC_LAUNCHER_HOSTS",
        "VC_LAUNCHER_NUM",
    ]


# ---------------------------------------------------------------------------------------------
# The pods: the files read back, and the variables


def render_one(job: api.Job, replica: str, name: str) -> dict[str, Any]:
    """render_one: pod 0 of ``replica``, generation 0, named ``name``."""
    return render.render_pod(
        job, render.PodIdentity(job.spec.replica(replica), 0, 0, name), {}, finalizer="f"
    )


def test_every_pod_reads_the_host_files_at_etc_volcano_as_the_kubelet_lays_them_out() -> None:
    cluster = running()
    configmaps = {CONFIGMAP.name: data(cluster)}
    pod = dict(render_one(cluster.job, "trainer", T[0]))
    files = container_files(pod, "aitj-0", configmaps)
    volcano = {k: v for k, v in files.items() if k.startswith("/etc/volcano/")}
    assert volcano == {
        "/etc/volcano/trainer.host": "\n".join(dns(*T[:3])),
        "/etc/volcano/launcher.host": naming.pod_host(JOB, name_of("launcher", 0)),
    }
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "aitj-volcano-hosts"]
    assert volume["configMap"]["items"] == [
        {"key": "trainer.host", "path": "trainer.host"},
        {"key": "launcher.host", "path": "launcher.host"},
    ]


def test_the_volcano_seed_launcher_command_gets_its_host_list() -> None:
    # The seed's master: WORKER_HOST=`cat /etc/volcano/worker.host | tr "\n" ","`
    job = seed_job(trainer(name="worker"), launcher(name="master"))
    workers = [naming.pod_name(JOB, job.uid, "worker", i, 0) for i in range(3)]
    configmap = render.render_discovery_configmap(job, [], {"worker": workers})
    pod = render_one(job, "master", "m")
    files = container_files(pod, "aitj-0", {configmap["metadata"]["name"]: configmap["data"]})
    worker_host = files["/etc/volcano/worker.host"].replace("\n", ",")
    assert worker_host == ",".join(dns(*workers)) and "" not in worker_host.split(",")


def test_the_vc_variables_are_read_from_the_configmap_when_the_container_starts() -> None:
    cluster = running()
    launcher = render_one(cluster.job, "launcher", "l")
    started = container_env(launcher, "aitj-0", {CONFIGMAP.name: data(cluster)})
    assert started["VC_TRAINER_HOSTS"] == ",".join(dns(*T[:3])) and started["VC_TRAINER_NUM"] == "3"
    assert started["VC_LAUNCHER_HOSTS"] == naming.pod_host(JOB, name_of("launcher", 0))
    assert started["VC_LAUNCHER_NUM"] == "1"


def test_after_a_scale_out_a_container_starting_reads_five_and_the_pods_are_unchanged() -> None:
    cluster = running()
    scale(cluster, 5)
    result = cluster.step(20)
    cluster.run_all(21)
    cluster.step(22)
    body = created(result, "trainer")
    assert container_env(body, "aitj-0", {CONFIGMAP.name: data(cluster)})["VC_TRAINER_NUM"] == "5"
    assert data(cluster)["VC_TRAINER_HOSTS"] == ",".join(dns(*T[:5]))


def test_a_pods_size_does_not_grow_with_the_job() -> None:
    def size(trainers: int) -> int:
        job = with_replica(seed_job(), "trainer", replicas=trainers, max_replicas=trainers)
        body = render_one(job, "trainer", T[0])
        return len(json.dumps(body))

    assert size(999) == size(100)  # the same digits in TRAININGJOB_TRAINER_REPLICAS


def test_a_user_mount_at_etc_volcano_is_theirs() -> None:
    job = seed_job(ssh=False)
    template = dict(job.spec.replica("trainer").template)
    template["spec"] = {
        "containers": [{"name": "aitj-0", "volumeMounts": [{"name": "x", "mountPath": "/etc/volcano/"}]}]
    }
    job = with_replica(job, "trainer", template=template)
    pod = render_one(job, "trainer", T[0])
    assert [m["name"] for m in pod["spec"]["containers"][0]["volumeMounts"]] == ["x"]


def test_without_plugin_discovery_there_are_no_host_files_nor_variables() -> None:
    job = seed_job(discovery=False)
    result = Cluster(job).step(0)
    pod = created(result, "trainer")
    assert not any(v["name"].startswith("VC_") for v in pod["spec"]["containers"][0]["env"])
    assert not any(v["name"] == "aitj-volcano-hosts" for v in pod["spec"].get("volumes") or [])
    assert result.status is not None and "hostFiles" not in as_json(result.status)


# ---------------------------------------------------------------------------------------------
# The projection itself


@pytest.mark.parametrize(
    ("volume", "data", "files"),
    [
        pytest.param(
            {"configMap": {"name": "c"}}, {"a": "1", "b": "2"}, {"a": "1", "b": "2"}, id="every key"
        ),
        pytest.param(
            {"configMap": {"name": "c", "items": [{"key": "a", "path": "x/a"}]}},
            {"a": "1", "b": "2"},
            {"x/a": "1"},
            id="only the items, at their paths",
        ),
        pytest.param({"configMap": {"name": "c", "optional": True}}, None, {}, id="optional and missing"),
    ],
)
def test_a_configmap_volume_projects_as_the_kubelet_does(
    volume: dict[str, Any], data: dict[str, str] | None, files: dict[str, str]
) -> None:
    assert volume_files(volume, data) == files


def test_a_missing_key_fails_the_mount() -> None:
    with pytest.raises(MountFailed):
        volume_files({"configMap": {"name": "c", "items": [{"key": "z", "path": "z"}]}}, {"a": "1"})
