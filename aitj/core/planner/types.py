"""The Plan: everything one reconcile pass should do, as plain frozen data.

Pure. The planner's functions return Plans (``plan`` for a job that parses,
``aitj.core.planner.lifecycle`` for the rest); every manifest in a Plan is already rendered,
so carrying one out is sending it. How, in what order and with what error handling the
executor sends it: ``aitj.controller.executor`` (its module docstring and ``STEPS``).

Also here: what the planner is told about the objects the job owns (``ObjectRef``, ``Owned``)
besides its pods, and the operator's own settings (``Settings``), both plain input data; and
two facts of a pass that several of its parts share (``HostLists``, ``Gang``: see
aitj.core.planner.part), here so that the modules that make them can also hold a part.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aitj.core.api import JobStatus, Phase, RestartScope
from aitj.core.nodesignals import DEFAULT_SIGNALS, NodeSignals
from aitj.core.planner.quick import once, quick_init
from aitj.core.planner.shortfall import Shortfall
from aitj.core.policy import Failure


class ObjectKind(enum.StrEnum):
    """ObjectKind: the kinds of object, other than pods, the operator makes for a job."""

    SERVICE = "Service"  # the headless Service behind the pods' DNS names
    SECRET = "Secret"  # plugin.ssh: the job's key pair
    CONFIGMAP = "ConfigMap"  # plugin.discovery: the host list
    # The master pods' access to the API (aitj.core.render.access): the barrier lists pods.
    SERVICE_ACCOUNT = "ServiceAccount"
    ROLE = "Role.rbac.authorization.k8s.io"
    ROLE_BINDING = "RoleBinding.rbac.authorization.k8s.io"
    PDB = "PodDisruptionBudget"  # one per replica type: a drain takes one pod of each at a time
    VOLCANO_PODGROUP = "PodGroup.scheduling.volcano.sh"  # the gang, when Volcano schedules the pods
    # Native gang scheduling (scheduling.k8s.io, aitj.core.render.gang): the job's policy
    # template, and one PodGroup per gang epoch. Named with their group, like Volcano's.
    GANG_WORKLOAD = "Workload.scheduling.k8s.io"
    GANG_POD_GROUP = "PodGroup.scheduling.k8s.io"


@quick_init
@dataclass(frozen=True)
class ObjectRef:
    """ObjectRef: one object of the job's namespace, by kind and name. ``uid``: the observed
    object's, when a delete names it (its precondition: an object made since under that name
    is not deleted); not part of which object the ref names."""

    kind: ObjectKind
    name: str
    uid: str = field(default="", compare=False)


@dataclass(frozen=True)
class ObjectState:
    """ObjectState: what the cache holds of one object besides its name (its metadata only):
    ``uid`` and ``resource_version``; ``controller``, the uid of its controller ownerReference
    ("" when none: not the job's); ``digest``, the fingerprint of what the operator last wrote
    into it (annotation ``objects.ANNOTATION_WRITTEN``; "" when none), which tells a write that
    landed from one that did not (aitj.core.planner.objects); ``proof``, the proof derived from
    the job's key the operator writes on it (annotation ``objects.ANNOTATION_PROOF``; "" when
    none) and ``created``, its creationTimestamp as written: they tell the job's own from one
    whose creator only wrote the job's ownerReference (``objects.controls``)."""

    uid: str = ""
    resource_version: str = ""
    controller: str = ""
    digest: str = ""
    proof: str = ""
    created: str = ""


# The objects (other than pods) observed under the job's names: those its label picks, and
# those a create found already there (``aitj.controller.cache``), each with its state. Only
# those the job controls are its own (``objects.split``).
Owned = Mapping[ObjectRef, ObjectState]


@quick_init
@dataclass(frozen=True)
class Manifest:
    """Manifest: an object to send, rendered. ``body`` is left out of repr: it can hold key
    material (the ssh Secret), and a Plan must be safe to print."""

    kind: ObjectKind
    name: str
    body: Mapping[str, Any] = field(repr=False, hash=False)
    # The resourceVersion of the job's object this rewrites, as observed: the write is made
    # only if the object is still that version. "": there is none of the job's: create it.
    version: str = field(default="", compare=False)
    # The uid of the job's object this rewrites, as observed ("": none, create it). A budget's
    # or a PodGroup's patch names it rather than the version: their controllers write their
    # status all the time, and a spec the operator alone writes needs only to be the job's.
    uid: str = field(default="", compare=False)

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.name)


@dataclass(frozen=True)
class Settings:
    """Settings: what the operator was started with that shapes what it decides and renders.
    ``priority_classes``: job priority -> PriorityClass name (``aitj run --priority-class``);
    ``node_signals``: the node conditions and taints that are node failures
    (``--node-fault-condition``, ``--node-fault-taint``; aitj.core.nodesignals);
    ``volcano_podgroups``: Volcano's PodGroup kind was served when the operator started;
    ``gang_schedulers``: the schedulerNames that gang-schedule with Kubernetes' native
    Workload API, empty when the cluster does not serve it (aitj.core.planner.gang);
    ``gang_version``: the version of that API the gang objects are written in, the newest
    the cluster serves (aitj.core.render.gang.served_version)."""

    priority_classes: Mapping[str, str] = field(default_factory=dict, hash=False)
    node_signals: NodeSignals = DEFAULT_SIGNALS
    volcano_podgroups: bool = False
    gang_schedulers: frozenset[str] = frozenset()
    gang_version: str = "v1beta1"


@dataclass(frozen=True)
class SshKeys:
    """SshKeys: a fresh key pair for a job's ssh Secret, made outside the pure core (it is
    randomness) and passed in like ``now``. Not in repr: keys must never reach a log."""

    private_pem: str = field(repr=False)
    public_openssh: str = field(repr=False)


@dataclass(frozen=True)
class PodCreate:
    """PodCreate: a pod to create. ``name`` is naming.pod_name(job, uid, replica, index,
    generation); ``body`` the pod rendered by ``aitj.core.render.render_pod`` under that name,
    with the restart counts and the restart-ledger stamp of this pass."""

    name: str
    replica: str
    index: int
    generation: int
    body: Mapping[str, Any] = field(repr=False, hash=False)


class DeleteReason(enum.StrEnum):
    """DeleteReason: why a pod is deleted. The values are the ``kind`` label of
    aitj_pods_deleted_total: do not change them."""

    RESTART = "restart"  # the old pod of a restart
    STUCK = "stuck"  # still terminating restartTimeLimit after its deletion: force-deleted
    UNWANTED = "unwanted"  # no index wants it (scaled away, replica gone)
    CLEANUP = "cleanup"  # a finished job's cleanPodPolicy removes it
    SUSPEND = "suspend"  # the job is suspended (spec.suspend)


@dataclass(frozen=True)
class PodNudge:
    """PodNudge: a pod whose annotation ANNOTATION_HOSTS to set to ``digest``. Any change of a
    pod makes its kubelet sync it, and a sync refreshes its ConfigMap volumes at once: without
    it the new discovery lists reach the pod only on the kubelet's own period (a minute or
    more)."""

    name: str
    uid: str
    digest: str


@dataclass(frozen=True)
class DrainHook:
    """DrainHook: run a replica's checkpointOnDrain ``command`` in pod ``name`` (uid ``uid``),
    container ``container``, for at most ``timeout_seconds`` (aitj.core.planner.drain_checkpoint)."""

    name: str
    uid: str
    container: str
    command: tuple[str, ...]
    timeout_seconds: int


@dataclass(frozen=True)
class PodDelete:
    """PodDelete: a pod to delete. ``grace_period_seconds`` None: the pod's own grace period.
    ``reason`` says why (metrics); ``message`` says it for people (logs, ``aitj explain``)."""

    name: str
    uid: str
    grace_period_seconds: int | None
    reason: DeleteReason
    message: str


@quick_init
@dataclass(frozen=True)
class Event:
    """Event: a Kubernetes Event to emit on the job. ``type`` is Normal or Warning. ``name``:
    when set, the Event's object name; the executor creates it once (AlreadyExists is done), so
    a pass planned twice from a status that was not yet back in the cache says it once."""

    type: str
    reason: str
    message: str
    name: str | None = None


@dataclass(frozen=True)
class HostEntry:
    """HostEntry: one Running worker in the discovery host list, for people (``aitj explain``,
    tests); what is sent is ``Plan.discovery``, the rendered ConfigMap."""

    pod: str
    replica: str
    index: int


@quick_init
@dataclass(frozen=True)
class HostLists:
    """HostLists: plugin.discovery's lists of a pass (aitj.core.planner.hostfiles):
    ``hosts``, Horovod's list (workers); ``running``, each replica's pods in its Volcano host
    file (every replica, in index order); ``masters``, the master replicas' part of
    ``running`` (what ``status.hostFiles`` records); ``held``, the Running workers kept out
    of both until their wave runs, and ``wake``, seconds until the first of them joins anyway
    (None when none is held)."""

    hosts: tuple[HostEntry, ...]
    running: Mapping[str, tuple[str, ...]]
    masters: Mapping[str, tuple[str, ...]]
    held: tuple[str, ...] = ()
    wake: float | None = None

    @once
    def pods(self) -> tuple[str, ...]:
        """pods: Horovod's list by pod name (what ``status.discoveryHosts`` records); made once,
        as a pass compares it with the status's more than once."""
        return tuple(h.pod for h in self.hosts)


@dataclass(frozen=True)
class Gang:
    """Gang: the native gang of a pass (aitj.core.planner.gang): the PodGroup this pass's new
    pods join (``pod_group``), the gang objects the job lacks (created before the pods) and
    the PodGroups of earlier epochs to delete."""

    pod_group: str
    epoch: int
    ensure: tuple[Manifest, ...] = ()
    removes: tuple[ObjectRef, ...] = ()


@quick_init
@dataclass(frozen=True)
class RestartRecord:
    """RestartRecord: one restart the planner counted, as it must be recorded: one entry in
    ``status.restarts``, one Event, one count in the metrics and one log line, each exactly once.

    Why it exists: the rule engine's verdict (``policy.RestartDecision``, which the restarted
    slot keeps for ``aitj explain``) and the slot are gone when the pass ends; this is the plain
    data that outlives it. The pass that decides a restart stamps it on every pod it creates
    (the ledger annotation, ``aitj.core.planner.ledger``); the first pass whose status write
    succeeds, this one or a later one, records it (docs/semantics.md, "Each restart is recorded
    once").

    Keyed by (replica, index, generation): ``generation`` and ``pod`` are the failed pod's.
    ``failure``: what went wrong (``failure.at``: when, None if the cluster does not say);
    ``rule`` and ``scope``: what restarted it; ``time``: when the restart was decided."""

    replica: str
    index: int
    generation: int
    pod: str
    failure: Failure
    rule: str
    scope: RestartScope
    time: datetime

    @property
    def key(self) -> tuple[str, int, int]:
        """key: (replica, index, failed generation): one restart, whichever pass records it."""
        return self.replica, self.index, self.generation

    @property
    def latency_seconds(self) -> float | None:
        """latency_seconds: from the failure to the decision (None when the failure time is
        unknown). The same whichever pass records the restart."""
        at = self.failure.at
        return max((self.time - at).total_seconds(), 0.0) if at is not None else None


@dataclass(frozen=True)
class ReplicasPatch:
    """ReplicasPatch: set ``spec.replicaSpecs.<replica>.replicas`` to ``value`` if it is still
    ``expected`` (the rollback of a scale-out; aitj.core.planner.scaling)."""

    replica: str
    expected: int
    value: int


@dataclass(frozen=True)
class Outcome:
    """Outcome: the job finished in this pass (Succeeded, Failed or Timeout) and why."""

    phase: Phase
    reason: str
    message: str


@quick_init
@dataclass(frozen=True)
class Plan:
    """Plan: what one pass should do. Each field but ``hosts``, ``held``, ``list_held``,
    ``shortfalls`` and ``requeue_after`` is a step of ``aitj.controller.executor.STEPS``; empty
    (or None) means nothing to do. ``hosts``, ``held``, ``list_held`` and ``shortfalls`` are for
    people: what ``discovery`` lists, the Running workers it leaves out until their wave runs
    (aitj.core.planner.hostfiles), how long Horovod's list is kept while its ring re-forms
    (aitj.core.planner.ring_hold), and why indices run without a Running pod (a backoff, a
    used-up rule budget, an excluded node; aitj.core.planner.rule_budgets)."""

    ensure: tuple[Manifest, ...] = ()  # the job's objects the cache does not hold: create them
    removes: tuple[ObjectRef, ...] = ()  # delete (the Service, cleanPodPolicy All)
    creates: tuple[PodCreate, ...] = ()
    discovery: Manifest | None = None  # the discovery ConfigMap to rewrite; None: unchanged
    nudges: tuple[PodNudge, ...] = ()  # master pods to annotate, so their kubelet shows the new lists
    status: JobStatus | None = field(default=None, hash=False)  # the new status; None: unchanged
    spec_replicas: tuple[ReplicasPatch, ...] = ()  # set replicas back (after the status write)
    deletes: tuple[PodDelete, ...] = ()
    release: tuple[str, ...] = ()  # pod names whose TRACKING_FINALIZER to remove
    budgets: tuple[Manifest, ...] = ()  # PodDisruptionBudgets to write (update, or create)
    podgroup: Manifest | None = None  # the Volcano PodGroup to rewrite (its spec changed); None: unchanged
    probes: tuple[Manifest, ...] = ()  # objects held by another under the job's names: try the create again
    events: tuple[Event, ...] = ()
    restart_events: tuple[Event, ...] = ()  # named, one per restart: sent before the status
    restarts: tuple[RestartRecord, ...] = ()  # first recorded by this status: counted after it
    outcome: Outcome | None = None
    hosts: tuple[HostEntry, ...] | None = None  # what ``discovery`` lists, for people
    held: tuple[str, ...] = ()  # Running workers left out of the lists until their wave runs (for people)
    list_held: float | None = None  # seconds Horovod's list stays as it is (ring_hold; for people)
    requeue_after: float | None = None  # seconds: plan the job again then even if nothing changes
    shortfalls: tuple[Shortfall, ...] = ()  # indices held back, and why (not sent: for people)
    drain_hooks: tuple[DrainHook, ...] = ()  # checkpoints to run before a drain (the reconciler's)
