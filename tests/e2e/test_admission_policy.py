"""The shipped ValidatingAdmissionPolicy (manifests/base/admission-policy.yaml, issue 24
section 5) on the real apiserver: installed from the manifests as kustomize builds them, it
refuses a job whose templates ask for a privileged container, a hostPath volume, the host's
namespaces or another ServiceAccount, each with a message naming the replica and field; it
admits the seed; a stored template is not judged again; a namespace labelled exempt is not
judged at all."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core import api
from tests.clusters import KubeCluster
from tests.e2e import rbac
from tests.jobs import Doc, create_job, patch_job, seed_variant, set_path
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
EXEMPT = {"aitj.kongming.cce.baiudbce.com/pod-template-policy": "exempt"}
TRAINER = "spec.replicaSpecs.trainer.template.spec"
LAUNCHER = "spec.replicaSpecs.launcher.template.spec"


def refusal(cluster: KubeCluster, namespace: str, doc: Doc) -> str | None:
    """refusal: the apiserver's message when it refuses to create ``doc`` (a server-side dry
    run: nothing is stored), None when it admits it."""
    try:
        client.CustomObjectsApi(cluster.api).create_namespaced_custom_object(
            api.GROUP, api.VERSION, namespace, api.PLURAL, doc, dry_run="All"
        )
    except ApiException as e:
        assert e.status == 422, e.body
        return str(json.loads(e.body or "{}").get("message"))
    return None


def host_path(doc: Doc) -> None:
    doc["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]["volumes"].append(
        {"name": "node-root", "hostPath": {"path": "/"}}
    )


@pytest.fixture
def policy(cluster: KubeCluster, crd: None, namespace: str) -> Iterator[None]:
    """policy: the manifests' policy and binding applied, and in force (the apiserver loads a
    new policy through an informer of its own); removed afterwards, so other tests' jobs are
    judged by nothing but the CRD."""
    docs = [
        d
        for d in rbac.built(cluster)
        if d["kind"] in POLICY_KINDS and d["metadata"]["name"] == "aitj-pod-templates"
    ]
    assert [d["kind"] for d in docs] == list(POLICY_KINDS), (
        "the base manifests ship the policy and its binding"
    )
    text = yaml.safe_dump_all(docs)
    cluster.kubectl("apply", "-f", "-", input=text)
    probe = seed_variant("probe", hostnet=set_path(f"{LAUNCHER}.hostNetwork", True))
    try:
        wait_for(lambda: refusal(cluster, namespace, probe) is not None, 60, "the policy in force")
        yield
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=true", input=text)


CHANGES: list[Any] = [
    pytest.param(
        set_path(f"{TRAINER}.containers.0.securityContext", {"privileged": True}),
        f"{TRAINER}: a privileged container is not allowed",
        id="a privileged container",
    ),
    pytest.param(
        set_path(f"{LAUNCHER}.initContainers.0.securityContext", {"privileged": True}),
        f"{LAUNCHER}: a privileged container is not allowed",
        id="a privileged init container",
    ),
    pytest.param(host_path, f"{TRAINER}.volumes: a hostPath volume is not allowed", id="a hostPath volume"),
    pytest.param(
        set_path(f"{LAUNCHER}.hostNetwork", True),
        f"{LAUNCHER}: hostNetwork, hostPID and hostIPC are not allowed",
        id="the host's network",
    ),
    pytest.param(
        set_path(f"{TRAINER}.hostPID", True),
        f"{TRAINER}: hostNetwork, hostPID and hostIPC are not allowed",
        id="the host's processes",
    ),
    pytest.param(
        set_path(f"{TRAINER}.serviceAccountName", "admin"),
        f"{TRAINER}.serviceAccountName: only the namespace's default ServiceAccount is allowed",
        id="another ServiceAccount",
    ),
    pytest.param(
        set_path(f"{LAUNCHER}.serviceAccount", "admin"),
        f"{LAUNCHER}.serviceAccountName: only the namespace's default ServiceAccount is allowed",
        id="another ServiceAccount by the deprecated field",
    ),
]


@pytest.mark.parametrize(("change", "message"), CHANGES)
def test_the_policy_refuses_a_template_that_asks_for_more_than_a_tenant_may(
    cluster: KubeCluster, policy: None, namespace: str, change: Callable[[Doc], None], message: str
) -> None:
    refused = refusal(cluster, namespace, seed_variant("asks-too-much", change=change))
    assert refused is not None and message in refused, refused
    assert "ValidatingAdmissionPolicy aitj-pod-templates" in refused


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda doc: None, id="the seed"),
        pytest.param(
            set_path(f"{TRAINER}.serviceAccountName", "default"), id="the default ServiceAccount named"
        ),
        pytest.param(set_path(f"{LAUNCHER}.hostNetwork", False), id="hostNetwork false"),
        pytest.param(
            set_path(f"{TRAINER}.containers.0.securityContext", {"privileged": False}), id="privileged false"
        ),
    ],
)
def test_the_policy_admits_the_seed(
    cluster: KubeCluster, policy: None, namespace: str, change: Callable[[Doc], None]
) -> None:
    assert refusal(cluster, namespace, seed_variant("seed", change=change)) is None


def test_a_changed_template_is_judged_and_an_unchanged_one_is_not(
    cluster: KubeCluster, policy: None, namespace: str
) -> None:
    create_job(cluster, namespace, seed_variant("stored"))
    with pytest.raises(ApiException) as refused:
        patch_job(
            cluster,
            namespace,
            "stored",
            {"spec": {"replicaSpecs": {"trainer": {"template": {"spec": {"hostNetwork": True}}}}}},
        )
    assert refused.value.status == 422 and f"{TRAINER}: hostNetwork" in str(refused.value.body)
    patch_job(cluster, namespace, "stored", {"spec": {"replicaSpecs": {"trainer": {"replicas": 2}}}})


def test_a_namespace_labelled_exempt_is_not_judged(
    cluster: KubeCluster, policy: None, namespace: str
) -> None:
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": EXEMPT}})
    doc = seed_variant("exempt", hostnet=set_path(f"{LAUNCHER}.hostNetwork", True))
    wait_for(lambda: refusal(cluster, namespace, doc) is None, 30, "the exempt namespace's job admitted")
