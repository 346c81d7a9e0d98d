"""The job's gang objects: Kubernetes' native Workload and PodGroups (KEP-4671, docs/gang.md).

A gang is placed all or none: the scheduler binds none of a PodGroup's pods until it has
found room for ``minCount`` of them. The Workload is the job's policy template (one per job,
named like the job; its spec is immutable); each PodGroup is one gang of pods, named after the
job and its gang epoch (``pod_group_name``): a restart that replaces every pod forms a new gang
under a new name (aitj.core.planner.gang says when), because a pod names its group once
(``spec.schedulingGroup`` is immutable) and a PodGroup stays until its last pod has stopped.

The API is beta in Kubernetes 1.37 (``scheduling.k8s.io/v1beta1``) and alpha in 1.36
(``v1alpha2``), off by default in both (feature gate GenericWorkload). The operator renders
these only where one of them is served, in the newest version served (``served_version``, kept
in aitj.core.planner.types.Settings). The two differ in one field: how a PodGroup names the
Workload template it was made from (``_template_ref``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from aitj.core import api
from aitj.core.render._meta import object_meta

GROUP = "scheduling.k8s.io"
# The versions the operator speaks, newest first. 1.35's v1alpha1 Workload (its pod groups
# inside the Workload, pods naming it by spec.workloadRef) is another design, not used.
VERSIONS = ("v1beta1", "v1alpha2")
NEWEST = VERSIONS[0]
WORKLOAD_PLURAL = "workloads"
POD_GROUP_PLURAL = "podgroups"
# The Workload's one template: every gang of the job is made from it.
TEMPLATE = "trainers"
_EPOCH_SEPARATOR = "-gang-"


def start_together(job: api.Job) -> tuple[api.ReplicaSpec, ...]:
    """start_together: the replicas whose pods the operator creates together, so a gang can
    count them: all but the masters of a job that has workers. The launcher is created only
    once every worker runs (aitj.core.planner.survey's gate): a gang that counted it would
    wait for a pod that waits for the gang. Native gangs and Volcano's PodGroup both use this."""
    has_workers = any(r.replica_type is api.ReplicaType.WORKER for r in job.spec.replicas)
    return tuple(
        r for r in job.spec.replicas if not (has_workers and r.replica_type is api.ReplicaType.MASTER)
    )


def workload_name(job_name: str) -> str:
    """workload_name: the job's Workload is named like the job."""
    return job_name


def pod_group_name(job_name: str, epoch: int) -> str:
    """pod_group_name: the PodGroup of the job's gang ``epoch``, ``<job>-gang-<epoch>``."""
    return f"{job_name}{_EPOCH_SEPARATOR}{epoch}"


def pod_group_epoch(job_name: str, name: str) -> int | None:
    """pod_group_epoch: the epoch ``name`` (a PodGroup's name) stands for in ``job_name``'s
    gangs, None when it is not one of that job's (``pod_group_name`` read backwards)."""
    prefix = f"{job_name}{_EPOCH_SEPARATOR}"
    digits = name[len(prefix) :] if name.startswith(prefix) else ""
    return int(digits) if digits.isdigit() and str(int(digits)) == digits else None


def served_version(resources: Mapping[str, Collection[str]]) -> str | None:
    """served_version: the newest of VERSIONS whose discovery lists both kinds, given the
    resources each version of the group lists (``{"v1beta1": {"workloads", ...}}``; a version
    not served is absent or empty); None when none does."""
    for version in VERSIONS:
        if {WORKLOAD_PLURAL, POD_GROUP_PLURAL} <= set(resources.get(version, ())):
            return version
    return None


def api_version(version: str) -> str:
    """api_version: the apiVersion of the gang kinds in ``version``."""
    return f"{GROUP}/{version}"


def _gang(min_count: int) -> dict[str, Any]:
    return {"gang": {"minCount": min_count}}


def render_workload(job: api.Job, min_count: int, version: str = NEWEST) -> dict[str, Any]:
    """render_workload: the job's Workload in ``version``: one gang template of ``min_count``
    pods, controlled by the job (``controllerRef``), owned by it (garbage-collected with it)."""
    return {
        "apiVersion": api_version(version),
        "kind": "Workload",
        "metadata": object_meta(job, workload_name(job.name)),
        "spec": {
            "controllerRef": {"apiGroup": api.GROUP, "kind": api.KIND, "name": job.name},
            "podGroupTemplates": [{"name": TEMPLATE, "schedulingPolicy": _gang(min_count)}],
        },
    }


def render_pod_group(job: api.Job, epoch: int, min_count: int, version: str = NEWEST) -> dict[str, Any]:
    """render_pod_group: the gang of ``epoch`` in ``version``: placed once ``min_count`` of its
    pods fit."""
    return {
        "apiVersion": api_version(version),
        "kind": "PodGroup",
        "metadata": object_meta(job, pod_group_name(job.name, epoch)),
        "spec": {**_template_ref(version, workload_name(job.name)), "schedulingPolicy": _gang(min_count)},
    }


def _template_ref(version: str, workload: str) -> dict[str, Any]:
    """_template_ref: the PodGroup's reference to the Workload's template: v1beta1's
    ``workloadRef`` ({workloadName, templateName}); v1alpha2 had it one level deeper, as
    ``podGroupTemplateRef.workload`` ({workloadName, podGroupTemplateName})."""
    if version == "v1alpha2":
        return {
            "podGroupTemplateRef": {"workload": {"workloadName": workload, "podGroupTemplateName": TEMPLATE}}
        }
    return {"workloadRef": {"workloadName": workload, "templateName": TEMPLATE}}


def scheduling_group(name: str) -> dict[str, Any]:
    """scheduling_group: a pod's ``spec.schedulingGroup``, which makes it a member of the
    PodGroup ``name`` (``render_pod`` sets it from the pod's Placement)."""
    return {"podGroupName": name}
