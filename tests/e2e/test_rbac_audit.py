"""Least privilege, proven by the apiserver (issue 13): the session's operator runs as the
ServiceAccount from manifests/ (tests/e2e/conftest.py), and the local control plane's audit log
records every request of that user (aitj.devcluster.config.audit_policy). Over the session,
every permission the ClusterRole grants is used at least once, every resource request the
operator made is one the ClusterRole grants, and the authorizer denied none.

This module runs last (tests/e2e/conftest.py orders it), so the log holds every scenario the
session ran; it also drives a compact scenario of its own first, so run alone it still covers
each grant: a job's life to the end under cleanPodPolicy All, a force-deleted trainer, a
drained node, a scale-out rolled back, a restart of scope All (a new gang), a job deleted
while running, and a scrape of /metrics served over HTTPS (its token and access reviewed).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from aitj.controller import gangapi
from aitj.core import api, naming
from aitj.core.render import gang
from aitj.devcluster import faults
from aitj.devcluster.config import AUDITED_USER
from tests.clusters import KubeCluster, free_port
from tests.e2e import rbac
from tests.e2e.pools import Pool
from tests.e2e.scrape import account_token, secure_scrape
from tests.jobs import (
    create_job,
    delete_job,
    events_for,
    get_job,
    job_pods,
    live,
    patch_job,
    running,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

# An audit event's verb is the request's Kubernetes verb for a resource request (RBAC's own
# words: a GET of a collection is list, with ?watch=true watch; PUT is update; POST create), and
# the lower-cased HTTP method for a non-resource URL (discovery, /version), which no ClusterRole
# rule of ours names. Any other verb on a resource is a request this test does not understand.
RBAC_VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"})

Permission = tuple[str, str, str, str]  # (apiGroup, resource, subresource, verb)


@dataclass(frozen=True)
class Request:
    """Request: one audited request of the operator: what it asked, and what it was answered."""

    permission: Permission | None  # None: a non-resource URL
    uri: str
    code: int
    decision: str  # the authorizer's: allow or forbid
    causes: tuple[str, ...]  # the refusal's reasons, if any (NamespaceTerminating, ...)


def requests(lines: Iterable[str], user: str) -> Iterator[Request]:
    """requests: the audit events of ``user`` at their last stage (a watch's ResponseStarted
    when it is still open), as Requests."""
    for line in lines:
        event = json.loads(line)
        if event["user"]["username"] != user or event["stage"] not in ("ResponseStarted", "ResponseComplete"):
            continue
        if event["stage"] == "ResponseStarted" and event["verb"] != "watch":
            continue  # its ResponseComplete follows
        ref, status = event.get("objectRef"), event.get("responseStatus") or {}
        permission = None
        if ref is not None:
            assert event["verb"] in RBAC_VERBS, f"an audit verb with no RBAC verb: {event['verb']}"
            permission = (ref.get("apiGroup", ""), ref["resource"], ref.get("subresource", ""), event["verb"])
        yield Request(
            permission,
            event["requestURI"],
            int(status.get("code", 0)),
            (event.get("annotations") or {}).get("authorization.k8s.io/decision", ""),
            tuple(c.get("reason", "") for c in (status.get("details") or {}).get("causes") or ()),
        )


def grants(role: dict[str, Any]) -> set[Permission]:
    """grants: every permission the role's rules spell out ("pods/status" is a subresource)."""
    out: set[Permission] = set()
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                out |= {(group, name, sub, verb) for verb in rule["verbs"]}
    return out


# kopf's probe of the namespaces, sent by an operator run with --namespace (the session's
# /metrics tests run one, so that it acts on nothing of the others'): kopf lists namespaces to
# match its patterns, and on 403 falls back to the names given (kopf's namespace_observer). The
# single-namespace install grants no namespaces on purpose, so that probe is refused there too.
KOPF_NAMESPACE_PROBE: Permission = ("", "namespaces", "", "list")


def probe(request: Request) -> bool:
    """probe: ``request`` is kopf's refused namespace probe (KOPF_NAMESPACE_PROBE)."""
    return request.permission == KOPF_NAMESPACE_PROBE and request.code == 403


def denied(request: Request) -> bool:
    """denied: the request was refused for want of a permission. A 403 the authorizer allowed
    is an admission refusal instead: NamespaceLifecycle refuses anything new in a namespace
    being deleted (an Event about a job whose namespace goes), whoever asks."""
    if probe(request):
        return False
    if request.decision == "forbid":
        return True
    return request.code == 403 and request.causes != ("NamespaceTerminating",)


# ---- the compact scenario -------------------------------------------------------------------

NAME, DELETED, HELD = "audited", "audited-deleted", "audited-held"
LEASE_NAME, LEASE_NAMESPACE = "aitj-operator", "aitj-system"  # manifests/ha: the Role names them
DRAIN = ("--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s")


def trainers(cluster: KubeCluster, namespace: str) -> dict[int, Any]:
    return {
        int(p.metadata.labels[api.LABEL_INDEX]): p
        for p in running(job_pods(cluster, namespace, NAME, "trainer"))
    }


def pod_groups(cluster: KubeCluster, namespace: str, job: str) -> list[str]:
    """pod_groups: the names of ``job``'s native gang PodGroups."""
    custom: Any = client.CustomObjectsApi(cluster.api)
    found = custom.list_namespaced_custom_object(
        gang.GROUP,
        gangapi.served_version(cluster.api) or gang.NEWEST,
        namespace,
        gang.POD_GROUP_PLURAL,
        label_selector=f"{api.LABEL_JOB}={job}",
    )
    return sorted(item["metadata"]["name"] for item in found["items"])


def replaced(cluster: KubeCluster, namespace: str, index: int, old: str) -> bool:
    found = trainers(cluster, namespace).get(index)
    return found is not None and found.metadata.name != old and len(trainers(cluster, namespace)) == 3


@pytest.fixture(scope="module")
def audited(cluster: KubeCluster, operator: OperatorProcess) -> Iterator[None]:
    """audited: the compact scenario, run by the session's operator in a namespace of its own."""
    if cluster.local is None:
        pytest.skip("the audit log is the local control plane's (AITJ_KUBECONFIG names another cluster)")
    if operator.proc is None:
        operator.start()
    namespace = f"audit-{uuid.uuid4().hex[:6]}"
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    wait_for(lambda: cluster.core.list_namespaced_service_account(namespace).items, 30, "its default account")
    pool = Pool(cluster)
    try:
        _scenario(cluster, namespace, pool)
        _secure_scrape(cluster, namespace, operator)
        operator.assert_alive()
        yield
    finally:
        cluster.core.delete_namespace(namespace)
        for node in pool.nodes:
            cluster.core.delete_node(node)


def _scenario(cluster: KubeCluster, namespace: str, pool: Pool) -> None:
    """_scenario: each step is there for the calls it makes the operator send."""
    for _ in range(3):
        pool.add()
    doc = seed_variant(
        NAME,
        pin=pool.pin(),
        clean=set_path("spec.cleanPodPolicy", "All"),  # the end deletes the Service
        timeout=set_path("spec.replicaSpecs.trainer.scaleTimeout", 3),
        # A drain runs the trainers' checkpoint hook first (pods/exec): on a kwok node the exec
        # fails at the node, or its deadline passes, and the drain goes on (semantics.md 26).
        hook=set_path(
            "spec.replicaSpecs.trainer.checkpointOnDrain", {"command": ["true"], "timeoutSeconds": 5}
        ),
        # Hang detection reads the launcher's log (pods/log get); a day of silence before a hang.
        progress=set_path("spec.progress", {"replica": "launcher", "stallSeconds": 86400}),
    )
    # Pods, Service, Secret, ConfigMap and budgets created; the host list rewritten; status, Events.
    create_job(cluster, namespace, doc)
    wait_phase(cluster, namespace, NAME, "Running")
    wait_for(lambda: len(trainers(cluster, namespace)) == 3, 30, "3 trainers running")
    # Fault tolerance: a lost trainer replaced, the budgets and the host list rewritten.
    old = trainers(cluster, namespace)[0].metadata.name
    faults.force_delete(cluster.api, namespace, old)
    wait_for(lambda: replaced(cluster, namespace, 0, old), 30, "trainer 0 replaced")
    # A drain of trainer 1's node: evicted under the budgets, it comes back on another node.
    old = trainers(cluster, namespace)[1]
    cluster.kubectl("drain", old.spec.node_name, *DRAIN)
    wait_for(lambda: replaced(cluster, namespace, 1, old.metadata.name), 30, "trainer 1 replaced")
    # The hook's steps, each an Event on the job (the planner's, from the pod's mark).
    steps = (
        "DrainCheckpointStarted",
        "DrainCheckpointDone",
        "DrainCheckpointFailed",
        "DrainCheckpointTimedOut",
    )

    def hook_events() -> list[str]:
        items = cluster.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={NAME}"
        ).items
        return [f"{e.reason}: {e.message}" for e in items if e.reason in steps]

    wait_for(lambda: len(hook_events()) >= 2, 30, "the hook's Events")
    print("the hook's Events:", *hook_events(), sep="\n  ")
    assert sum(e.startswith("DrainCheckpointStarted") for e in hook_events()) == 1
    # Scaling: no node takes a new trainer (the pool's label is gone), so the scale-out is
    # rolled back after scaleTimeout (the job's replicas patched back) and its pod deleted.
    for node in pool.nodes:
        pool.label(node, on=False)
    patch_job(cluster, namespace, NAME, {"spec": {"replicaSpecs": {"trainer": {"replicas": 4}}}})
    wait_for(
        lambda: get_job(cluster, namespace, NAME)["spec"]["replicaSpecs"]["trainer"]["replicas"] == 3,
        60,
        "replicas set back to 3",
    )
    wait_for(
        lambda: len(live(job_pods(cluster, namespace, NAME, "trainer"))) == 3, 30, "the 4th trainer gone"
    )
    # The end: Succeeded under cleanPodPolicy All, so every pod deleted and released, the
    # Service and the budgets deleted.
    launcher = job_pods(cluster, namespace, NAME, "launcher")[0].metadata.name
    faults.pod_exit(cluster.api, namespace, launcher, 0)
    wait_phase(cluster, namespace, NAME, "Succeeded")
    wait_for(lambda: not job_pods(cluster, namespace, NAME), 60, "every pod of the job gone")
    wait_for(lambda: not cluster.core.list_namespaced_service(namespace).items, 30, "the Service gone")
    # A job deleted while it runs: its pods, held by the operator's finalizer, are released once
    # the operator has read from the apiserver that the job is gone (not only late in its cache).
    for node in pool.nodes:
        pool.label(node, on=True)
    # Its trainers restart with scope All: the seed's pods name the gang-scheduling profile,
    # so a lost trainer forms a new gang and the old PodGroup is deleted (docs/gang.md).
    all_scope = set_path("spec.replicaSpecs.trainer.faultTolerantPolicy.0.restartScope", "All")
    create_job(cluster, namespace, seed_variant(DELETED, pin=pool.pin(), scope=all_scope))
    wait_phase(cluster, namespace, DELETED, "Running")
    faults.force_delete(
        cluster.api, namespace, running(job_pods(cluster, namespace, DELETED, "trainer"))[0].metadata.name
    )
    wait_for(
        lambda: pod_groups(cluster, namespace, DELETED) == [f"{DELETED}-gang-1"], 60, "the new gang alone"
    )
    wait_phase(cluster, namespace, DELETED, "Running")
    delete_job(cluster, namespace, DELETED)
    wait_for(lambda: not job_pods(cluster, namespace, DELETED), 60, "the deleted job's pods gone")
    # A user's Secret under a job's ssh Secret name: the create meets it, and its metadata is
    # read (get) to tell whose it is (tests/e2e/test_foreign_objects.py for the rest).
    cluster.core.create_namespaced_secret(namespace, {"metadata": {"name": naming.ssh_secret_name(HELD)}})
    create_job(cluster, namespace, seed_variant(HELD, pin=pool.pin()))
    wait_for(
        lambda: any(e.reason == "ObjectNotOwned" for e in events_for(cluster, namespace, HELD)),
        60,
        "the held Secret named",
    )
    delete_job(cluster, namespace, HELD)


def _secure_scrape(cluster: KubeCluster, namespace: str, operator: OperatorProcess) -> None:
    """_secure_scrape: a second operator of the same account, as manifests/ha runs it (under
    leader election, with the ha overlay's Role for its Lease) and serving /metrics over HTTPS,
    operating in this namespace only, is scraped with a ServiceAccount's token it does not
    know to be allowed: the TokenReview and the SubjectAccessReview are sent (403). Its Lease
    is read, made, renewed and, as it stops, released: each verb of the Role."""
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac.leader_election_documents(cluster)))
    secured = OperatorProcess(
        operator.kubeconfig,
        operator.log_dir / "secure",
        free_port(),
        [f"--namespace={namespace}", "--leader-elect", f"--leader-election-namespace={LEASE_NAMESPACE}"],
        secure_metrics=True,
    )
    secured.start()
    try:
        wait_for(lambda: _leader(cluster), 60, "the second operator leading")
        scraper = account_token(cluster, namespace, "audit-scraper")
        wait_for(
            lambda: secure_scrape(secured.metrics_port, scraper)[0] == 403,
            60,
            "the scrape reviewed and refused",
        )
        secured.assert_alive()
    finally:
        secured.stop()


def _leader(cluster: KubeCluster) -> str:
    """_leader: the holder of the ha overlay's Lease ("" while none holds it)."""
    try:
        lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE)
    except client.ApiException as e:
        if e.status == 404:
            return ""
        raise
    return str((lease.spec and lease.spec.holder_identity) or "")


# ---- the proof --------------------------------------------------------------------------------


def audit_log(cluster: KubeCluster) -> list[Request]:
    assert cluster.local is not None
    namespace, name = rbac.service_account(cluster)
    assert rbac.user(namespace, name) == AUDITED_USER, "the audit policy records another user"
    lines: list[str] = []
    for path in cluster.local.audit_logs:
        lines += Path(path).read_text().splitlines() if path.exists() else []
    found = list(requests(lines, AUDITED_USER))
    assert found, f"no request of {AUDITED_USER} in {cluster.local.audit_logs}"
    return found


def cluster_role(cluster: KubeCluster) -> dict[str, Any]:
    """cluster_role: the operator's own ClusterRole (the one its binding names; the overlay's
    aitj-metrics-reader is the scrapers')."""
    (binding,) = [doc for doc in rbac.rbac_documents(cluster) if doc["kind"] == "ClusterRoleBinding"]
    name = binding["roleRef"]["name"]
    (role,) = [
        d
        for d in rbac.rbac_documents(cluster)
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name
    ]
    return role


def unserved(cluster: KubeCluster, permissions: set[Permission]) -> set[Permission]:
    """unserved: the permissions on an API group the cluster does not serve now: another
    project's kind the operator uses only where it is installed (Volcano's PodGroup;
    tests/e2e/test_volcano.py installs it for its own tests, then removes it)."""
    groups = {g.name for g in client.ApisApi(cluster.api).get_api_versions().groups} | {""}
    return {p for p in permissions if p[0] not in groups}


# An exec is a websocket GET of pods/exec, audited as get; Kubernetes 1.35+ also authorises it
# as create (AuthorizePodWebsocketUpgradeCreatePermission), a check no audit event names.
AUTHORISED_NOT_AUDITED: frozenset[Permission] = frozenset({("", "pods", "exec", "create")})


def test_every_permission_the_cluster_role_grants_is_used_by_the_operator(
    cluster: KubeCluster, audited: None
) -> None:
    used = {r.permission for r in audit_log(cluster) if r.permission is not None}
    unused = grants(cluster_role(cluster)) - used - unserved(cluster, grants(cluster_role(cluster)))
    unused -= AUTHORISED_NOT_AUDITED
    assert not unused, f"granted, never used (remove them, or the scenarios miss a path): {sorted(unused)}"


def leader_election_role(cluster: KubeCluster) -> dict[str, Any]:
    (role,) = [d for d in rbac.leader_election_documents(cluster) if d["kind"] == "Role"]
    return role


def test_every_permission_the_leader_election_role_grants_is_used_by_the_operator(
    cluster: KubeCluster, audited: None
) -> None:
    used = {r.permission for r in audit_log(cluster) if r.permission is not None}
    unused = grants(leader_election_role(cluster)) - used
    assert not unused, f"granted, never used (remove them, or the scenarios miss a path): {sorted(unused)}"


def test_every_resource_request_of_the_operator_is_one_the_cluster_role_grants(
    cluster: KubeCluster, audited: None
) -> None:
    # The Lease's requests are the ha overlay's Role's (manifests/ha/role.yaml).
    granted = grants(cluster_role(cluster)) | grants(leader_election_role(cluster))
    used = {r.permission for r in audit_log(cluster) if r.permission is not None and not probe(r)}
    assert not used - granted, f"used but not granted by the ClusterRole: {sorted(used - granted)}"


def test_no_request_of_the_operator_was_denied(cluster: KubeCluster, audited: None) -> None:
    log = audit_log(cluster)
    # Right after an apiserver restart (tests/e2e/test_devcluster.py, the API-fault tests) its
    # RBAC authorizer may refuse for a moment while its caches fill: a permission refused once
    # but granted to the operator's other requests is that, not a missing grant. One never
    # granted is.
    granted = {r.permission for r in log if r.decision == "allow"}
    refused = [r for r in log if denied(r) and r.permission not in granted]
    assert not refused, "\n".join(f"{r.code} {r.decision} {r.uri}" for r in refused[:20])
