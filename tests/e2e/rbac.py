"""The operator's identity in the e2e suite: the RBAC objects of manifests/ applied to the test
cluster, and a kubeconfig holding a token for its ServiceAccount (TokenRequest API), so the
session's operator runs with exactly the permissions an install from manifests/ gives it.

Only the RBAC objects are applied (the namespace, the ServiceAccount, the ClusterRole and its
binding): the Deployment's pod would only be faked by kwok, and the CRD is the ``crd``
fixture's. ``kubectl kustomize`` builds them, as ``kubectl apply -k`` would.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.clusters import KubeCluster
from tests.e2e.install import kustomization
from tests.seeds import REPO
from tests.waiting import wait_for

OVERLAY = REPO / "manifests" / "cluster-wide"
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
# A session of the whole e2e suite takes well under an hour; the token outlives it with room.
TOKEN_SECONDS = 6 * 3600


def built(cluster: KubeCluster, overlay: Path = OVERLAY) -> list[dict[str, Any]]:
    """built: the documents ``kubectl kustomize`` makes of ``overlay`` (the cluster's own kubectl)."""
    out = cluster.kubectl("kustomize", str(overlay)).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def rbac_documents(cluster: KubeCluster) -> list[dict[str, Any]]:
    """rbac_documents: the overlay's namespace, ServiceAccount, ClusterRole and binding."""
    return [doc for doc in built(cluster) if doc["kind"] in RBAC_KINDS]


def leader_election_documents(cluster: KubeCluster) -> list[dict[str, Any]]:
    """leader_election_documents: the ha component's Role and RoleBinding for the Lease (the
    ClusterRole's are the cluster-wide install's, applied by ``apply_rbac``)."""
    return [doc for doc in built(cluster, kustomization("ha")) if doc["kind"] in ("Role", "RoleBinding")]


def service_account(cluster: KubeCluster) -> tuple[str, str]:
    """service_account: (namespace, name) of the ServiceAccount the binding grants the ClusterRole to."""
    (binding,) = [doc for doc in rbac_documents(cluster) if doc["kind"] == "ClusterRoleBinding"]
    (subject,) = binding["subjects"]
    return subject["namespace"], subject["name"]


def user(namespace: str, name: str) -> str:
    """user: the name the apiserver knows a ServiceAccount's requests by (audit, RBAC)."""
    return f"system:serviceaccount:{namespace}:{name}"


def apply_rbac(cluster: KubeCluster) -> None:
    """apply_rbac applies the RBAC objects, first waiting out an aitj-system still being deleted
    (tests/e2e/test_manifests.py deletes the one it made)."""
    docs = rbac_documents(cluster)
    for name in [doc["metadata"]["name"] for doc in docs if doc["kind"] == "Namespace"]:
        wait_for(functools.partial(_not_terminating, cluster, name), 120, f"namespace {name} deleted")
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def _not_terminating(cluster: KubeCluster, namespace: str) -> bool:
    out = cluster.kubectl("get", "namespace", namespace, "-o", "jsonpath={.status.phase}", check=False)
    return out.returncode != 0 or out.stdout != "Terminating"


def token_kubeconfig(cluster: KubeCluster, path: Path, seconds: int = TOKEN_SECONDS) -> Path:
    """token_kubeconfig writes to ``path`` a kubeconfig for the admin's cluster and context
    namespace whose user is the ServiceAccount, with a token from the TokenRequest API."""
    namespace, name = service_account(cluster)
    request = {"spec": {"expirationSeconds": seconds}}
    token = cluster.core.create_namespaced_service_account_token(name, namespace, request).status.token
    _, active = config.list_kube_config_contexts(config_file=str(cluster.kubeconfig))  # type: ignore[no-untyped-call]
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    (entry,) = [c for c in admin["clusters"] if c["name"] == active["context"]["cluster"]]
    server = dict(entry["cluster"])
    ca = server.get("certificate-authority")
    if ca:  # a relative path is relative to the kubeconfig it was read from
        server["certificate-authority"] = str((cluster.kubeconfig.parent / ca).resolve())
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": entry["name"], "cluster": server}],
        "users": [{"name": user(namespace, name), "user": {"token": token}}],
        "contexts": [
            {
                "name": "operator",
                "context": {
                    "cluster": entry["name"],
                    "user": user(namespace, name),
                    "namespace": active["context"].get("namespace", "default"),
                },
            }
        ],
        "current-context": "operator",
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    wait_for(functools.partial(_authorized, path), 30, "the ServiceAccount's grants in force")
    return path


def _authorized(kubeconfig: Path) -> bool:
    """_authorized: the ServiceAccount may list pods. The apiserver's RBAC authorizer reads the
    roles through a cache of its own: right after the apply it may still refuse, and an operator
    started then logs 403s the audit test counts as denials."""
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        client.CoreV1Api(api).list_pod_for_all_namespaces(limit=1)
    except ApiException as e:
        if e.status == 403:
            return False
        raise
    finally:
        api.close()
    return True
