"""``aitj get``, ``aitj list`` and ``aitj describe`` on the real control plane, with the
operator running the seed job and restarting a force-deleted trainer; and the one-line errors:
an unknown job, a wrong namespace, no cluster reachable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from aitj.devcluster import faults
from tests.clusters import KubeCluster, free_port
from tests.e2e.cli import aitj, one_error_line
from tests.jobs import create_job, get_job, job_pods, seed_variant, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "cli-jobs"


def restarted_job(cluster: KubeCluster, namespace: str) -> None:
    """restarted_job: the seed job Running, trainer 0 force-deleted and replaced (one restart)."""
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running")
    victim = job_pods(cluster, namespace, NAME, "trainer")[0].metadata.name
    faults.force_delete(cluster.api, namespace, victim)
    wait_for(
        lambda: (get_job(cluster, namespace, NAME).get("status") or {}).get("totalRestarts") == 1,
        60,
        "one restart counted",
    )
    wait_phase(cluster, namespace, NAME, "Running")
    wait_for(lambda: len(job_pods(cluster, namespace, NAME)) == 4, 30, "four pods again")


def test_get_list_and_describe_show_a_restarted_job_for_people_and_scripts(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    restarted_job(cluster, namespace)
    kc = cluster.kubeconfig

    table = aitj(kc, "get", NAME, "-n", namespace)
    assert table.returncode == 0, table.stderr
    for words in (
        "NAME",
        "STATUS",
        "IS_CHIEF",
        "GPU",
        "NODE",
        "RESTARTS",
        "phase Running",
        "PodForceDeleted",
    ):
        assert words in table.stdout, table.stdout

    got = json.loads(aitj(kc, "get", NAME, "-n", namespace, "-o", "json").stdout)
    assert got["phase"] == "Running" and got["restarts"] == 1
    trainer = next(r for r in got["replicaTypes"] if r["replica"] == "trainer")
    assert (trainer["desired"], trainer["running"], trainer["restarts"]) == (3, 3, 1)
    assert trainer["last_cause"] == "PodForceDeleted"
    instances = got["instances"]
    assert sorted((i["replica"], i["index"]) for i in instances) == [
        ("launcher", 0),
        ("trainer", 0),
        ("trainer", 1),
        ("trainer", 2),
    ]
    assert [i["is_chief"] for i in instances if i["replica"] == "launcher"] == [True]
    assert [i["restarts"] for i in instances if i["replica"] == "trainer"] == [1, 0, 0]
    assert all(i["gpu"] == 1 for i in instances if i["replica"] == "trainer")  # the seed's one cGPU card
    assert all(i["node"].startswith("kwok-node-") for i in instances)

    listed = yaml.safe_load(aitj(kc, "list", "-n", namespace, "-o", "yaml").stdout)
    assert [(j["name"], j["phase"], j["replicas"], j["restarts"]) for j in listed] == [
        (NAME, "Running", "trainer 3/3, launcher 1/1", 1)
    ]
    everywhere = aitj(kc, "list", "-A")
    assert everywhere.returncode == 0 and namespace in everywhere.stdout and NAME in everywhere.stdout

    described = json.loads(aitj(kc, "describe", NAME, "-n", namespace, "-o", "json").stdout)
    assert [c["what"] for c in described["conditions"]][-1] == "Running"
    assert described["restarts"][0]["reason"] == "PodForceDeleted"
    assert "rule exceptionalEvent nodeNotReady,PodForceDeleted" in described["restarts"][0]["message"]
    assert "TrainingJobRestarting" in [e["reason"] for e in described["events"]]
    # a force delete is the application's (docs/semantics.md section 25); the job has run
    assert described["restartClasses"] == {"total": 1, "infrastructure": 0, "application": 1}
    assert 0 < described["goodput"]["ratio"] <= 1, described["goodput"]
    text = aitj(kc, "describe", NAME, "-n", namespace)
    assert text.returncode == 0 and "conditions" in text.stdout and "events" in text.stdout, text.stdout
    assert "restarts 1 (infrastructure 0, application 1)" in text.stdout, text.stdout
    assert "goodput " in text.stdout and "since it first ran" in text.stdout, text.stdout


def test_an_unknown_job_and_a_wrong_namespace_are_one_line_each(cluster: KubeCluster, namespace: str) -> None:
    create_job(cluster, namespace, seed_variant(NAME))
    for command in ("get", "describe", "logs"):
        unknown = one_error_line(aitj(cluster.kubeconfig, command, "no-such-job", "-n", namespace))
        assert unknown == f"error: no AITrainingJob 'no-such-job' in namespace {namespace!r}"
    # Other tests' namespaces may still hold a job of this name while they are deleted.
    wrong = one_error_line(aitj(cluster.kubeconfig, "get", NAME, "-n", "default"))
    assert wrong.startswith(f"error: no AITrainingJob {NAME!r} in namespace 'default'; there "), wrong
    assert namespace in wrong and "(use -n " in wrong, wrong
    empty = aitj(cluster.kubeconfig, "list", "-n", "default")
    assert empty.returncode == 0 and "no AITrainingJobs in namespace 'default'" in empty.stderr


def test_no_cluster_reachable_is_one_line_naming_the_server(cluster: KubeCluster, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    dead = f"https://127.0.0.1:{free_port()}"
    for c in config["clusters"]:
        c["cluster"]["server"] = dead
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    for args in (("list",), ("get", NAME), ("describe", NAME), ("logs", NAME)):
        line = one_error_line(aitj(kubeconfig, *args))
        assert line.startswith(f"error: cannot reach the cluster at {dead}: "), line
    missing = one_error_line(aitj(tmp_path / "nothing-here", "list"))
    assert "nothing-here" in missing and "does not exist" in missing


def test_kubectls_verbs_and_flags_on_a_submitted_job(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    kc = cluster.kubeconfig
    flags = ["--image", "busybox", "--workers", "2", "--max-workers", "3", "--framework", "pytorch"]
    flags += ["--command", "sleep 1d"]
    named = aitj(kc, "submit", "--name", "verbs", "-n", namespace, *flags, "-o", "name")
    assert named.stdout.strip() == "aitrainingjob.kongming.cce.baiudbce.com/verbs", named.stderr
    waited = aitj(kc, "wait", "verbs", "-n", namespace, "--for", "phase=Running", "--timeout", "60s")
    assert waited.returncode == 0 and waited.stdout.strip() == f"aitrainingjob {namespace}/verbs Running"
    cluster.kubectl("label", "aitj", "verbs", "-n", namespace, "team=nlp")

    bare = aitj(kc, "list", "-n", namespace, "-l", "team=nlp", "--no-headers", "-o", "wide")
    assert bare.returncode == 0 and "NAME" not in bare.stdout, bare.stdout
    assert bare.stdout.split()[:3] == [namespace, "verbs", "Running"], bare.stdout
    assert aitj(kc, "list", "-n", namespace, "-l", "team=other", "-o", "name").stdout == ""
    assert aitj(kc, "get", "verbs", "-n", namespace, "-o", "name").stdout.strip().endswith("/verbs")

    forbidden = one_error_line(aitj(kc, "get", "verbs", "-n", namespace, "--as", "nobody-at-all"))
    assert (
        forbidden.startswith(f"error: reading AITrainingJob {namespace}/verbs: ") and "forbidden" in forbidden
    )
    ended = aitj(kc, "wait", "verbs", "-n", namespace, "--for", "phase=Succeeded", "--timeout", "1s")
    assert ended.returncode == 1 and "not Succeeded" in one_error_line(ended)

    scaled = aitj(kc, "scaleout", "verbs", "-n", namespace, "--count", "1", "--timeout", "1m")
    assert scaled.returncode == 0, scaled.stderr
    too_many = one_error_line(aitj(kc, "scaleout", "verbs", "-n", namespace, "--count", "5"))
    assert too_many.startswith(f"error: editing AITrainingJob {namespace}/verbs: "), too_many

    deleted = aitj(kc, "delete", "verbs", "-n", namespace, "--wait", "--timeout", "60s")
    assert deleted.returncode == 0 and deleted.stdout.strip() == f"aitrainingjob {namespace}/verbs deleted"
    gone = one_error_line(aitj(kc, "get", "verbs", "-n", namespace))
    assert gone == f"error: no AITrainingJob 'verbs' in namespace {namespace!r}"
