"""What the client returns: ``TrainingJob`` (an AITrainingJob as read) and ``LogLine``, and the
pure decisions of ``wait`` and ``scale``.

Pure: no client, no clock. The status is the operator's own typed ``aitj.core.api.JobStatus``
(read leniently: a field of the wrong type lands in its ``extra``, never raises), so a caller
reads ``job.status.restart_count`` with the same types the planner writes it with. The spec
stays as the API returned it (``manifest``): a job the model would refuse still reads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aitj.core import api
from aitj.core.api.status import JobCondition, JobStatus
from aitj.core.observed import PodView
from aitj.core.wire import as_int, mapping, parse_time


@dataclass(frozen=True)
class TrainingJob:
    """TrainingJob: one AITrainingJob. ``replicas``: desired pods per replica spec (the spec's);
    ``status``: the operator's typed status; ``manifest``: the object as the API returned it."""

    namespace: str
    name: str
    uid: str
    generation: int
    created: datetime | None
    labels: Mapping[str, str]
    replicas: Mapping[str, int]
    status: JobStatus
    manifest: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TrainingJob:
        """from_json: the job of an API object (absent or odd fields read as empty)."""
        meta = mapping(doc.get("metadata"))
        specs = mapping(mapping(doc.get("spec")).get("replicaSpecs"))
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            generation=as_int(meta.get("generation"), 0) or 0,
            created=parse_time(meta.get("creationTimestamp")),
            labels={str(k): str(v) for k, v in mapping(meta.get("labels")).items()},
            replicas={
                str(n): as_int(mapping(s).get("replicas"), api.DEFAULT_REPLICAS) or 0
                for n, s in specs.items()
            },
            status=JobStatus.from_json(doc.get("status")),
            manifest=doc,
        )

    @property
    def phase(self) -> str:
        """phase: ``status.phase`` ("" before the operator has seen the job)."""
        return str(self.status.phase or "")

    @property
    def finished(self) -> bool:
        """finished: Succeeded, Failed or Timeout: the operator will not run it again."""
        return self.phase in api.FINISHED_PHASES

    @property
    def condition(self) -> JobCondition | None:
        """condition: the current condition (its reason and message say why the phase is)."""
        return self.status.current_condition()

    @property
    def restarts(self) -> int:
        """restarts: restarts so far, all replica types together."""
        if self.status.total_restarts is not None:
            return self.status.total_restarts
        return sum((self.status.restart_count or {}).values())


@dataclass(frozen=True)
class LogLine:
    """LogLine: one line of a pod's log (without its newline), or, with ``error`` set, why the
    pod's log could not be read (``text`` empty)."""

    pod: str
    replica: str
    index: int | None
    text: str
    error: str | None = None

    @property
    def prefix(self) -> str:
        """prefix: ``[trainer 0] `` for the pod of replica trainer, index 0."""
        return f"[{self.replica or '-'} {'-' if self.index is None else self.index}] "


def waited_for(job: TrainingJob, phases: Collection[str]) -> bool | None:
    """waited_for: True when ``job`` is in one of ``phases``; False when it finished in another
    (waiting longer is pointless); None while it may still get there."""
    if job.phase in phases:
        return True
    return False if job.finished else None


def scale_patch(
    job: TrainingJob,
    replica: str,
    to: int,
    *,
    pods: Collection[str] = (),
    scale_timeout: int | None = None,
) -> list[dict[str, Any]]:
    """scale_patch: the JSON patch that sets ``replica``'s replicas to ``to``. It first tests
    the value ``job`` holds, so of two people scaling from the same reading only one wins (the
    other gets a ``Conflict``). ``pods``: the pods a scale-in removes first (its
    ``scaleInpods``; an old list is removed, lest it pick this scale-in's pods);
    ``scale_timeout``: seconds for a scale-out's new pods to run before it is rolled back."""
    spec = mapping(mapping(mapping(job.manifest.get("spec")).get("replicaSpecs")).get(replica))
    base = f"/spec/replicaSpecs/{replica}"
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": f"{base}/replicas", "value": job.replicas[replica]},
        {"op": "replace", "path": f"{base}/replicas", "value": to},
    ]
    if pods:
        ops.append({"op": "add", "path": f"{base}/scaleInpods", "value": list(pods)})
    elif to < job.replicas[replica] and "scaleInpods" in spec:
        ops.append({"op": "remove", "path": f"{base}/scaleInpods"})
    if scale_timeout is not None:
        ops.append({"op": "add", "path": f"{base}/scaleTimeout", "value": scale_timeout})
    return ops


def chosen(pods: list[dict[str, Any]], replica: str | None, index: int | None) -> list[PodView]:
    """chosen: the live pods of ``replica`` and ``index`` (None: any), by replica and index."""
    views = [PodView.from_dict(p) for p in pods]
    keep = [
        v
        for v in views
        if v.deleted_at is None
        and (replica is None or v.replica == replica)
        and (index is None or v.index == index)
    ]
    return sorted(keep, key=lambda v: (v.replica or "", -1 if v.index is None else v.index))


def no_pod_message(
    namespace: str, job: str, pods: list[dict[str, Any]], replica: str | None, index: int | None
) -> str:
    """no_pod_message: the error when no live pod is ``replica`` and ``index`` (None: any),
    naming the pods the job has."""
    have = ", ".join(f"{v.replica} {v.index}" for v in chosen(pods, None, None)) or "none"
    wanted = " ".join(
        x for x in (replica and f"replica {replica}", index is not None and f"index {index}") if x
    )
    return f"job {namespace}/{job} has no pod {wanted or 'running'} (its pods: {have})"


def container_of(pod: Mapping[str, Any], container: str | None) -> str:
    """container_of: the container to read, ``container`` or else the pod's first."""
    containers = pod.get("spec", {}).get("containers") or [{}]
    return container or str(containers[0].get("name", ""))
