"""Test builders for the decision core: jobs, pods, nodes, and a tiny simulated cluster.

In the spirit of JobSet's pkg/util/testing/wrappers.go: small, chainable, defaults from the
CCE seed (manifests/examples/horovod-elastic.yaml), so a test states only
what it is about. Jobs are built here rather than with ``api.parse_job`` so the planner's
tests do not depend on the parser.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from aitj.controller.executor import STEPS, PlanSink, walk
from aitj.core import naming
from aitj.core.api import (
    LABEL_GENERATION,
    LABEL_INDEX,
    LABEL_JOB,
    LABEL_REPLICA,
    CleanPodPolicy,
    ExceptionalEvent,
    FaultTolerantRule,
    Job,
    JobSpec,
    JobStatus,
    Policy,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
    RestartScope,
)
from aitj.core.observed import ANNOTATION_HOSTS, ANNOTATION_LEDGER, TRACKING_FINALIZER, NodeView, PodView
from aitj.core.planner import (
    Event,
    Manifest,
    ObjectRef,
    Outcome,
    Plan,
    PodCreate,
    PodDelete,
    PodNudge,
    ReplicasPatch,
    RestartRecord,
    SshKeys,
    plan,
)
from aitj.core.planner.objects import state_of
from aitj.core.planner.ownership import key_pass
from aitj.core.planner.resources import needs_ssh_keys
from aitj.core.planner.types import ObjectState, Owned
from aitj.core.trainlog import TrainingSeen
from aitj.core.wire import format_time, mapping
from tests.unit.status_checks import stored

TERMINAL = ("Succeeded", "Failed")
T0 = datetime(2022, 1, 14, 9, 1, 52, tzinfo=UTC)  # the seed's first condition
NAMESPACE = "default"
JOB = "test-horovod-elastic"
UID = "e4b904c7-b850-4aa5-9c1d-3f2a6b7c8d90"


def at(seconds: float) -> datetime:
    """at: T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


# ---------------------------------------------------------------------------------------------
# Jobs


def codes(text: str) -> frozenset[int]:
    """codes: the exitCodes grammar, enough of it for tests ("129,101", "130-140")."""
    out: set[int] = set()
    for item in text.split(","):
        lo, _, hi = item.strip().partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def exit_rule(text: str, scope: RestartScope = RestartScope.POD) -> FaultTolerantRule:
    return FaultTolerantRule(
        RestartPolicy.EXIT_CODE, scope, exit_codes=codes(text), source=f"exitCodes {text}"
    )


def event_rule(text: str, scope: RestartScope = RestartScope.POD) -> FaultTolerantRule:
    events = frozenset(ExceptionalEvent(e.strip()) for e in text.split(","))
    return FaultTolerantRule(
        RestartPolicy.ON_NODE_FAIL, scope, events=events, source=f"exceptionalEvent {text}"
    )


def launcher(**changes: Any) -> ReplicaSpec:
    """launcher: the seed's launcher (master; exitCodes 129,101 and nodeNotReady restart it)."""
    spec = ReplicaSpec(
        name="launcher",
        replica_type=ReplicaType.MASTER,
        replicas=1,
        min_replicas=1,
        max_replicas=1,
        complete_policy=Policy.ALL,
        fail_policy=Policy.ANY,
        restart_policy=RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE,
        restart_scope=RestartScope.POD,
        restart_limit=100,
        restart_time_limit=60,
        restart_timeout=864000,
        scale_timeout=600,
        rules=(exit_rule("129,101"), event_rule("nodeNotReady")),
        template={"spec": {"containers": [{"name": "aitj-0"}]}},
    )
    return dataclasses.replace(spec, **changes)


def trainer(**changes: Any) -> ReplicaSpec:
    """trainer: the seed's trainer (3 workers; nodeNotReady and PodForceDeleted restart them;
    completePolicy and failPolicy None)."""
    spec = ReplicaSpec(
        name="trainer",
        replica_type=ReplicaType.WORKER,
        replicas=3,
        min_replicas=1,
        max_replicas=5,
        complete_policy=Policy.NONE,
        fail_policy=Policy.NONE,
        restart_policy=RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE,
        restart_scope=RestartScope.POD,
        restart_limit=100,
        restart_time_limit=60,
        restart_timeout=864000,
        scale_timeout=600,
        rules=(event_rule("nodeNotReady,PodForceDeleted"),),
        template={"spec": {"containers": [{"name": "aitj-0"}]}},
    )
    return dataclasses.replace(spec, **changes)


def seed_job(
    *replicas: ReplicaSpec,
    status: Mapping[str, Any] | JobStatus | None = None,
    generation: int = 1,
    **changes: Any,
) -> Job:
    """seed_job: the seed's job (cleanPodPolicy None, completePolicy Any, failPolicy Any,
    faultTolerant, ssh and discovery on), with ``replicas`` replacing the seed's pair."""
    spec = JobSpec(
        framework_type="horovod",
        fault_tolerant=True,
        complete_policy=Policy.ANY,
        fail_policy=Policy.ANY,
        clean_pod_policy=CleanPodPolicy.NONE,
        ssh=True,
        discovery=True,
        priority="normal",
        time_limit=None,
        replicas=replicas or (trainer(), launcher()),
    )
    return with_status(
        Job(NAMESPACE, JOB, UID, generation, dataclasses.replace(spec, **changes), JobStatus()), status
    )


def with_replica(job: Job, name: str, **changes: Any) -> Job:
    """with_replica: the job with one replica spec changed."""
    replicas = tuple(dataclasses.replace(r, **changes) if r.name == name else r for r in job.spec.replicas)
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, replicas=replicas))


def as_json(status: JobStatus | None) -> dict[str, Any]:
    """as_json: a status the planner wrote, as the API server would store it (JSON)."""
    assert status is not None, "no status written"
    return status.to_json()


def with_status(job: Job, status: Mapping[str, Any] | JobStatus | None) -> Job:
    """with_status: the job with ``status``, typed or as the API server stores it (JSON)."""
    typed = status if isinstance(status, JobStatus) else JobStatus.from_json(status or {})
    return dataclasses.replace(job, status=typed)


def name_of(replica: str, index: int, generation: int = 0) -> str:
    return naming.pod_name(JOB, UID, replica, index, generation)


# ---------------------------------------------------------------------------------------------
# Pods and nodes


class Pod:
    """Pod: a raw pod dict the way the API returns it, built fluently. ``view()`` is its
    PodView. New pods are tracked (the operator's finalizer) and Pending, unscheduled."""

    def __init__(self, replica: str, index: int, generation: int = 0, created: float = 0) -> None:
        self.raw: dict[str, Any] = {
            "metadata": {
                "name": name_of(replica, index, generation),
                "namespace": NAMESPACE,
                "uid": f"uid-{replica}-{index}-{generation}",
                "creationTimestamp": format_time(at(created)),
                "labels": {
                    LABEL_JOB: JOB,
                    LABEL_REPLICA: replica,
                    LABEL_INDEX: str(index),
                    LABEL_GENERATION: str(generation),
                },
                "finalizers": [TRACKING_FINALIZER],
                # Made by the job, as every pod the operator creates (core.owned_by).
                "ownerReferences": [{"kind": "AITrainingJob", "name": JOB, "uid": UID, "controller": True}],
            },
            "spec": {"containers": [{"name": "aitj-0"}]},
            "status": {"phase": "Pending"},
        }

    @property
    def name(self) -> str:
        return str(self.raw["metadata"]["name"])

    def copy(self) -> Pod:
        other = Pod.__new__(Pod)
        other.raw = copy.deepcopy(self.raw)
        return other

    def view(self) -> PodView:
        return PodView.from_dict(self.raw)

    def on(self, node: str) -> Pod:
        self.raw["spec"]["nodeName"] = node
        return self

    def running(self, since: float = 1, node: str = "node-a") -> Pod:
        self.raw["spec"].setdefault("nodeName", node)
        self.raw["status"] = {
            "phase": "Running",
            "containerStatuses": [
                {"name": "aitj-0", "state": {"running": {"startedAt": format_time(at(since))}}}
            ],
        }
        return self

    def creating(self, node: str = "node-a") -> Pod:
        """creating: scheduled, containers not started yet."""
        self.raw["spec"]["nodeName"] = node
        return self

    def exited(self, code: int, finished: float = 100, container: str = "aitj-0") -> Pod:
        """exited: the container terminated with ``code``; phase Succeeded for 0, else Failed."""
        self.raw["spec"].setdefault("nodeName", "node-a")
        self.raw["status"] = {
            "phase": "Succeeded" if code == 0 else "Failed",
            "containerStatuses": [
                {
                    "name": container,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "startedAt": format_time(at(1)),
                            "finishedAt": format_time(at(finished)),
                        }
                    },
                }
            ],
        }
        return self

    def deleted(self, when: float = 100, grace: int = 0) -> Pod:
        """deleted: a delete call at ``when`` with ``grace`` seconds (deletionTimestamp is
        when + grace, as the API server writes it)."""
        self.raw["metadata"]["deletionTimestamp"] = format_time(at(when + grace))
        self.raw["metadata"]["deletionGracePeriodSeconds"] = grace
        return self

    def disrupted(self, reason: str, when: float = 100) -> Pod:
        self.raw["status"].setdefault("conditions", []).append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": reason,
                "lastTransitionTime": format_time(at(when)),
            }
        )
        return self

    def evicted_by_kubelet(self, message: str = "The node was low on resource: memory.") -> Pod:
        self.raw["status"].update({"phase": "Failed", "reason": "Evicted", "message": message})
        return self

    def untracked(self) -> Pod:
        self.raw["metadata"]["finalizers"] = []
        return self

    def stamped(self, ledger: Mapping[str, Any]) -> Pod:
        """stamped: carries a restart-ledger annotation (the wire form)."""
        self.raw["metadata"].setdefault("annotations", {})[ANNOTATION_LEDGER] = json.dumps(ledger)
        return self

    def created_at(self, seconds: float) -> Pod:
        self.raw["metadata"]["creationTimestamp"] = format_time(at(seconds))
        return self


def node(
    name: str = "node-a",
    ready: str = "True",
    since: float = 0,
    *,
    cordoned: bool = False,
    conditions: Mapping[str, str] | None = None,
    taints: Sequence[str] = (),
) -> NodeView:
    """node: a node view; ``cordoned``: spec.unschedulable, as ``kubectl cordon`` / ``drain`` set it;
    ``conditions``: more conditions (type -> status) and ``taints`` (keys, NoExecute), all since
    ``since``, as the Node Problem Detector or an admin set them."""
    stamp = format_time(at(since))
    more = [{"type": t, "status": s, "lastTransitionTime": stamp} for t, s in (conditions or {}).items()]
    spec: dict[str, Any] = {"unschedulable": True} if cordoned else {}
    if taints:
        spec["taints"] = [{"key": k, "effect": "NoExecute", "timeAdded": stamp} for k in taints]
    status = {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": stamp}, *more]}
    return NodeView.from_dict({"metadata": {"name": name}, "spec": spec, "status": status})


def nodes(*views: NodeView) -> dict[str, NodeView]:
    views = views or (node("node-a"), node("node-b"))
    return {n.name: n for n in views}


def running_seed(since: float = 1, node_name: str = "node-a") -> list[Pod]:
    """running_seed: the seed's three trainers and its launcher, all Running, generation 0."""
    return [Pod("trainer", i).running(since, node_name) for i in range(3)] + [
        Pod("launcher", 0, created=since).running(since + 1, node_name)
    ]


def views(pods: Iterable[Pod]) -> list[PodView]:
    return [p.view() for p in pods]


def running_status(job: Job, pods: Sequence[Pod], now: float = 10) -> dict[str, Any]:
    """running_status: the status the planner writes for ``pods`` (all Running) at ``now``, as
    the API server stores it."""
    result = plan(job, views(pods), nodes(), at(now))
    assert result.status is not None and result.status.phase == "Running", result
    return result.status.to_json()


# ---------------------------------------------------------------------------------------------
# A simulated cluster: the executor's test double. It applies Plans through the executor's own
# ``walk`` (the order of aitj.controller.executor.STEPS), one ``send_<field>`` per step (it is a
# ``PlanSink``, like the executor), so scenarios can run several passes, crash in between, and
# check what the API would end up holding.

# A key pair for the ssh Secret: tests need a value, not a key (aitj.controller.sshkeys makes real ones).
KEYS = SshKeys("-----BEGIN RSA PRIVATE KEY-----\ntest\n-----END RSA PRIVATE KEY-----\n", "ssh-rsa AAAA test")
# What ``step(rest=False)`` drops: every step after the status write.
AFTER_STATUS = tuple(s.field for s in STEPS[[s.field for s in STEPS].index("status") + 1 :])


def observed(bodies: Mapping[ObjectRef, Mapping[str, Any]]) -> Owned:
    """observed: the objects as the operator's cache holds them (their metadata's state)."""
    return {ref: state_of(mapping(body.get("metadata"))) for ref, body in bodies.items()}


def owned(job: Job, *refs: ObjectRef) -> Owned:
    """owned: ``refs`` observed, each controlled by ``job``."""
    return {ref: ObjectState(uid=f"uid-{ref.name}", controller=job.uid) for ref in refs}


class Cluster(PlanSink):
    """Cluster: a job, its pods (by name), nodes and the job's other objects (by ObjectRef,
    their bodies); ``step`` plans and applies the plan."""

    def __init__(
        self,
        job: Job,
        pods: Iterable[Pod] = (),
        node_views: Iterable[NodeView] = (),
        fresh_key: str | None = None,
    ) -> None:
        self.job = job
        self.fresh_key = fresh_key  # handed to every pass, as the reconciler does (None: none)
        self.pods: dict[str, Pod] = {p.name: p for p in pods}
        self.nodes = {n.name: n for n in node_views} or nodes()
        self.objects: dict[ObjectRef, Mapping[str, Any]] = {}
        self.history: list[Plan] = []
        self.events: dict[str, Event] = {}  # the named Events posted (the API server keeps one per name)
        # What the reconciler counted in metrics and logged: the restarts of each status write
        # that went through, once the executor returned.
        self.counted: list[RestartRecord] = []
        self._now = 0.0
        self.training: TrainingSeen | None = None  # the master's log as the watchdog read it

    def plan(self, now: float) -> Plan:
        owned = observed(self.objects)
        views = [p.view() for p in self.pods.values()]
        if self.training is not None:  # the recovery watchdog's reads, on the master's view
            seen = self.training
            views = [dataclasses.replace(v, training=seen) if v.replica == "launcher" else v for v in views]
        keys = KEYS if needs_ssh_keys(self.job, owned, views) else None
        keyed = key_pass(self.job, views, owned, self.fresh_key, at(now)) if self.fresh_key else None
        return keyed or plan(self.job, views, self.nodes, at(now), owned=owned, keys=keys)

    def step(self, now: float, *, creates: bool = True, status: bool = True, rest: bool = True) -> Plan:
        """step: plan at ``now`` and apply it; the flags drop parts of it (an executor crash)."""
        result = self.plan(now)
        self.history.append(result)
        self.apply(result, now, creates=creates, status=status, rest=rest)
        return result

    def apply(
        self,
        result: Plan,
        now: float,
        *,
        creates: bool = True,
        status: bool = True,
        rest: bool = True,
        stop_after: str | None = None,
    ) -> None:
        """apply: carry ``result`` out as the executor would, minus the parts the flags drop,
        then count its restarts as the reconciler does when the status write went through;
        ``stop_after``: the operator dies once that step (a ``STEPS`` field) is done, before
        the executor returns (nothing is counted)."""
        skip = ("creates",) * (not creates) + ("status",) * (not status) + AFTER_STATUS * (not rest)
        if stop_after is not None:
            fields = [s.field for s in STEPS]
            skip += tuple(fields[fields.index(stop_after) + 1 :])
        self._now = now
        walk(result, self, skip)
        if stop_after is None and "status" not in skip and result.status is not None:
            self.counted.extend(result.restarts)
        self.collect()

    def send_ensure(self, manifests: Sequence[Manifest]) -> None:
        for m in manifests:
            self.objects.setdefault(m.ref, m.body)  # AlreadyExists

    def send_removes(self, refs: Sequence[ObjectRef]) -> None:
        for ref in refs:
            self.objects.pop(ref, None)

    def send_creates(self, creates: Sequence[PodCreate]) -> None:
        for c in creates:
            if c.name in self.pods:
                continue  # AlreadyExists
            pod = Pod(c.replica, c.index, c.generation, created=self._now)
            pod.raw["metadata"]["name"] = c.name  # keyed, when the job has a key
            pod.raw["metadata"]["annotations"] = dict(c.body["metadata"].get("annotations") or {})
            self.pods[c.name] = pod

    def send_discovery(self, manifest: Manifest) -> None:
        self.objects[manifest.ref] = manifest.body

    def send_status(self, status: JobStatus) -> None:
        self.job = with_status(self.job, stored(status))

    def send_spec_replicas(self, patches: Sequence[ReplicasPatch]) -> None:
        """send_spec_replicas: nothing; a test lands the patch itself when it means to."""

    def send_deletes(self, deletes: Sequence[PodDelete]) -> None:
        for d in deletes:
            pod = self.pods.get(d.name)
            if pod is None:
                continue
            if d.grace_period_seconds == 0:
                pod.deleted(self._now, 0)
            elif "deletionTimestamp" not in pod.raw["metadata"]:
                pod.deleted(self._now, 30)

    def send_release(self, names: Sequence[str]) -> None:
        for name in names:
            if name in self.pods:
                self.pods[name].untracked()

    def send_budgets(self, manifests: Sequence[Manifest]) -> None:
        for m in manifests:
            self.objects[m.ref] = m.body

    def send_podgroup(self, manifest: Manifest) -> None:
        self.objects[manifest.ref] = manifest.body

    def send_probes(self, manifests: Sequence[Manifest]) -> None:
        self.send_ensure(manifests)

    # Events, metrics and logs leave nothing in the cluster the planner reads.
    def send_nudges(self, nudges: Sequence[PodNudge]) -> None:
        for n in nudges:
            pod = self.pods.get(n.name)
            if pod is not None and pod.view().uid == n.uid:
                pod.raw["metadata"].setdefault("annotations", {})[ANNOTATION_HOSTS] = n.digest

    def send_restart_events(self, events: Sequence[Event]) -> None:
        """send_restart_events: kept by name, as the API server keeps named Events."""
        self.send_events(events)

    def send_events(self, events: Sequence[Event]) -> None:
        """send_events: named Events kept by name (a second post with the name is refused)."""
        for e in events:
            if e.name is not None:
                self.events.setdefault(e.name, e)

    def send_outcome(self, outcome: Outcome) -> None:
        """send_outcome: metrics and logs only."""

    def collect(self) -> None:
        """collect: the API server removes deleted pods without finalizers once they are done
        (grace 0, or terminal)."""
        for name, pod in list(self.pods.items()):
            meta = pod.raw["metadata"]
            gone = meta.get("deletionGracePeriodSeconds") == 0 or pod.raw["status"].get("phase") in TERMINAL
            if "deletionTimestamp" in meta and not meta.get("finalizers") and gone:
                del self.pods[name]

    def run_all(self, since: float = 1, node_name: str = "node-a") -> None:
        """run_all: every live pod that is not finished starts running."""
        for pod in self.pods.values():
            if "deletionTimestamp" not in pod.raw["metadata"] and pod.raw["status"]["phase"] == "Pending":
                pod.running(since, node_name)

    def terminate_deleted(self) -> None:
        """terminate_deleted: the kubelet finishes every graceful deletion (containers stop)."""
        for pod in self.pods.values():
            if "deletionTimestamp" in pod.raw["metadata"]:
                pod.raw["status"]["phase"] = "Failed"
        self.collect()

    def live(self, replica: str | None = None) -> list[str]:
        """live: names of pods not being deleted (optionally of one replica), sorted."""
        return sorted(
            name
            for name, p in self.pods.items()
            if "deletionTimestamp" not in p.raw["metadata"]
            and (replica is None or p.raw["metadata"]["labels"][LABEL_REPLICA] == replica)
        )

    @property
    def status(self) -> dict[str, Any]:
        """status: the job's status as the API server stores it (JSON)."""
        return self.job.status.to_json()


class KeptViews(Cluster):
    """KeptViews: a Cluster whose pods' views are kept as the cache keeps them (the same PodView
    while a pod's body is unchanged, a changed pod moved to the end), for the planner's memo."""

    def __init__(self, job: Job, pods: Iterable[Pod] = (), node_views: Iterable[NodeView] = ()) -> None:
        super().__init__(job, pods, node_views)
        self.views: dict[str, tuple[str, PodView]] = {}

    def pod_views(self) -> list[PodView]:
        """pod_views: the pods' views, the same object while a pod's body is unchanged, in the
        order the cache keeps them (a changed pod moves to the end)."""
        fresh: dict[str, tuple[str, PodView]] = {}
        for name, pod in self.pods.items():
            body = json.dumps(pod.raw, sort_keys=True)
            kept = self.views.get(name)
            fresh[name] = kept if kept is not None and kept[0] == body else (body, pod.view())
        order = [n for n in self.views if n in fresh and fresh[n] is self.views[n]]
        order += [n for n in fresh if n not in order]
        self.views = {n: fresh[n] for n in order}
        return [v for _, v in self.views.values()]
