"""``aitj submit`` without a cluster: the manifest ``aitj.core.render.submit`` makes from the
flags, its checks, and that what it makes is a job the model accepts."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aitj.core import api
from aitj.core.render.submit import Submission, problems, render_submission

BASE = Submission(name="mnist", image="horovod/horovod:0.28.1", command="horovodrun python train.py")


def spec(s: Submission) -> dict[str, Any]:
    out: dict[str, Any] = render_submission(s)["spec"]
    return out


@pytest.mark.parametrize(
    "submission",
    [
        pytest.param(BASE, id="the defaults"),
        pytest.param(
            dataclasses.replace(
                BASE, workers=3, min_workers=1, max_workers=5, gpus=1, retry_exit_codes="129,101"
            ),
            id="an elastic horovod job with exit-code retries",
        ),
        pytest.param(
            dataclasses.replace(BASE, framework="pytorch", workers=4), id="a pytorch job, no launcher"
        ),
        pytest.param(
            dataclasses.replace(
                BASE,
                cpu="2",
                memory="4Gi",
                env=(("A", "1"),),
                labels=(("team", "x"),),
                scheduler_name="volcano",
                priority="high",
                time_limit=3600,
                namespace="ml",
            ),
            id="every optional flag",
        ),
    ],
)
def test_every_submission_is_a_job_the_model_accepts(submission: Submission) -> None:
    assert problems(submission) == []
    manifest = render_submission(submission)
    manifest["metadata"].setdefault("namespace", "default")
    manifest["metadata"]["uid"] = "u"
    api.parse_job(manifest)  # raises InvalidJob if not


def test_a_horovod_job_has_a_launcher_running_the_command_and_trainers_waiting_with_sshd() -> None:
    s = spec(BASE)
    launcher = s["replicaSpecs"]["launcher"]
    trainer = s["replicaSpecs"]["trainer"]
    assert launcher["replicaType"] == "master" and launcher["replicas"] == 1
    assert launcher["template"]["spec"]["containers"][0]["command"] == ["/bin/sh", "-c", BASE.command]
    assert "sshd" in trainer["template"]["spec"]["containers"][0]["command"][2]
    assert (trainer["completePolicy"], trainer["failPolicy"]) == ("None", "None")
    assert s["plugin"] == {"ssh": [""], "discovery": [""]}


def test_without_a_launcher_every_worker_runs_the_command_and_must_succeed() -> None:
    s = spec(dataclasses.replace(BASE, framework="pytorch"))
    trainer = s["replicaSpecs"]["trainer"]
    assert list(s["replicaSpecs"]) == ["trainer"] and "plugin" not in s
    assert trainer["template"]["spec"]["containers"][0]["command"][2] == BASE.command
    assert (trainer["completePolicy"], trainer["failPolicy"]) == ("All", "Any")


def test_the_fault_tolerance_defaults_restart_pods_lost_to_nodes_deletes_and_evictions() -> None:
    trainer = spec(BASE)["replicaSpecs"]["trainer"]
    assert trainer["restartPolicy"] == "OnNodeFailWithExitCode" and trainer["restartLimit"] == 100
    assert trainer["faultTolerantPolicy"] == [
        {
            "exceptionalEvent": "nodeNotReady,PodForceDeleted,PodEvicted",
            "restartPolicy": "OnNodeFail",
            "restartScope": "Pod",
        }
    ]


def test_retry_exit_codes_add_an_exit_code_rule() -> None:
    rules = spec(dataclasses.replace(BASE, retry_exit_codes="137"))["replicaSpecs"]["trainer"][
        "faultTolerantPolicy"
    ]
    assert rules[-1] == {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "Pod"}


def test_gpus_go_to_the_workers_only_as_request_and_limit() -> None:
    s = spec(dataclasses.replace(BASE, gpus=2, gpu_resource="baidu.com/v100_32g_cgpu"))
    trainer = s["replicaSpecs"]["trainer"]["template"]["spec"]["containers"][0]
    launcher = s["replicaSpecs"]["launcher"]["template"]["spec"]["containers"][0]
    assert trainer["resources"] == {
        "limits": {"baidu.com/v100_32g_cgpu": "2"},
        "requests": {"baidu.com/v100_32g_cgpu": "2"},
    }
    assert "resources" not in launcher


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        pytest.param({"workers": 0}, "--workers 0 is out of range: 1 to 10000", id="no workers"),
        pytest.param({"workers": 10001}, "--workers 10001 is out of range", id="too many workers"),
        pytest.param(
            {"workers": 3, "max_workers": 2}, "--workers 3 must lie within", id="workers above the maximum"
        ),
        pytest.param(
            {"workers": 1, "min_workers": 2}, "--workers 1 must lie within", id="workers below the minimum"
        ),
        pytest.param({"name": "1st"}, "must be a DNS-1035 label", id="a name that is no DNS label"),
        pytest.param({"name": "a" * 50}, "is too long: pod names", id="a name too long for pod names"),
        pytest.param({"gpus": -1}, "--gpus -1 is out of range", id="negative GPUs"),
        pytest.param({"retry_exit_codes": "300"}, "--retry-exit-codes:", id="an exit code above 255"),
        pytest.param({"time_limit": 0}, "--time-limit 0 is out of range", id="a zero time limit"),
        pytest.param(
            {"restart_limit": -1}, "--restart-limit -1 is out of range", id="a negative restart limit"
        ),
        pytest.param({"priority": "urgent"}, "--priority 'urgent' must be", id="an unknown priority"),
    ],
)
def test_bad_flags_are_refused_in_one_sentence_each(changes: dict[str, Any], words: str) -> None:
    found = problems(dataclasses.replace(BASE, **changes))
    assert len(found) == 1 and words in found[0], found


def test_every_bad_flag_is_named_in_the_flags_order_and_the_range_of_workers_only_once_the_rest_is_fine() -> (
    None
):
    found = problems(
        dataclasses.replace(BASE, name="1st", workers=3, max_workers=2, gpus=-1, priority="urgent")
    )
    assert [f.split()[0] for f in found] == ["--name", "--gpus", "--priority"], found
