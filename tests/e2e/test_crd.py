"""The CRD on a real apiserver: the seed applies unchanged, every invalid manifest of
tests/invalid_manifests.py is refused naming its field, and the model (aitj.core.api.parse_job)
agrees with admission on drawn manifests.

Dry runs (``kubectl create --dry-run=server``) run the whole admission chain, OpenAPI schema
and CEL rules included, without storing anything, which keeps the many cases fast.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from aitj.core.api import MODEL_ONLY_CHECKS, InvalidJob, parse_job
from tests.clusters import KubeCluster
from tests.invalid_manifests import CASES, MODEL_ONLY, UPDATE_CASES, Case, UpdateCase, apiserver_path
from tests.manifest_strategies import Drawn, manifests
from tests.seeds import SEED_MANIFEST, seed_job
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

CRD_FILE = Path(__file__).resolve().parents[2] / "crds" / "aitrainingjobs.yaml"
CRD_NAME = "aitrainingjobs.kongming.cce.baiudbce.com"


@pytest.fixture(scope="session")
def crd_installed(cluster: KubeCluster, crd: None) -> KubeCluster:
    """crd_installed is the cluster once the session's ``crd`` fixture has installed the CRD."""
    return cluster


@pytest.fixture(scope="module")
def ns(crd_installed: KubeCluster) -> Iterator[str]:
    """ns is one namespace for this module (hypothesis refuses function-scoped fixtures)."""
    name = f"crd-{uuid.uuid4().hex[:8]}"
    crd_installed.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        crd_installed.kubectl("delete", "namespace", name, "--wait=false", check=False)


def dry_run_create(cluster: KubeCluster, doc: dict[str, Any]) -> tuple[bool, str]:
    """dry_run_create returns (accepted, what kubectl said) for a server-side dry-run create."""
    proc = cluster.kubectl(
        "create",
        "--dry-run=server",
        "--validate=strict",
        "-o",
        "json",
        "-f",
        "-",
        input=json.dumps(doc),
        check=False,
    )
    return proc.returncode == 0, proc.stdout if proc.returncode == 0 else proc.stderr


def placed(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    doc["metadata"]["namespace"] = namespace
    return doc


# --- the seed ----------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["create", "apply"])
def test_the_seed_is_accepted_unchanged(crd_installed: KubeCluster, verb: str) -> None:
    """The seed file, byte for byte, in the namespace it names, with strict field validation."""
    crd_installed.kubectl(
        "delete", "-f", str(SEED_MANIFEST), "--ignore-not-found", "--timeout=60s"
    )  # leftovers
    try:
        crd_installed.kubectl(verb, "--validate=strict", "-f", str(SEED_MANIFEST))
        stored = json.loads(crd_installed.kubectl("get", "-f", str(SEED_MANIFEST), "-o", "json").stdout)
    finally:
        crd_installed.kubectl("delete", "-f", str(SEED_MANIFEST), "--ignore-not-found", "--wait=false")
    trainer = stored["spec"]["replicaSpecs"]["trainer"]
    assert trainer["scaleTimeout"] == 600, "the CRD defaults scaleTimeout"
    assert trainer["template"]["spec"]["schedulerName"] == "volcano"
    launcher = stored["spec"]["replicaSpecs"]["launcher"]
    assert launcher["faultTolerantPolicy"][0]["exitCodes"] == "129,101"
    job = parse_job(stored)
    assert [r.name for r in job.spec.replicas] == ["trainer", "launcher"]


def test_the_stored_seed_parses_to_the_same_job_as_the_file(crd_installed: KubeCluster, ns: str) -> None:
    ok, out = dry_run_create(crd_installed, placed(seed_job(), ns))
    assert ok, out
    from_file = parse_job(placed(seed_job(), ns))
    assert parse_job(json.loads(out)).spec == from_file.spec


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_the_apiserver_refuses_an_invalid_manifest_naming_the_field(
    crd_installed: KubeCluster, ns: str, case: Case
) -> None:
    ok, said = dry_run_create(crd_installed, placed(case.manifest(name="invalid"), ns))
    assert not ok, f"accepted: {case.id}"
    text = apiserver_path(said)
    assert case.path in text, f"{case.path} not named in: {said}"
    assert case.fragment in said, f"{case.fragment!r} not in: {said}"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in MODEL_ONLY])
def test_the_apiserver_accepts_what_only_the_model_refuses(
    crd_installed: KubeCluster, ns: str, case: Case
) -> None:
    """These are the checks docs/api.md lists as the model's own: admission lets them through."""
    ok, said = dry_run_create(crd_installed, placed(case.manifest(name="model-only"), ns))
    assert ok, said
    with pytest.raises(InvalidJob):
        parse_job(case.manifest())


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in UPDATE_CASES])
def test_an_edit_of_a_live_job_is_allowed_or_refused_by_the_apiserver(
    crd_installed: KubeCluster, ns: str, case: UpdateCase
) -> None:
    name = f"edit-{uuid.uuid4().hex[:6]}"
    old = placed(seed_job(), ns)
    old["metadata"]["name"] = name
    case.before(old)
    crd_installed.kubectl("create", "-f", "-", input=json.dumps(old))
    try:
        new = json.loads(json.dumps(old))
        case.edit(new)
        for _ in range(5):
            proc = crd_installed.kubectl("replace", "-f", "-", input=json.dumps(new), check=False)
            # The operator writes the job's status meanwhile; a replace that meets one of its
            # writes is refused as a conflict: not the answer under test, so send it again.
            if "the object has been modified" not in proc.stderr:
                break
    finally:
        crd_installed.kubectl("delete", "aitj", name, "-n", ns, "--wait=false", check=False)
    if case.path is None:
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode != 0, "the edit was accepted"
    # A transition rule over the whole spec names spec.replicaSpecs; the message names the rest.
    admission_path = case.path if "replicaType" in case.path else "spec.replicaSpecs"
    assert admission_path in apiserver_path(proc.stderr), proc.stderr
    assert case.fragment in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("fault_tolerant", "replicas", "accepted"),
    [
        pytest.param(True, 4, True, id="kubectl scale moves a fault-tolerant job's trainers"),
        pytest.param(True, 9, False, id="kubectl scale beyond maxReplicas is refused"),
        pytest.param(False, 4, False, id="kubectl scale of a job that is not fault-tolerant is refused"),
    ],
)
def test_kubectl_scale_drives_the_trainer_replica(
    crd_installed: KubeCluster, ns: str, fault_tolerant: bool, replicas: int, accepted: bool
) -> None:
    name = f"scale-{uuid.uuid4().hex[:6]}"
    doc = placed(seed_job(), ns)
    doc["metadata"]["name"] = name
    doc["spec"]["faultTolerant"] = fault_tolerant
    crd_installed.kubectl("create", "-f", "-", input=json.dumps(doc))
    try:
        proc = crd_installed.kubectl("scale", f"aitj/{name}", "-n", ns, f"--replicas={replicas}", check=False)
        now = crd_installed.kubectl(
            "get", f"aitj/{name}", "-n", ns, "-o", "jsonpath={.spec.replicaSpecs.trainer.replicas}"
        ).stdout
    finally:
        crd_installed.kubectl("delete", "aitj", name, "-n", ns, "--wait=false", check=False)
    assert (proc.returncode == 0) == accepted, proc.stderr
    assert now == str(replicas if accepted else 3)
    if not accepted:
        assert "spec.replicaSpecs" in apiserver_path(proc.stderr), proc.stderr


# --- the model agrees with admission -----------------------------------------------------------


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(drawn=manifests())
def test_the_model_and_the_apiserver_agree_on_drawn_manifests(
    crd_installed: KubeCluster, ns: str, drawn: Drawn
) -> None:
    """Every manifest the apiserver accepts, the model parses; every one the model refuses, the
    apiserver refuses too, unless the model's refusal is one of MODEL_ONLY_CHECKS."""
    accepted, said = dry_run_create(crd_installed, placed(drawn.manifest, ns))
    try:
        parse_job(drawn.manifest)
    except InvalidJob as e:
        model_only = all(err.message.startswith(tuple(MODEL_ONLY_CHECKS)) for err in e.errors)
        assert not accepted or model_only, f"the apiserver accepts what the model refuses: {e}"
        return
    assert accepted, f"the model accepts what the apiserver refuses: {said}"


# --- what kubectl shows ------------------------------------------------------------------------

# Finished (Succeeded): should an operator run in this session, a finished job is one whose
# status it leaves alone, so what the tests write stays written.
STATUS = {
    "phase": "Succeeded",
    "replicaStatuses": {"trainer": {"active": 3, "running": 3}, "launcher": {"active": 1, "running": 1}},
    "RestartCount": {"trainer": 1},
    "totalRestarts": 1,
    "trainerReplicas": 3,
    "selector": "aitj.kongming.cce.baiudbce.com/job-name=shown,"
    "aitj.kongming.cce.baiudbce.com/replica-name=trainer",
    "conditions": [
        {
            "type": "Pending",
            "status": "False",
            "reason": "TrainingJobPending",
            "message": "all pods are waiting for scheduling",
            "lastProbeTime": "2022-01-14T09:01:52Z",
            "lastTransitionTime": "2022-01-14T09:01:52Z",
        },
        {
            "type": "Running",
            "status": "False",
            "reason": "TrainingJobRunning",
            "message": "all pods are running",
            "lastProbeTime": "2022-01-14T09:02:27Z",
            "lastTransitionTime": "2022-01-14T09:02:27Z",
        },
        {
            "type": "Succeeded",
            "status": "True",
            "reason": "TrainingJobSucceeded",
            "message": "the launcher succeeded",
            "lastProbeTime": "2022-01-14T10:00:00Z",
            "lastTransitionTime": "2022-01-14T10:00:00Z",
        },
    ],
}


def write_status(cluster: KubeCluster, ns: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
    """write_status replaces the job's status, as the operator would, and returns what is stored.

    It writes again until it reads back what it wrote, in case an operator of this session
    wrote too before it saw the finished phase."""
    patch = json.dumps([{"op": "add", "path": "/status", "value": status}])

    def written() -> dict[str, Any] | None:
        cluster.kubectl("patch", "aitj", name, "-n", ns, "--subresource=status", "--type=json", "-p", patch)
        stored: dict[str, Any] = json.loads(
            cluster.kubectl("get", "aitj", name, "-n", ns, "-o", "json").stdout
        )
        return stored if stored.get("status") == status else None

    try:
        return wait_for(written, 20, f"the status of {name} to stay written", interval=1)
    except AssertionError:
        last: dict[str, Any] = json.loads(cluster.kubectl("get", "aitj", name, "-n", ns, "-o", "json").stdout)
        return last


FULL_STATUS = {
    **STATUS,
    "startTime": "2022-01-14T09:01:52Z",
    "startRunningTime": "2022-01-14T09:02:27Z",
    "completionTime": "2022-01-14T10:00:00Z",
    "observedGeneration": 2,
    "discoveryHosts": ["shown-trainer-q7gmp-0", "shown-trainer-spkb8-1"],
    "restartLedger": {
        "trainer": {"epoch": 0, "seenRuns": [[1, 1], [0, 1]], "ended": {"0": 0}, "restarts": {"0": [0, 1]}},
        "launcher": {"epoch": 0, "seen": [1, -1, 0]},  # the previous release's form, still stored
    },
    "restarts": [
        {
            "time": "2022-01-14T09:10:00Z",
            "replica": "trainer",
            "index": 0,
            "pod": "shown-trainer-4zzk4-0",
            "cause": "PodForceDeleted",
            "rule": "exceptionalEvent nodeNotReady,PodForceDeleted",
            "scope": "Pod",
        }
    ],
    "scaleHistory": [
        {
            "time": "2022-01-14T09:06:16Z",
            "replica": "trainer",
            "operation": "scaleout",
            "from": 3,
            "to": 4,
            "pods": ["shown-trainer-vdkk6-3"],
            "reason": "ScaledOut",
            "message": "new pods running",
        }
    ],
}


def test_a_full_status_is_stored_without_loss(crd_installed: KubeCluster, ns: str) -> None:
    """Every status field the operator writes has a schema: nothing is pruned on the way."""
    doc = placed(seed_job(), ns)
    doc["metadata"]["name"] = "full-status"
    crd_installed.kubectl("create", "-f", "-", input=json.dumps(doc))
    try:
        stored = write_status(crd_installed, ns, "full-status", FULL_STATUS)
    finally:
        crd_installed.kubectl("delete", "aitj", "full-status", "-n", ns, "--wait=false", check=False)
    assert stored["status"] == FULL_STATUS


@pytest.fixture(scope="module")
def shown(crd_installed: KubeCluster, ns: str) -> Iterator[str]:
    """shown is a job whose status the test writes as the operator would."""
    doc = placed(seed_job(), ns)
    doc["metadata"]["name"] = "shown"
    crd_installed.kubectl("create", "-f", "-", input=json.dumps(doc))
    assert write_status(crd_installed, ns, "shown", STATUS)["status"] == STATUS
    yield "shown"
    crd_installed.kubectl("delete", "aitj", "shown", "-n", ns, "--wait=false", check=False)


def test_kubectl_get_tells_the_story(crd_installed: KubeCluster, ns: str, shown: str) -> None:
    lines = crd_installed.kubectl("get", "aitj", shown, "-n", ns).stdout.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "TRAINERS", "DESIRED", "RESTARTS", "DEGRADED", "AGE"]
    assert lines[1].split()[:5] == ["shown", "Succeeded", "3", "3", "1"]


def test_kubectl_get_wide_adds_framework_and_the_current_message(
    crd_installed: KubeCluster, ns: str, shown: str
) -> None:
    out = crd_installed.kubectl("get", "aitj", shown, "-n", ns, "-o", "wide").stdout
    assert "FRAMEWORK" in out and "horovod" in out
    assert "the launcher succeeded" in out
    assert "all pods are running" not in out, "only the True condition's message"


def test_the_job_is_listed_by_category(crd_installed: KubeCluster, ns: str, shown: str) -> None:
    assert shown in crd_installed.kubectl("get", "training", "-n", ns, "-o", "name").stdout


def test_the_scale_subresource_reads_status(crd_installed: KubeCluster, ns: str, shown: str) -> None:
    scale = json.loads(
        crd_installed.kubectl(
            "get", "--raw", f"/apis/kongming.cce.baiudbce.com/v1/namespaces/{ns}/aitrainingjobs/{shown}/scale"
        ).stdout
    )
    assert scale["spec"]["replicas"] == 3
    assert scale["status"]["replicas"] == 3
    assert scale["status"]["selector"] == STATUS["selector"]


@pytest.mark.parametrize(
    ("status", "fragment"),
    [
        pytest.param(
            {"phase": "Exploded"}, 'Unsupported value: "Exploded"', id="an unknown phase is refused"
        ),
        pytest.param({"totalRestarts": -1}, "greater than or equal to 0", id="a negative count is refused"),
        pytest.param(
            {"RestartCount": {"trainer": "x"}}, "must be of type integer", id="a count must be a number"
        ),
        pytest.param(
            {"scaleHistory": [{"operation": "resize"}]},
            'Unsupported value: "resize"',
            id="an unknown scale operation",
        ),
    ],
)
def test_a_status_the_schema_refuses_is_refused(
    crd_installed: KubeCluster, ns: str, shown: str, status: dict[str, Any], fragment: str
) -> None:
    proc = crd_installed.kubectl(
        "patch",
        "aitj",
        shown,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
        check=False,
    )
    assert proc.returncode != 0
    assert fragment in proc.stderr


@pytest.mark.parametrize(
    ("field", "words"),
    [
        pytest.param(
            "aitrainingjob.spec.replicaSpecs", "replica types by name", id="replicaSpecs is explained"
        ),
        pytest.param(
            "aitrainingjob.spec.replicaSpecs.faultTolerantPolicy.exitCodes",
            "comma-separated",
            id="exitCodes is explained",
        ),
        pytest.param(
            "aitrainingjob.spec.replicaSpecs.scaleTimeout", "Our addition", id="our additions say so"
        ),
        pytest.param(
            "aitj.spec.replicaSpecs.template.spec.containers.image", "image", id="the pod template too"
        ),
    ],
)
def test_kubectl_explain_teaches_the_api(crd_installed: KubeCluster, field: str, words: str) -> None:
    out = wait_for(
        lambda: (p := crd_installed.kubectl("explain", field, check=False)).returncode == 0 and p.stdout,
        60,
        f"kubectl explain {field}",
        interval=1,
    )
    assert words in out


def test_the_crd_has_no_warnings(crd_installed: KubeCluster) -> None:
    crd = json.loads(crd_installed.kubectl("get", "crd", CRD_NAME, "-o", "json").stdout)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions.get("Established") == "True"
    assert conditions.get("NonStructuralSchema", "False") == "False"
    assert yaml.safe_load(CRD_FILE.read_text())["spec"]["versions"][0]["name"] == "v1"
