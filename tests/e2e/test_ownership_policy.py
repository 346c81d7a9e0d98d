"""Ownership nobody can forge, on the real control plane (issue 47, HIGH 2; docs/security.md,
"What makes a pod the job's").

- The operator's half, with no admission policy: a pod a tenant makes with the job's labels,
  its controller ownerReference, the operator's finalizer and the name derived from the
  public inputs (a later generation) supersedes nothing, joins no host list and counts no
  restart; a Secret planted under the job's name with its ownerReference, after the job's
  key is written and before the job makes its own, is never mounted: the job holds, says so,
  and goes on once the tenant's Secret is gone.
- The shipped ValidatingAdmissionPolicy aitj-ownership (manifests/base/ownership-policy.yaml),
  installed from the manifests: it refuses a tenant's object that claims a job (ownerReference
  or label), naming the field, admits the operator's, and lets anyone update what is there
  without adding a claim (the garbage collector removing a reference, a label of one's own).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from aitj.core import api, naming
from tests.clusters import KubeCluster
from tests.e2e import rbac
from tests.jobs import create_job, get_job, job_pods, patch_job, running, seed_variant, set_path, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
POLICY = "aitj-ownership"
TENANT = "mallory"
OPERATOR = "system:serviceaccount:aitj-system:aitj-operator"
REFUSED_OWNER = "metadata.ownerReferences: only the aitj operator may make an object an AITrainingJob's"
REFUSED_LABEL = f"metadata.labels[{api.LABEL_JOB}]: only the aitj operator may label an object"


def owner(name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{api.GROUP}/{api.VERSION}",
        "kind": api.KIND,
        "name": name,
        "uid": uid,
        "controller": True,
    }


# --- the operator's half ------------------------------------------------------------------------


def test_a_forged_pod_of_a_later_generation_changes_nothing_of_the_job(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    create_job(cluster, namespace, seed_variant("forged"))
    job = wait_phase(cluster, namespace, "forged", "Running")
    assert job["status"]["ownership"]["key"], "the job's key written"
    uid = job["metadata"]["uid"]
    before = sorted(p.metadata.name for p in job_pods(cluster, namespace, "forged"))
    hosts = job["status"].get("discoveryHosts")
    # What a tenant can write: the name from public inputs (uid, replica, index, generation).
    name = naming.pod_name("forged", uid, "trainer", 0, 5)
    labels = {
        api.LABEL_JOB: "forged",
        api.LABEL_REPLICA: "trainer",
        api.LABEL_INDEX: "0",
        api.LABEL_GENERATION: "5",
    }
    body = {
        "metadata": {
            "name": name,
            "labels": labels,
            "ownerReferences": [owner("forged", uid)],
            "finalizers": ["aitj.kongming.cce.baiudbce.com/pod-tracking"],
        },
        "spec": {"containers": [{"name": "x", "image": "busybox"}]},
    }
    cluster.core.create_namespaced_pod(namespace, body)
    # The operator judged it: the finalizer it carries is let go (all a pod not the job's gets).
    wait_for(
        lambda: not cluster.core.read_namespaced_pod(name, namespace).metadata.finalizers,
        60,
        "the forged pod's finalizer let go",
    )
    time.sleep(2)  # a pass that would replace the real trainer 0 has had its time
    now = get_job(cluster, namespace, "forged")
    live = sorted(p.metadata.name for p in job_pods(cluster, namespace, "forged") if p.metadata.name != name)
    assert live == before and not any(
        p.metadata.deletion_timestamp
        for p in job_pods(cluster, namespace, "forged")
        if p.metadata.name != name
    )
    assert now["status"].get("discoveryHosts") == hosts and name not in json.dumps(now["status"])
    assert now["status"].get("totalRestarts", 0) == 0 and now["status"]["phase"] == "Running"


def test_a_secret_planted_with_the_jobs_owner_reference_is_never_mounted(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    """The job is created suspended (it makes nothing), its key is written, and the tenant plants
    the ssh Secret with the job's ownerReference: resumed, the job holds rather than mount it."""
    create_job(cluster, namespace, seed_variant("planted", suspend=set_path("spec.suspend", True)))
    job = wait_for(
        lambda: (j := get_job(cluster, namespace, "planted")).get("status", {}).get("ownership") and j,
        60,
        "the job's key written",
    )
    secret = naming.ssh_secret_name("planted")
    cluster.core.create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": secret, "ownerReferences": [owner("planted", job["metadata"]["uid"])]},
            "stringData": {"config": "Host *\n  ProxyCommand theirs"},
        },
    )
    planted_uid = cluster.core.read_namespaced_secret(secret, namespace).metadata.uid
    patch_job(cluster, namespace, "planted", {"spec": {"suspend": False}})

    def told() -> bool:
        conditions = (get_job(cluster, namespace, "planted").get("status") or {}).get("conditions") or []
        return any(
            c.get("reason") == "ObjectNotOwned" and secret in (c.get("message") or "") for c in conditions
        )

    wait_for(told, 60, "the job's condition naming the planted Secret")
    assert not job_pods(cluster, namespace, "planted"), "a pod was made that would mount the planted Secret"
    cluster.core.delete_namespaced_secret(secret, namespace)
    wait_phase(cluster, namespace, "planted", "Running")
    made = cluster.core.read_namespaced_secret(secret, namespace)
    assert made.metadata.uid != planted_uid and made.metadata.annotations.get(
        "aitj.kongming.cce.baiudbce.com/proof"
    )
    assert running(job_pods(cluster, namespace, "planted", "launcher"))


# --- the admission policy -----------------------------------------------------------------------


@pytest.fixture
def policy(cluster: KubeCluster, operator_kubeconfig: Any, namespace: str) -> Iterator[None]:
    """policy: the manifests' aitj-ownership policy and binding applied and in force, and the
    tenant and the operator's account allowed to edit the namespace (RBAC before admission);
    the policy removed afterwards."""
    docs = [d for d in rbac.built(cluster) if d["metadata"].get("name") == POLICY]
    assert sorted(d["kind"] for d in docs) == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    text = yaml.safe_dump_all(docs)
    for who, name in ((TENANT, "tenant"), (OPERATOR, "operator")):
        cluster.kubectl(
            "create", "rolebinding", f"{name}-edits", "--clusterrole=edit", f"--user={who}", "-n", namespace
        )
    cluster.kubectl("apply", "-f", "-", input=text)
    try:
        wait_for(
            lambda: refusal(cluster, namespace, TENANT, configmap(labels={api.LABEL_JOB: "x"})),
            60,
            "the policy in force",
        )
        yield
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=true", input=text)


def refusal(
    cluster: KubeCluster, namespace: str, who: str, doc: dict[str, Any], verb: str = "create"
) -> str | None:
    """refusal: the apiserver's message when it refuses ``who``'s ``verb`` of ``doc`` (a
    server-side dry run: nothing is stored), None when it admits it."""
    out = cluster.kubectl(
        verb,
        "-f",
        "-",
        "-n",
        namespace,
        f"--as={who}",
        "--dry-run=server",
        "-o",
        "name",
        input=json.dumps(doc),
        check=False,
    )
    if out.returncode == 0:
        return None
    assert "denied request" in out.stderr or "ValidatingAdmissionPolicy" in out.stderr, out.stderr
    return out.stderr


def configmap(
    labels: dict[str, str] | None = None, owners: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "claim", "labels": labels or {}}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"hosts": "theirs:1"}}


CLAIMS = [
    pytest.param(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "ownerReferences": [owner("j", "u-1")]},
            "spec": {"containers": [{"name": "x", "image": "busybox"}]},
        },
        REFUSED_OWNER,
        id="a pod owned by a job",
    ),
    pytest.param(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "j-ssh", "ownerReferences": [owner("j", "u-1")]},
            "stringData": {"config": "ProxyCommand theirs"},
        },
        REFUSED_OWNER,
        id="the ssh Secret, owned by the job",
    ),
    pytest.param(configmap(labels={api.LABEL_JOB: "j"}), REFUSED_LABEL, id="a ConfigMap with a job's label"),
    pytest.param(
        configmap(owners=[{**owner("j", "u-1"), "apiVersion": f"{api.GROUP}/v9", "kind": "Other"}]),
        REFUSED_OWNER,
        id="an owner in the job's API group under another kind",
    ),
]


@pytest.mark.parametrize(("doc", "message"), CLAIMS)
def test_the_policy_refuses_a_tenants_claim_and_admits_the_operators(
    cluster: KubeCluster, policy: None, namespace: str, doc: dict[str, Any], message: str
) -> None:
    refused = refusal(cluster, namespace, TENANT, doc)
    assert refused is not None and message in refused and f"ValidatingAdmissionPolicy {POLICY}" in refused, (
        refused
    )
    assert refusal(cluster, namespace, OPERATOR, doc) is None


def test_the_policy_admits_what_claims_nothing_and_updates_that_add_no_claim(
    cluster: KubeCluster, policy: None, namespace: str
) -> None:
    assert refusal(cluster, namespace, TENANT, configmap(labels={"app": "mine"})) is None
    # The operator's object (a claim already there): a tenant may label it for themselves, or
    # drop its reference (as the garbage collector does), but not move it to another job. Its
    # owner is a real job (suspended: it makes nothing), or the garbage collector would delete
    # it at once as an orphan.
    job = create_job(cluster, namespace, seed_variant("j", suspend=set_path("spec.suspend", True)))
    claimed = configmap(labels={api.LABEL_JOB: "j"}, owners=[owner("j", job["metadata"]["uid"])])
    out = cluster.kubectl(
        "create", "-f", "-", "-n", namespace, f"--as={OPERATOR}", input=json.dumps(claimed), check=False
    )
    assert out.returncode == 0, out.stderr
    stored = json.loads(cluster.kubectl("get", "configmap", "claim", "-n", namespace, "-o", "json").stdout)
    mine = json.loads(json.dumps(stored))
    mine["metadata"]["labels"]["app"] = "mine"
    assert refusal(cluster, namespace, TENANT, mine, verb="replace") is None
    dropped = json.loads(json.dumps(stored))
    del dropped["metadata"]["ownerReferences"]
    assert refusal(cluster, namespace, TENANT, dropped, verb="replace") is None
    moved = json.loads(json.dumps(stored))
    moved["metadata"]["labels"][api.LABEL_JOB] = "another"
    refused = refusal(cluster, namespace, TENANT, moved, verb="replace")
    assert refused is not None and REFUSED_LABEL in refused
    stolen = json.loads(json.dumps(stored))
    stolen["metadata"]["ownerReferences"] = [owner("another", "u-2")]
    refused = refusal(cluster, namespace, TENANT, stolen, verb="replace")
    assert refused is not None and REFUSED_OWNER in refused


def test_jobs_run_under_the_policy(
    cluster: KubeCluster, policy: None, namespace: str, live_operator: OperatorProcess
) -> None:
    """The operator's own creates go through (it runs as its ServiceAccount here)."""
    create_job(cluster, namespace, seed_variant("governed"))
    wait_phase(cluster, namespace, "governed", "Running")
    try:
        cluster.core.create_namespaced_config_map(namespace, configmap(labels={api.LABEL_JOB: "governed"}))
    except ApiException as e:
        assert e.status in (400, 403, 422), e.body  # the admin is refused too: only the operator may
        assert REFUSED_LABEL in (e.body or "")
    else:
        raise AssertionError("the admin's claim was admitted")
