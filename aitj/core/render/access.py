"""The launcher's access to the API: a ServiceAccount, a Role and a RoleBinding of the job.

What runs in a master replica's pod sometimes reads the job's pods: the CCE seed's
``job-barrier`` init container lists them (``--incluster``) until the trainers run, as
launchers of MPI jobs do. A pod runs as its namespace's ``default`` ServiceAccount, which may
do nothing, so the seed's launcher would wait forever. The operator therefore gives the pods of
master replicas whose template names no ServiceAccount one of the job's own,
``<job>-launcher``, allowed only to read pods and the job itself (the Role names no pod:
RBAC cannot narrow a list to a label). A template that names a ServiceAccount keeps it: its
owner decides what it may do. All three objects go with the job (owner reference).

The operator may create this Role only because it holds every permission it grants (RBAC
refuses escalation): keep ``RULES`` within the operator's own ClusterRole.
"""

from __future__ import annotations

from typing import Any

from aitj.core import api, naming
from aitj.core.render._meta import object_meta

RBAC_GROUP = "rbac.authorization.k8s.io"
RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
    {"apiGroups": [api.GROUP], "resources": [api.PLURAL], "verbs": ["get"]},
)


def needs_access(job: api.Job) -> bool:
    """needs_access: some master replica's template names no ServiceAccount."""
    return any(
        r.replica_type is api.ReplicaType.MASTER and not names_account(r.template) for r in job.spec.replicas
    )


def names_account(template: dict[str, Any]) -> bool:
    """names_account: the pod template names its ServiceAccount (either field)."""
    spec = template.get("spec") or {}
    return bool(spec.get("serviceAccountName") or spec.get("serviceAccount"))


def render_service_account(job: api.Job) -> dict[str, Any]:
    name = naming.launcher_account_name(job.name)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": object_meta(job, name)}


def render_role(job: api.Job) -> dict[str, Any]:
    name = naming.launcher_account_name(job.name)
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": object_meta(job, name),
        "rules": [dict(rule) for rule in RULES],
    }


def render_role_binding(job: api.Job) -> dict[str, Any]:
    name = naming.launcher_account_name(job.name)
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": object_meta(job, name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": job.namespace}],
    }
