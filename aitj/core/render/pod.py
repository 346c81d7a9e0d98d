"""One pod of a replica, rendered from the replica's template.

What the operator adds to or forces on the user's template (docs/pods.md says it for users):

- metadata: name ``<job>-<replica>-<5 chars>-<index>``, the job's namespace, the job as
  controlling owner, our labels (they win over template labels of the same key), the
  operator's finalizer, template annotations plus the caller's. Other template metadata
  (``name``, ``generateName``, ``creationTimestamp``, owner references) is dropped.
- spec: ``restartPolicy: Never`` (the operator owns restarts), ``hostname`` = pod name and
  ``subdomain`` = the headless Service, ``priorityClassName`` when the operator maps the job's
  priority to one; what the pod's ``Placement`` asks: for a replacement that keeps off nodes
  (a rule's excludeNodeSeconds), a required ``kubernetes.io/hostname NotIn`` node affinity, and
  for nodes that show a fault signal a ``metadata.name NotIn`` one, each ANDed into every
  nodeSelectorTerm of the template's own (``aitj.core.render.avoid``); a native gang's
  ``spec.schedulingGroup``. Everything else, ``schedulerName`` included, passes through
  untouched.
- every container: the environment of ``aitj.core.render.env``.
- a master replica whose template names no ServiceAccount: the job's ``<job>-launcher``
  (``aitj.core.render.access``), which may read the job's pods.
- plugin.ssh: the ssh init step, in every pod, and ``/root/.ssh`` (``aitj.core.render.ssh``) in
  the pod's first app container only: the one that runs ssh or sshd.
- plugin.discovery: ``/etc/edl`` (``aitj.core.render.discovery``), in the master replica's pod;
  Volcano's host files at ``/etc/volcano`` and its ``VC_`` variables
  (``aitj.core.render.volcano``), in every pod.
- a Volcano PodGroup (``Placement.volcano_pod_group``): the annotation that makes the pod one
  of its members.

A mount the user already has at ``/root/.ssh``, ``/etc/edl`` or ``/etc/volcano`` in a container
is theirs: we add none there for that container.
"""

from __future__ import annotations

import copy
import posixpath
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aitj.core import api, naming
from aitj.core.observed import ANNOTATION_IN_PLACE
from aitj.core.render._meta import owner_reference, require_dns1035_label, require_dns1123_label
from aitj.core.render.access import names_account
from aitj.core.render.avoid import avoid_names, exclude_nodes
from aitj.core.render.discovery import discovery_mount, discovery_volume
from aitj.core.render.env import inject_env, job_env
from aitj.core.render.gang import scheduling_group
from aitj.core.render.ssh import ssh_init_container, ssh_mount, ssh_volumes
from aitj.core.render.volcano import ANNOTATION_GROUP_NAME, hosts_mount, hosts_volume, uses_volcano

_NO_ANNOTATIONS: Mapping[str, str] = types.MappingProxyType({})


def pod_labels(job: api.Job, replica: api.ReplicaSpec, index: int, generation: int) -> dict[str, str]:
    """pod_labels are the labels the operator finds its pods by."""
    labels = {
        api.LABEL_JOB: job.name,
        api.LABEL_REPLICA: replica.name,
        api.LABEL_INDEX: str(index),
        api.LABEL_GENERATION: str(generation),
    }
    if job.spec.priority:
        labels[api.LABEL_PRIORITY] = job.spec.priority
    return labels


@dataclass(frozen=True)
class PodIdentity:
    """PodIdentity: which pod to render: ``index`` of ``replica`` at restart ``generation``,
    named ``name``. The name is ``naming.pod_name(job.name, job.uid, replica.name, index,
    generation)``, which the planner has already computed for the slot: it is taken, not
    computed again, so a pod's name has one source."""

    replica: api.ReplicaSpec
    index: int
    generation: int
    name: str


@dataclass(frozen=True)
class Placement:
    """Placement: where the scheduler may put a pod, and with whom. One value, so a pod's
    placement is shaped in one place (``render_pod``), whoever decided each part of it.

    ``avoid_nodes``: nodes kept off by name (those that show a fault signal,
    aitj.core.nodesignals); ``exclude_hostnames``: nodes kept off by their
    ``kubernetes.io/hostname`` (a rule's excludeNodeSeconds); ``volcano_pod_group``: the job's
    Volcano PodGroup, named on the pods of replicas Volcano schedules; ``gang_pod_group``: the
    native gang's PodGroup the pod joins (``spec.schedulingGroup``, aitj.core.render.gang);
    ``priority_class``: the PriorityClass the operator maps the job's priority to."""

    avoid_nodes: tuple[str, ...] = ()
    exclude_hostnames: tuple[str, ...] = ()
    volcano_pod_group: str | None = None
    gang_pod_group: str | None = None
    priority_class: str | None = None


ANYWHERE = Placement()


def render_pod(
    job: api.Job,
    pod: PodIdentity,
    restart_counts: Mapping[str, int],
    *,
    finalizer: str,
    extra_annotations: Mapping[str, str] = _NO_ANNOTATIONS,
    placement: Placement = ANYWHERE,
    in_place: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """render_pod returns the pod ``pod`` names, placed as ``placement`` says.

    ``in_place``: the exit codes on which the kubelet restarts all the pod's containers in
    place (``in_place_rules``; empty: none, the pod is as before).

    ``restart_counts`` is ``status.RestartCount`` (replica name → restarts); this replica's
    entry becomes TRAININGJOB_REPLICA_RESTARTCOUNT. The replica's template is not modified.
    Raises ValueError if the pod name cannot be a hostname (longer than 63 characters):
    admission is expected to keep job and replica names short enough.
    """
    replica, name = pod.replica, pod.name
    service = naming.service_name(job.name)
    require_dns1123_label(name, "pod name (used as the pod's hostname)")
    require_dns1035_label(service, "Service name (the job name, used as the pod's subdomain)")

    template = copy.deepcopy(replica.template)
    template_meta = template.get("metadata") or {}
    spec: dict[str, Any] = template.get("spec") or {}

    finalizers = list(template_meta.get("finalizers") or [])
    if finalizer not in finalizers:
        finalizers.append(finalizer)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": job.namespace,
        "labels": {
            **(template_meta.get("labels") or {}),
            **pod_labels(job, replica, pod.index, pod.generation),
        },
        "ownerReferences": [owner_reference(job)],
        "finalizers": finalizers,
    }
    annotations = {**(template_meta.get("annotations") or {}), **extra_annotations}
    if placement.volcano_pod_group and uses_volcano(replica):
        annotations[ANNOTATION_GROUP_NAME] = placement.volcano_pod_group
    codes = sorted(c for c in in_place if c != 0)  # exit 0 is a success: never restarted
    if codes:
        annotations[ANNOTATION_IN_PLACE] = ",".join(str(c) for c in codes)
    if annotations:
        metadata["annotations"] = annotations

    spec["restartPolicy"] = "Never"
    spec["hostname"] = name
    spec["subdomain"] = service
    _place(spec, placement)
    init_containers, containers = _add_plugins(job, replica, spec)
    ours = job_env(job, replica, pod.index, restart_counts.get(replica.name, 0))
    for container in init_containers + containers:
        inject_env(container, ours)
    if codes:
        in_place_rules(containers, codes)

    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def in_place_rules(containers: list[dict[str, Any]], codes: list[int]) -> None:
    """in_place_rules: every app container restarts all the pod's containers, in the same pod,
    when it exits with one of ``codes`` (KEP-5307's restartPolicyRules with KEP-5532's action
    RestartAllContainers; docs/semantics.md, "In-place restarts and the escalation ladder").
    Rules need the container's own restartPolicy: Never, the pod's, so any other exit ends
    the pod as before. A rule of the template's own is kept, after ours. Init containers get
    none: the kubelet runs them again anyway when it restarts all containers."""
    ours = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": codes}}
    for container in containers:
        container.setdefault("restartPolicy", "Never")
        container["restartPolicyRules"] = [ours, *(container.get("restartPolicyRules") or [])]


def in_place_refused(fields: Sequence[str]) -> bool:
    """in_place_refused: an apiserver's refusal of a pod names its containers' restart rules:
    it does not serve RestartAllContainers (Kubernetes 1.35 by default: container rules are
    beta there, that action alpha and off), so the pod is to be created without them."""
    return any(".restartPolicyRules" in f for f in fields)


def without_in_place(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """without_in_place: the pod ``body`` without the in-place rules ``in_place_rules`` added
    (None: it has none). The annotation stays: the pod as observed then says that the rules
    were asked for and are not there, and a failure the InPlace rule matches replaces the pod
    (aitj.core.planner.in_place.fallback)."""
    if ANNOTATION_IN_PLACE not in ((body.get("metadata") or {}).get("annotations") or {}):
        return None
    out = copy.deepcopy(dict(body))
    for container in out["spec"].get("containers") or []:
        rules = [
            r for r in container.get("restartPolicyRules") or [] if r.get("action") != "RestartAllContainers"
        ]
        if rules:
            container["restartPolicyRules"] = rules
            continue
        container.pop("restartPolicyRules", None)
        if container.get("restartPolicy") == "Never":
            container.pop("restartPolicy")  # ours (the pod's own Never says the same)
    return out


def _place(spec: dict[str, Any], placement: Placement) -> None:
    """_place: ``spec`` with what ``placement`` asks of the scheduler."""
    exclude_nodes(spec, placement.exclude_hostnames)
    avoid_names(spec, placement.avoid_nodes)
    if placement.priority_class:
        spec["priorityClassName"] = placement.priority_class
        spec.pop("priority", None)  # admission fills it from the class; a stale value is refused
    if placement.gang_pod_group:
        spec["schedulingGroup"] = scheduling_group(placement.gang_pod_group)


def _add_plugins(
    job: api.Job, replica: api.ReplicaSpec, spec: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """_add_plugins: ``spec`` with what the plugins and the launcher's access add (volumes,
    mounts, the ssh init step, the ServiceAccount); returns its init containers and containers."""
    containers: list[dict[str, Any]] = spec.get("containers") or []
    init_containers: list[dict[str, Any]] = spec.get("initContainers") or []
    volumes: list[dict[str, Any]] = spec.get("volumes") or []
    every = init_containers + containers
    if job.spec.ssh and containers:
        volumes += ssh_volumes(job)
        # The key goes only where ssh runs: the first app container, the one the init step
        # takes its image from (the launcher's ssh, a worker's sshd). Sidecars and the user's
        # init containers never see it.
        _mount_unless_taken(containers[:1], ssh_mount())
        init_containers = [ssh_init_container(containers[0]), *init_containers]
    if replica.replica_type is api.ReplicaType.MASTER and not names_account(replica.template):
        spec["serviceAccountName"] = naming.launcher_account_name(job.name)
    if job.spec.discovery and replica.replica_type is api.ReplicaType.MASTER:
        volumes.append(discovery_volume(job))
        _mount_unless_taken(every, discovery_mount())
    if job.spec.discovery:
        volumes.append(hosts_volume(job))
        _mount_unless_taken(every, hosts_mount())
    if volumes:
        spec["volumes"] = volumes
    if init_containers:
        spec["initContainers"] = init_containers
    return init_containers, containers


def _mount_unless_taken(containers: list[dict[str, Any]], mount: dict[str, Any]) -> None:
    path = posixpath.normpath(mount["mountPath"])
    for container in containers:
        mounts = container.get("volumeMounts") or []
        if all(posixpath.normpath(m.get("mountPath", "")) != path for m in mounts):
            container["volumeMounts"] = [*mounts, dict(mount)]
