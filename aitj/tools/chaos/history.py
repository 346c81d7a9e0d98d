"""What the command saw: samples from its own watch, the faults it caused, its probes. Pure.

Each watched object becomes a sample stamped twice: ``t``, seconds since the run started when
the watch decoded it (for durations), and ``rv``, its resourceVersion (for order). The three
watches run in threads of their own, so their arrival order can differ by milliseconds from
the order things happened; the apiserver's resourceVersion is one etcd revision shared by
every kind, so replaying samples by ``rv`` puts a node going NotReady before the replacement
pod the operator created because of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aitj.core import api
from aitj.core.observed import NodeView, PodView
from aitj.tools.chaos.schedule import FaultKind
from aitj.tools.trainbench.timeline import Event

Obj = Mapping[str, Any]
JobKey = tuple[str, str]  # (namespace, name)
Slot = tuple[str, str, str, int]  # (namespace, job, replica, index)


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion", "0"))
    except ValueError:
        return 0


@dataclass(frozen=True)
class PodSample:
    t: float
    rv: int
    gone: bool  # a DELETED event: the object no longer exists
    pod: PodView

    @property
    def slot(self) -> Slot | None:
        p = self.pod
        if p.job is None or p.replica is None or p.index is None:
            return None
        return p.namespace, p.job, p.replica, p.index


@dataclass(frozen=True)
class NodeSample:
    t: float
    rv: int
    gone: bool
    node: NodeView


@dataclass(frozen=True)
class JobSample:
    """JobSample: a job as seen; ``job`` is None when its spec does not parse."""

    t: float
    rv: int
    gone: bool
    key: JobKey
    uid: str
    job: api.Job | None
    status: Mapping[str, Any]

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def restart_count(self) -> dict[str, int]:
        counts = self.status.get("RestartCount") or {}
        return {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}

    @property
    def condition(self) -> Mapping[str, Any]:
        """condition: the current (last) condition, or {}."""
        conditions = self.status.get("conditions") or []
        return conditions[-1] if conditions else {}


def pod_sample(t: float, etype: str, obj: Obj) -> PodSample:
    return PodSample(t, _rv(obj), etype == "DELETED", PodView.from_dict(obj))


def node_sample(t: float, etype: str, obj: Obj) -> NodeSample:
    return NodeSample(t, _rv(obj), etype == "DELETED", NodeView.from_dict(obj))


def job_sample(t: float, etype: str, obj: Obj) -> JobSample:
    meta = obj.get("metadata") or {}
    try:
        job: api.Job | None = api.parse_job(obj)
    except api.InvalidJob:
        job = None
    return JobSample(
        t,
        _rv(obj),
        etype == "DELETED",
        (str(meta.get("namespace", "")), str(meta.get("name", ""))),
        str(meta.get("uid", "")),
        job,
        obj.get("status") or {},
    )


@dataclass(frozen=True)
class ProgressSample:
    """ProgressSample: a step or a re-forming that job ``key``'s training printed, read from its
    launcher pod ``pod``'s log (``aitj chaos --progress``), its time on the history's clock."""

    key: JobKey
    pod: str
    event: Event

    @property
    def t(self) -> float:
        return self.event.t


@dataclass
class FaultRecord:
    """FaultRecord: one fault as carried out. ``pods``: uids of the pods it aimed at (a pod
    fault, or a drain's evictions); ``jobs``: the jobs it was expected to disturb; ``healed``:
    when a fault that lasts (a node, a cordon) was undone; ``error``: why it could not be done."""

    n: int
    t: float
    kind: FaultKind
    target: str
    jobs: tuple[JobKey, ...] = ()
    pods: tuple[str, ...] = ()
    detail: str = ""
    error: str | None = None
    healed: float | None = None
    effect: float | None = None  # when a delayed effect was first seen (a silent node lost, a hang restarted)
    restarts_before: int | None = None  # a hang: the job's restarts when it was made


@dataclass(frozen=True)
class Probe:
    """Probe: whether the operator endpoint ``endpoint`` answered at ``t``."""

    t: float
    endpoint: str
    ok: bool


@dataclass(frozen=True)
class OperatorRestart:
    """OperatorRestart: the command started the operator at ``endpoint`` again at ``t`` (as a
    Deployment would); ``status``: its exit status, None when a fault of the command's killed
    it (a leader that cannot renew its Lease exits with 3 on purpose)."""

    t: float
    endpoint: str
    status: int | None


@dataclass(frozen=True)
class Leftover:
    """Leftover: an object still there after its job was deleted and the bound passed."""

    job: JobKey
    kind: str
    name: str


@dataclass
class History:
    """History: everything a run saw. ``end``: seconds from the start to the last sample."""

    pods: list[PodSample] = field(default_factory=list)
    nodes: list[NodeSample] = field(default_factory=list)
    jobs: list[JobSample] = field(default_factory=list)
    faults: list[FaultRecord] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    restarts: list[OperatorRestart] = field(default_factory=list)
    leftovers: list[Leftover] = field(default_factory=list)
    progress: list[ProgressSample] = field(default_factory=list)  # only with --progress
    deleted_jobs: list[JobKey] = field(default_factory=list)
    deleting_from: float | None = None  # when the command began deleting the jobs
    end: float = 0.0

    def timeline(self) -> Iterator[PodSample | NodeSample | JobSample]:
        """timeline: every sample in the order things happened (resourceVersion, then arrival).

        A list after a broken stream brings back objects as they have been for a while: an old
        resourceVersion with a late arrival. Nothing can have happened later than what happened
        after it, so each sample's ``t`` is at most that of every sample after it."""
        samples: list[PodSample | NodeSample | JobSample] = [*self.pods, *self.nodes, *self.jobs]
        samples.sort(key=lambda s: (s.rv, s.t))
        out: list[PodSample | NodeSample | JobSample] = []
        latest = float("inf")
        for s in reversed(samples):
            latest = min(latest, s.t)
            out.append(s if s.t == latest else replace(s, t=latest))
        return reversed(out)
