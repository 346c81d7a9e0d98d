"""Observed state: slim, frozen views of the pods and nodes the operator watches.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it). The operator keeps
these views in its cache (``aitj.controller.cache``), built with ``PodView.from_dict`` /
``NodeView.from_dict`` from the raw watch bodies, and hands them to the planner
(``aitj.core.planner.plan``). Nothing here decides anything: ``aitj.core.policy`` classifies
failures, ``aitj.core.planner`` decides what to do.

A pod's restart-ledger stamp (annotation ``ANNOTATION_LEDGER``) is kept as the raw string: the
ledger is the planner's (``aitj.core.planner.ledger``), which parses it. What is kept of a pod
is bounded (issue 24, section 4): the informer matches the job label cluster-wide, so any
namespace can make the operator hold pods it did not make. A stamp is kept only from a pod
whose controller is an AITrainingJob (no other pod's stamp is ever read:
``aitj.core.planner.core.owned_by``), and only up to ``MAX_LEDGER_ANNOTATION`` characters; a
larger one is dropped and its size kept in ``ledger_dropped``, for the cache to log. The hosts
digest is kept up to ``MAX_HOSTS_ANNOTATION``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from aitj.core import naming
from aitj.core.api import (
    KIND,
    LABEL_GENERATION,
    LABEL_INDEX,
    LABEL_JOB,
    LABEL_PREFIX,
    LABEL_REPLICA,
    Ownership,
)
from aitj.core.trainlog import TrainingSeen, Waiting
from aitj.core.wire import as_int, as_list, mapping, parse_time

# The finalizer the operator puts on every pod it creates. A pod deleted by anyone else, even
# with grace 0, stays visible (deletionTimestamp set) until the operator has created its
# replacement and removes the finalizer: force deletion is detected exactly and crash-safely.
TRACKING_FINALIZER = f"{LABEL_PREFIX}/pod-tracking"
# The restart ledger as it stood when the pod was planned (JSON: aitj.core.planner.ledger).
ANNOTATION_LEDGER = f"{LABEL_PREFIX}/restart-ledger"
# The discovery lists a master pod was last nudged for (aitj.core.planner.hostfiles.nudges).
ANNOTATION_HOSTS = f"{LABEL_PREFIX}/discovery-hosts"
# Where a pod's checkpoint-before-drain hook stands, written by the operator that runs it
# (aitj.controller.drainhooks; read by aitj.core.planner.drain_checkpoint).
ANNOTATION_DRAIN_CHECKPOINT = f"{LABEL_PREFIX}/drain-checkpoint"
MAX_DRAIN_CHECKPOINT_ANNOTATION = 256
# The largest stamp accepted (characters of its JSON): the apiserver's own bound on all of a
# pod's annotations. Not lower, on purpose: a stamp holds each restarted index's count of every
# replica (about 17 B an index: 170 KB for 10,000), the records of its pass and their indices'
# rule histories, so a job of some 11,000 restarted indices writes stamps near 192 KiB; a cap
# below what the operator writes would drop its own stamps, and with them the epoch that keeps
# its pods from being judged superseded and replaced, over and over. What bounds the memory a
# tenant can cost is that a pod no AITrainingJob controls keeps no stamp at all: one of another
# namespace labelled as a job's, with 2,000 labels and two annotations of 256 KiB, costs the
# cache about 800 B (tests/unit/test_informer_memory.py). A pod that names an AITrainingJob it
# was not made by is deleted by the garbage collector, unless a finalizer of its maker's holds it:
# then it costs up to this much, as many as its namespace's pod quota allows.
# The exit codes the operator rendered as in-place restart rules into the pod's containers
# (aitj.core.render.pod.in_place_rules): "137,139". Its presence with no rule in the pod's spec
# says the cluster dropped them (docs/semantics.md, "In-place restarts and the escalation ladder").
ANNOTATION_IN_PLACE = f"{LABEL_PREFIX}/in-place"
MAX_IN_PLACE_ANNOTATION = 1024  # 255 codes of up to 3 digits and their commas
RESTARTING_ALL_CONTAINERS = "RestartingAllContainers"  # the kubelet's, on the others one exit restarts
MAX_LEDGER_ANNOTATION = 256 * 1024
MAX_HOSTS_ANNOTATION = 128  # a digest (aitj.core.planner.hostfiles.digest): 16 hex characters

DISRUPTION_TARGET = "DisruptionTarget"
# DisruptionTarget reasons (k8s.io/api/core/v1). The scheduler's was renamed in 1.27.
PREEMPTION_REASONS = frozenset({"PreemptionByScheduler", "PreemptionByKubeScheduler"})
# The node going away's: the planner prefers nodeNotReady for these when the node is not Ready.
NODE_DISRUPTION_REASONS = frozenset({"DeletionByTaintManager", "DeletionByPodGC"})
KUBELET_EVICTED = "Evicted"  # pod.status.reason after a kubelet (node-pressure) eviction


@dataclass(frozen=True)
class ProgressSeen:
    """ProgressSeen: what the operator last read of a watched pod's log (spec.progress;
    aitj.controller.progress reads it, aitj.core.planner.hang judges it): ``line_at``, the
    kubelet's timestamp of the newest progress line seen (None: none yet), and ``checked_at``,
    when the log was last read (the operator's clock)."""

    line_at: datetime | None
    checked_at: datetime


@dataclass(frozen=True)
class PodView:
    """PodView is what the planner needs to know about one pod.

    ``job``/``replica``/``index``/``generation`` come from the operator's labels (None / 0 when
    absent: such a pod is not the operator's). ``running_since``: when its first app container
    started (else when it became Ready), None if it never ran. ``exit_code``: the first non-zero
    terminated exit code in spec order, init containers first (they run first; a failing one
    stops the pod before the app containers start); sidecars (init containers with
    ``restartPolicy: Always``) are skipped, since the kubelet kills them when the pod ends.
    ``disruption``: the reason of a True ``DisruptionTarget`` condition (EvictionByEvictionAPI,
    PreemptionByScheduler, TerminationByKubelet, DeletionByTaintManager, ...).
    """

    name: str
    namespace: str = ""
    uid: str = ""
    job: str | None = None
    replica: str | None = None
    index: int | None = None
    generation: int = 0
    phase: str = "Pending"
    node_name: str | None = None
    created: datetime | None = None
    running_since: datetime | None = None
    deleted_at: datetime | None = None  # metadata.deletionTimestamp
    deletion_grace_seconds: int | None = None  # metadata.deletionGracePeriodSeconds
    finalizers: tuple[str, ...] = ()
    exit_code: int | None = None
    exit_container: str | None = None
    exit_at: datetime | None = None  # finishedAt of the container of exit_code (none: the last's)
    disruption: str | None = None
    disruption_at: datetime | None = None
    reason: str | None = None  # status.reason: Evicted, NodeLost, UnexpectedAdmissionError, ...
    message: str | None = None  # status.message
    ledger_annotation: str | None = None  # the raw ANNOTATION_LEDGER (aitj.core.planner.ledger)
    hosts_annotation: str | None = None  # the raw ANNOTATION_HOSTS (aitj.core.planner.hostfiles)
    unschedulable: str | None = None  # the scheduler's message when it cannot place the pod
    owner_uid: str | None = None  # the uid of its controller (the job that made it), if it names one
    ledger_dropped: int = 0  # the size of a stamp too large to keep (MAX_LEDGER_ANNOTATION), else 0
    pod_group: str | None = None  # spec.schedulingGroup.podGroupName: its gang (aitj.core.planner.gang)
    # In-place restarts (issue 28): the ANNOTATION_IN_PLACE codes; whether the spec as stored has
    # an app container rule RestartAllContainers (the cluster served the rules); the in-place
    # restarts so far (the highest app container restartCount: with the container restartPolicy
    # Never, only such a rule restarts one); the last one's exit (code, container, finishedAt).
    in_place: str | None = None
    in_place_served: bool = False
    restarts: int = 0
    restart_exit: tuple[int, str, datetime | None] | None = None
    drain_checkpoint: str | None = None  # the raw ANNOTATION_DRAIN_CHECKPOINT (section 26)
    progress: ProgressSeen | None = None  # the watched pod's log, as read (spec.progress), else None
    waiting: Waiting | None = None  # still in the ring a recovery broke (aitj.core.planner.watchdog)
    training: TrainingSeen | None = None  # a master's log as the watchdog read it (planner.ring_hold)

    def made_by(self, job_name: str, job_uid: str, ownership: Ownership | None = None) -> bool:
        """made_by: the job ``job_name`` (uid ``job_uid``, ``ownership`` its status's) made this
        pod: it is the pod's controller, and the pod's name is the one the operator derives from
        its labels and the job's key (naming.pod_name). A pod that only carries the job's labels
        is not the job's, nor one under a name its creator could tell without reading the job.
        A job without a key (an operator before keys) names its pods unkeyed; once keyed, an
        unkeyed name is the job's only for a pod created before ``legacyBefore``: the time its key
        was written, set for a job that had pods then (docs/security.md)."""
        if not job_uid or self.owner_uid != job_uid or self.job != job_name:
            return False
        if self.replica is None or self.index is None:
            return False
        key = ownership.key if ownership is not None else None
        if self.name == naming.pod_name(job_name, job_uid, self.replica, self.index, self.generation, key):
            return True
        legacy = naming.pod_name(job_name, job_uid, self.replica, self.index, self.generation)
        return (
            ownership is not None
            and key is not None
            and ownership.predates(self.created)
            and self.name == legacy
        )

    @property
    def tracked(self) -> bool:
        """tracked: the pod still carries the operator's finalizer."""
        return TRACKING_FINALIZER in self.finalizers

    @property
    def deleting(self) -> bool:
        return self.deleted_at is not None

    @property
    def deletion_started(self) -> datetime | None:
        """deletion_started: when the delete call was made (deletionTimestamp minus the grace)."""
        if self.deleted_at is None:
            return None
        return self.deleted_at - timedelta(seconds=self.deletion_grace_seconds or 0)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def running(self) -> bool:
        """running: phase Running and not on its way out."""
        return self.phase == "Running" and self.deleted_at is None

    @classmethod
    def from_dict(cls, pod: Mapping[str, Any]) -> PodView:
        meta = mapping(pod.get("metadata"))
        spec = mapping(pod.get("spec"))
        status = mapping(pod.get("status"))
        labels = mapping(meta.get("labels"))
        annotations = mapping(meta.get("annotations"))
        job = labels.get(LABEL_JOB)
        replica = labels.get(LABEL_REPLICA)
        controller = _controller(meta)
        ledger = _stamp(annotations, controller)
        hosts = annotations.get(ANNOTATION_HOSTS)
        exit_code, exit_container, exit_at = _exit(spec, status)
        disruption, disruption_at = _disruption(status)
        app = as_list(status.get("containerStatuses"))
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            uid=str(meta.get("uid", "")),
            job=job if isinstance(job, str) else None,
            replica=replica if isinstance(replica, str) else None,
            index=as_int(labels.get(LABEL_INDEX)),
            generation=max(as_int(labels.get(LABEL_GENERATION), 0) or 0, 0),
            phase=str(status.get("phase") or "Pending"),
            node_name=spec.get("nodeName") or None,
            created=parse_time(meta.get("creationTimestamp")),
            running_since=_running_since(status),
            deleted_at=parse_time(meta.get("deletionTimestamp")),
            deletion_grace_seconds=as_int(meta.get("deletionGracePeriodSeconds")),
            finalizers=tuple(str(f) for f in as_list(meta.get("finalizers"))),
            exit_code=exit_code,
            exit_container=exit_container,
            exit_at=exit_at,
            disruption=disruption,
            disruption_at=disruption_at,
            reason=status.get("reason") or None,
            message=status.get("message") or None,
            ledger_annotation=ledger if len(ledger or "") <= MAX_LEDGER_ANNOTATION else None,
            hosts_annotation=hosts if isinstance(hosts, str) and len(hosts) <= MAX_HOSTS_ANNOTATION else None,
            unschedulable=None if spec.get("nodeName") else _unschedulable(status),
            owner_uid=str(controller["uid"]) if controller else None,
            ledger_dropped=len(ledger) if ledger is not None and len(ledger) > MAX_LEDGER_ANNOTATION else 0,
            pod_group=mapping(spec.get("schedulingGroup")).get("podGroupName") or None,
            in_place=_in_place(annotations),
            in_place_served=_served(spec),
            restarts=max((as_int(mapping(c).get("restartCount"), 0) or 0 for c in app), default=0),
            restart_exit=_restart_exit(app),
            drain_checkpoint=_short(annotations.get(ANNOTATION_DRAIN_CHECKPOINT)),
        )


def _short(value: object) -> str | None:
    """_short: an annotation the operator writes short, kept if it is (a longer one is not its)."""
    return value if isinstance(value, str) and len(value) <= MAX_DRAIN_CHECKPOINT_ANNOTATION else None


def _controller(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """_controller: the ownerReference marked controller that names a uid, if any."""
    for ref in as_list(meta.get("ownerReferences")):
        ref = mapping(ref)
        if ref.get("controller") and ref.get("uid"):
            return ref
    return None


def _stamp(annotations: Mapping[str, Any], controller: Mapping[str, Any] | None) -> str | None:
    """_stamp: the pod's ledger stamp, if its controller is an AITrainingJob (None otherwise:
    the planner reads no other pod's, so it is not kept)."""
    stamp = annotations.get(ANNOTATION_LEDGER)
    if not isinstance(stamp, str) or controller is None or controller.get("kind") != KIND:
        return None
    return stamp


def _in_place(annotations: Mapping[str, Any]) -> str | None:
    value = annotations.get(ANNOTATION_IN_PLACE)
    return value if isinstance(value, str) and len(value) <= MAX_IN_PLACE_ANNOTATION else None


def _served(spec: Mapping[str, Any]) -> bool:
    """_served: an app container of the spec as stored has a RestartAllContainers rule."""
    return any(
        mapping(r).get("action") == "RestartAllContainers"
        for c in as_list(spec.get("containers"))
        for r in as_list(mapping(c).get("restartPolicyRules"))
    )


def _restart_exit(statuses: list[Any]) -> tuple[int, str, datetime | None] | None:
    """_restart_exit: the latest non-zero lastState exit of an app container that the kubelet
    did not stop itself to restart them all: the exit that restarted the pod in place."""
    found: tuple[int, str, datetime | None] | None = None
    for s in map(mapping, statuses):
        last = mapping(mapping(s.get("lastState")).get("terminated"))
        code = as_int(last.get("exitCode"))
        if not code or last.get("reason") == RESTARTING_ALL_CONTAINERS:
            continue
        at = parse_time(last.get("finishedAt"))
        if found is None or (at is not None and (found[2] is None or at > found[2])):
            found = (code, str(s.get("name", "")), at)
    return found


def _statuses_in_spec_order(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> Iterable[Mapping[str, Any]]:
    """Container statuses, init containers first, each list in spec order (the API does not
    promise status order); statuses of containers the spec does not name come last."""
    for spec_key, status_key in (
        ("initContainers", "initContainerStatuses"),
        ("containers", "containerStatuses"),
    ):
        by_name = {mapping(s).get("name"): mapping(s) for s in as_list(status.get(status_key))}
        for container in as_list(spec.get(spec_key)):
            c = mapping(container)
            if spec_key == "initContainers" and c.get("restartPolicy") == "Always":
                by_name.pop(c.get("name"), None)  # a sidecar: killed when the pod ends
                continue
            s = by_name.pop(c.get("name"), None)
            if s is not None:
                yield s
        yield from by_name.values()


def _exit(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[int | None, str | None, datetime | None]:
    finished = None  # with no non-zero code: when the last container finished (policy.classify)
    for s in _statuses_in_spec_order(spec, status):
        terminated = mapping(mapping(s.get("state")).get("terminated"))
        code, at = as_int(terminated.get("exitCode")), parse_time(terminated.get("finishedAt"))
        if code:  # 0 is success, None is "not terminated"
            return code, str(s.get("name", "")), at
        finished = at if finished is None or (at is not None and at > finished) else finished
    return None, None, finished


def _running_since(status: Mapping[str, Any]) -> datetime | None:
    started: list[datetime] = []
    for s in as_list(status.get("containerStatuses")):
        state = mapping(mapping(s).get("state"))
        for key in ("running", "terminated"):
            at = parse_time(mapping(state.get(key)).get("startedAt"))
            if at is not None:
                started.append(at)
    if started:
        return min(started)
    for c in as_list(status.get("conditions")):
        cond = mapping(c)
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def _unschedulable(status: Mapping[str, Any]) -> str | None:
    """_unschedulable: the message of a PodScheduled condition the scheduler set False with
    reason Unschedulable (``0/4 nodes are available: 4 Insufficient cpu. ...``)."""
    for c in as_list(status.get("conditions")):
        cond = mapping(c)
        if (cond.get("type"), cond.get("status"), cond.get("reason")) == (
            "PodScheduled",
            "False",
            "Unschedulable",
        ):
            return str(cond.get("message") or "Unschedulable")
    return None


def _disruption(status: Mapping[str, Any]) -> tuple[str | None, datetime | None]:
    for c in as_list(status.get("conditions")):
        cond = mapping(c)
        if cond.get("type") == DISRUPTION_TARGET and cond.get("status") == "True":
            return str(cond.get("reason") or "Unknown"), parse_time(cond.get("lastTransitionTime"))
    return None, None


class NodeCondition(NamedTuple):
    """NodeCondition: one condition of a node other than Ready (a Node Problem Detector's
    ``KernelDeadlock``, a GPU health agent's, ``MemoryPressure``, ...); ``since``: its
    lastTransitionTime. Heartbeat times are left out: a view changes only when a status does."""

    type: str
    status: str
    reason: str = ""
    since: datetime | None = None


class NodeTaint(NamedTuple):
    """NodeTaint: one taint of a node; ``added``: its timeAdded (set for NoExecute taints)."""

    key: str
    effect: str = ""
    added: datetime | None = None


@dataclass(frozen=True)
class NodeView:
    """NodeView: a node's name, its Ready condition ("True", "False" or "Unknown"), whether
    it is cordoned (``unschedulable``: spec.unschedulable, what ``kubectl cordon`` and ``kubectl
    drain`` set), and its other conditions and its taints, which ``aitj.core.nodesignals`` reads
    for the fault signals the operator was told about.

    A node without a Ready condition is "Unknown". A node missing from the planner's nodes
    mapping is gone (deleted), which counts as not ready.
    """

    name: str
    ready: str = "Unknown"
    ready_since: datetime | None = None  # lastTransitionTime of the Ready condition
    unschedulable: bool = False
    conditions: tuple[NodeCondition, ...] = ()
    taints: tuple[NodeTaint, ...] = ()

    @property
    def is_ready(self) -> bool:
        return self.ready == "True"

    @property
    def health(self) -> tuple[object, ...]:
        """health: what a job's pods may be judged by (Ready, the conditions, the taints, and the
        cordon, which starts a checkpoint before a drain: section 26); the cache plans the jobs
        on a node again when it changes."""
        return self.ready, self.conditions, self.taints, self.unschedulable

    @classmethod
    def from_dict(cls, node: Mapping[str, Any]) -> NodeView:
        meta = mapping(node.get("metadata"))
        spec = mapping(node.get("spec"))
        ready: object = None
        ready_since = None
        conditions: list[NodeCondition] = []
        for c in as_list(mapping(node.get("status")).get("conditions")):
            cond = mapping(c)
            since = parse_time(cond.get("lastTransitionTime"))
            if cond.get("type") == "Ready":
                ready, ready_since = cond.get("status"), since
            elif cond.get("type"):
                reason = cond.get("reason")
                conditions.append(
                    NodeCondition(
                        str(cond["type"]),
                        str(cond.get("status") or "Unknown"),
                        reason if isinstance(reason, str) else "",
                        since,
                    )
                )
        taints = tuple(
            NodeTaint(str(t["key"]), str(t.get("effect") or ""), parse_time(t.get("timeAdded")))
            for t in map(mapping, as_list(spec.get("taints")))
            if t.get("key")
        )
        return cls(
            name=str(meta.get("name", "")),
            ready=ready if ready in ("True", "False") else "Unknown",
            ready_since=ready_since,
            unschedulable=spec.get("unschedulable") is True,
            conditions=tuple(conditions),
            taints=taints,
        )
