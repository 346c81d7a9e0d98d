"""``aitj.client``'s pure parts: the typed error of each refusal, the job as read, when ``wait``
stops, the JSON patch of ``scale``, and what a kubeconfig's context says."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

import aitj
from aitj.client import (
    ApiError,
    Client,
    Conflict,
    Connection,
    FieldError,
    Forbidden,
    Invalid,
    NotConfigured,
    NotFound,
    Timeout,
    TrainingJob,
    Unreachable,
)
from aitj.client.errors import from_response
from aitj.client.job import scale_patch, waited_for
from aitj.controller.kubeclient import OPERATOR_AGENT, api_client


def status_body(message: str, causes: list[dict[str, str]] | None = None) -> str:
    return json.dumps({"kind": "Status", "message": message, "details": {"causes": causes or []}})


@pytest.mark.parametrize(
    ("status", "body", "kind", "text"),
    [
        (404, status_body("x not found"), NotFound, "reading x: x not found"),
        (403, status_body("forbidden: User cannot get"), Forbidden, "reading x: forbidden: User cannot get"),
        (401, "", Forbidden, "reading x: 401 Unauthorized"),
        (409, status_body("already exists"), Conflict, "reading x: already exists"),
        (422, status_body("testing value /a failed"), Conflict, "reading x: testing value /a failed"),
        (422, status_body("invalid", [{"field": "spec.a", "message": "bad"}]), Invalid, "reading x: invalid"),
        (500, "not json", ApiError, "reading x: 500 Unauthorized"),
    ],
)
def test_each_refusal_is_its_typed_error_in_the_apiservers_words(
    status: int, body: str, kind: type[ApiError], text: str
) -> None:
    error = from_response("reading x", status, "Unauthorized", body)
    assert type(error) is kind and str(error) == text and error.status == status


def test_an_admission_refusal_names_each_field_path() -> None:
    body = status_body(
        'AITrainingJob.kongming.cce.baiudbce.com "x" is invalid',
        [
            {"field": "spec.replicaSpecs.trainer.replicas", "message": "must be >= 0", "reason": "x"},
            {"reason": "FieldValueRequired"},
            {"field": "spec.image", "reason": "FieldValueRequired"},
        ],
    )
    error = from_response("creating", 422, "", body)
    assert isinstance(error, Invalid)
    assert error.fields == (
        FieldError("spec.replicaSpecs.trainer.replicas", "must be >= 0"),
        FieldError("spec.image", "FieldValueRequired"),
    )


def manifest(phase: str | None = None, replicas: Any = 3, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": "bert",
            "uid": "u1",
            "generation": 4,
            "creationTimestamp": "2026-11-26T10:00:00Z",
            "labels": {"team": "nlp"},
        },
        "spec": {
            "replicaSpecs": {
                "trainer": {"replicas": replicas, "scaleInpods": ["old-1"]},
                "launcher": {},
            }
        },
        "status": {"phase": phase, **status} if phase else status,
    }


def test_a_job_reads_its_replicas_and_typed_status_leniently() -> None:
    job = TrainingJob.from_json(
        manifest(
            "Running",
            RestartCount={"trainer": 2},
            conditions=[{"type": "Running", "status": "True", "reason": "R", "message": "up"}],
        )
    )
    assert (job.namespace, job.name, job.uid, job.generation) == ("ns", "bert", "u1", 4)
    assert job.replicas == {"trainer": 3, "launcher": 1}  # launcher: the default, 1
    assert job.phase == "Running" and not job.finished and job.restarts == 2
    assert job.condition is not None and job.condition.message == "up"
    assert job.created is not None and job.created.hour == 10 and job.labels == {"team": "nlp"}
    odd = TrainingJob.from_json({"metadata": {"name": "x"}, "spec": [], "status": "?"})
    assert (odd.name, odd.phase, odd.replicas, odd.restarts, odd.condition) == ("x", "", {}, 0, None)
    assert TrainingJob.from_json(manifest("Running", totalRestarts=7)).restarts == 7


@pytest.mark.parametrize(
    ("phase", "wanted", "answer"),
    [
        ("Running", {"Running"}, True),
        ("Creating", {"Running"}, None),
        (None, {"Running"}, None),
        ("Failed", {"Running"}, False),
        ("Succeeded", {"Succeeded", "Failed", "Timeout"}, True),
        ("Timeout", {"Succeeded"}, False),
    ],
)
def test_wait_stops_when_reached_or_when_the_job_finished_otherwise(
    phase: str | None, wanted: set[str], answer: bool | None
) -> None:
    assert waited_for(TrainingJob.from_json(manifest(phase)), wanted) is answer


def test_a_scale_tests_the_value_it_read_then_sets_the_new_one() -> None:
    job = TrainingJob.from_json(manifest("Running"))
    path = "/spec/replicaSpecs/trainer"
    assert scale_patch(job, "trainer", 5, scale_timeout=60) == [
        {"op": "test", "path": f"{path}/replicas", "value": 3},
        {"op": "replace", "path": f"{path}/replicas", "value": 5},
        {"op": "add", "path": f"{path}/scaleTimeout", "value": 60},
    ]
    # A scale-in without named pods drops an old list, lest it pick this one's pods.
    assert scale_patch(job, "trainer", 2)[2:] == [{"op": "remove", "path": f"{path}/scaleInpods"}]
    assert scale_patch(job, "trainer", 2, pods=["p2"])[2:] == [
        {"op": "add", "path": f"{path}/scaleInpods", "value": ["p2"]}
    ]


def kubeconfig(tmp_path: Path, server: str = "https://127.0.0.1:1") -> Path:
    cluster = {"server": server, "insecure-skip-tls-verify": True}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": "one", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
            {"name": "two", "context": {"cluster": "c", "user": "u"}},
        ],
        "current-context": "one",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_namespace_is_the_contexts_and_as_impersonates(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    assert Connection(path).namespace() == "team-a"
    assert Connection(path, context="two").namespace() == "default"
    api = Connection(path, context="two", as_user="alice").api_client()
    assert api.default_headers["Impersonate-User"] == "alice"
    with pytest.raises(NotConfigured, match="no-such"):
        Connection(path, context="no-such").api_client()
    with pytest.raises(NotConfigured, match="missing"):
        Connection(tmp_path / "missing").api_client()


def test_the_clients_name_themselves_so_managed_fields_say_who_wrote(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    version = aitj.__version__
    assert Connection(path).api_client().default_headers["User-Agent"] == f"aitj/{version}"
    assert api_client(path).default_headers["User-Agent"] == f"aitj/{version}"
    operator = api_client(path, user_agent=OPERATOR_AGENT).default_headers["User-Agent"]
    assert operator == f"aitj-operator/{version}"


def test_a_silent_server_is_a_timeout_and_a_closed_port_is_unreachable(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        path = kubeconfig(tmp_path, f"http://127.0.0.1:{port}")
        jobs = Client(Connection(path, request_timeout=0.3), namespace="ns")
        with pytest.raises(
            Timeout, match=f"reading AITrainingJob ns/x: no answer from .*:{port} within 0.3s"
        ):
            jobs.get("x")
    with pytest.raises(Unreachable, match=f"cannot reach the cluster at http://127.0.0.1:{port}"):
        Client(Connection(path), namespace="ns").get("x")
