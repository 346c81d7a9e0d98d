"""What ``aitj get``, ``aitj list`` and ``aitj describe`` show of a job: rows, from the job, its
pods and its Events as the API returns them.

Pure (no client, no clock: ``now`` is given), so every column is table-tested
(tests/unit/test_cli_jobview.py). The job is read defensively with ``aitj.core.wire``: a job
the model would refuse still shows what it holds. Each row type has ``to_json`` for ``-o
json|yaml``; the keys are the column names in snake case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.render import gpus
from aitj.core.telemetry import own_pods
from aitj.core.wire import as_int, as_list, mapping, parse_time


def age(since: datetime | None, now: datetime) -> str:
    """age: kubectl's short age (``45s``, ``7m``, ``3h12m``, ``2d4h``); ``-`` when unknown."""
    if since is None:
        return "-"
    seconds = max(0, int((now - since).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes}m" if minutes and hours < 10 else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours and days < 10 else f"{days}d"


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass(frozen=True)
class ReplicaRow:
    """ReplicaRow: one replica type of a job: desired and running pods, restarts, the last cause."""

    replica: str
    type: str
    desired: int
    running: int
    restarts: int
    last_cause: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class InstanceRow:
    """InstanceRow: one pod, as Arena's instances table shows it (plus replica, index, restarts:
    the restarts of its index, as ``status.restarts`` records them)."""

    name: str
    status: str
    age: str
    replica: str
    index: int | None
    is_chief: bool
    gpu: int
    node: str
    restarts: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JobRow:
    """JobRow: one job in ``aitj list``, or the header of ``aitj get``."""

    namespace: str
    name: str
    phase: str
    age: str
    replicas: str  # "trainer 3/3, launcher 1/1": running/desired per replica type
    restarts: int
    reason: str
    message: str
    degraded: str = ""  # status.degraded.reason: why the job runs short of pods ("": it does not)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HistoryRow:
    """HistoryRow: one line of a history in ``aitj describe`` (conditions, restarts, scaling,
    Events), oldest first: when, what, why, and the words."""

    time: str
    what: str
    reason: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Reading the job


def _spec_replicas(job: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    specs = mapping(mapping(job.get("spec")).get("replicaSpecs"))
    return {name: mapping(spec) for name, spec in specs.items()}


def _status(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(job.get("status"))


def _restart_records(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [mapping(r) for r in as_list(_status(job).get("restarts"))]


def current_condition(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """current_condition: the last condition whose status is True (the operator appends each new
    one True and sets the previous False), else the last one, else an empty mapping."""
    conditions = [mapping(c) for c in as_list(_status(job).get("conditions"))]
    live = [c for c in conditions if c.get("status") == "True"]
    return (live or conditions or [{}])[-1]


def _own_pods(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[PodView]:
    """_own_pods: the pods the job made (docs/semantics.md section 1), as the operator counts
    them (``telemetry.own_pods``): a pod that only carries its labels is not counted."""
    return own_pods(job, [PodView.from_dict(p) for p in pods])


def replica_rows(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[ReplicaRow]:
    """replica_rows: per replica type, workers first then the master, each by name (the model's
    order): desired (spec), running pods (not being deleted), restarts (``status.RestartCount``)
    and the cause of the last restart recorded for it."""
    views = _own_pods(job, pods)
    counts = mapping(_status(job).get("RestartCount"))
    records = _restart_records(job)
    rows = []
    for name, spec in _spec_replicas(job).items():
        kind = str(spec.get("replicaType") or api.DEFAULT_REPLICA_TYPE)
        causes = [str(r.get("cause") or "") for r in records if r.get("replica") == name]
        rows.append(
            ReplicaRow(
                replica=name,
                type=kind,
                desired=as_int(spec.get("replicas"), api.DEFAULT_REPLICAS) or 0,
                running=sum(1 for v in views if v.replica == name and v.running),
                restarts=as_int(counts.get(name), 0) or 0,
                last_cause=causes[-1] if causes else "-",
            )
        )
    return sorted(rows, key=lambda r: (r.type == api.ReplicaType.MASTER, r.replica))


def _chief(job: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """_chief: Arena's IS_CHIEF: the master replica's pod, else index 0 of the first worker."""
    specs = _spec_replicas(job)
    for name, spec in specs.items():
        if spec.get("replicaType") == api.ReplicaType.MASTER:
            return name, None
    return (min(specs), 0) if specs else (None, None)


def pod_status(view: PodView) -> str:
    """pod_status: as kubectl's STATUS column says it, near enough: Terminating, a failure's
    reason (Evicted) or exit code, else the phase."""
    if view.deleted_at is not None:
        return "Terminating"
    if view.phase == "Failed":
        if view.reason:
            return view.reason
        if view.exit_code is not None:
            return f"Failed (exit {view.exit_code})"
    return view.phase


def instance_rows(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime
) -> list[InstanceRow]:
    """instance_rows: the job's pods (those labelled with its name), by replica and index."""
    chief_replica, chief_index = _chief(job)
    records = _restart_records(job)
    by_name = {mapping(p.get("metadata")).get("name"): p for p in pods}
    rows = []
    for view in _own_pods(job, pods):
        restarts = sum(
            1 for r in records if r.get("replica") == view.replica and as_int(r.get("index")) == view.index
        )
        chief = view.replica == chief_replica and (chief_index is None or view.index == chief_index)
        rows.append(
            InstanceRow(
                name=view.name,
                status=pod_status(view),
                age=age(view.created, now),
                replica=view.replica or "-",
                index=view.index,
                is_chief=chief,
                gpu=gpus(by_name.get(view.name) or {}),
                node=view.node_name or "-",
                restarts=restarts,
            )
        )
    return sorted(rows, key=lambda r: (r.replica, -1 if r.index is None else r.index, r.name))


def job_row(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime) -> JobRow:
    """job_row: the job's one line: phase, age, running/desired per replica type, total restarts,
    and the current condition's reason and message."""
    meta = mapping(job.get("metadata"))
    status = _status(job)
    condition = current_condition(job)
    replicas = ", ".join(f"{r.replica} {r.running}/{r.desired}" for r in replica_rows(job, pods))
    total = as_int(status.get("totalRestarts"))
    if total is None:
        total = sum(as_int(v, 0) or 0 for v in mapping(status.get("RestartCount")).values())
    return JobRow(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        phase=str(status.get("phase") or "-"),
        age=age(parse_time(meta.get("creationTimestamp")), now),
        replicas=replicas or "-",
        restarts=total,
        reason=str(condition.get("reason") or "-"),
        message=str(condition.get("message") or ""),
        degraded=str(mapping(status.get("degraded")).get("reason") or ""),
    )


def shortfall_rows(job: Mapping[str, Any]) -> list[HistoryRow]:
    """shortfall_rows: the indices ``status.degraded`` says run short: since when, which index,
    the cause, and why (with until when, for a cause that ends by itself)."""
    rows = []
    for e in (mapping(e) for e in as_list(mapping(_status(job).get("degraded")).get("indices"))):
        until = f" (until {e['until']})" if e.get("until") else ""
        rows.append(
            HistoryRow(
                time=str(e.get("since") or "-"),
                what=f"{e.get('replica', '-')} {e.get('index', '-')}",
                reason=str(e.get("cause") or "-"),
                message=str(e.get("message") or "") + until,
            )
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Histories (aitj describe)


def condition_history(job: Mapping[str, Any]) -> list[HistoryRow]:
    """condition_history: every condition, oldest first (the order the operator keeps)."""
    return [
        HistoryRow(
            time=str(c.get("lastTransitionTime") or c.get("lastProbeTime") or "-"),
            what=str(c.get("type") or "-") + ("" if c.get("status") == "True" else " (past)"),
            reason=str(c.get("reason") or "-"),
            message=str(c.get("message") or ""),
        )
        for c in (mapping(c) for c in as_list(_status(job).get("conditions")))
    ]


def restart_history(job: Mapping[str, Any]) -> list[HistoryRow]:
    """restart_history: ``status.restarts``: which pod, the cause, the rule and its scope."""
    rows = []
    for r in _restart_records(job):
        rule = str(r.get("rule") or "-")
        rows.append(
            HistoryRow(
                time=str(r.get("time") or "-"),
                what=f"{r.get('replica', '-')} {r.get('index', '-')}",
                reason=str(r.get("cause") or "-"),
                message=f"pod {r.get('pod') or '-'}; rule {rule}; scope {r.get('scope') or '-'}",
            )
        )
    return rows


def scale_history(job: Mapping[str, Any]) -> list[HistoryRow]:
    """scale_history: finished scale operations (``status.scaleHistory``), then those in flight
    (``status.scaling``)."""
    rows = []
    for h in (mapping(h) for h in as_list(_status(job).get("scaleHistory"))):
        pods = " ".join(str(p) for p in as_list(h.get("pods")))
        rows.append(
            HistoryRow(
                time=str(h.get("time") or "-"),
                what=_scale_what(h.get("operation"), h.get("replica"), h.get("from"), h.get("to")),
                reason=str(h.get("reason") or "-"),
                message=str(h.get("message") or "") + (f" [{pods}]" if pods else ""),
            )
        )
    for replica, s in sorted(mapping(_status(job).get("scaling")).items()):
        s = mapping(s)
        rows.append(
            HistoryRow(
                time=str(s.get("started") or "-"),
                what=_scale_what(s.get("operation"), replica, s.get("from"), s.get("to")),
                reason="InProgress",
                message=f"deadline {s.get('deadline') or '-'}",
            )
        )
    return rows


def _scale_what(operation: object, replica: object, before: object, after: object) -> str:
    """_scale_what: ``scaleout trainer 3->4``."""
    counts = "->".join("?" if n is None else str(n) for n in (before, after))
    return f"{operation or '-'} {replica or '-'} {counts}"


def event_history(events: Sequence[Mapping[str, Any]]) -> list[HistoryRow]:
    """event_history: the job's Events, oldest first, with their count when repeated."""
    rows = []
    for e in events:
        when = (
            e.get("lastTimestamp")
            or e.get("eventTime")
            or mapping(e.get("metadata")).get("creationTimestamp")
        )
        count = as_int(e.get("count"), 1) or 1
        rows.append(
            HistoryRow(
                time=str(when or "-"),
                what=str(e.get("type") or "Normal") + (f" x{count}" if count > 1 else ""),
                reason=str(e.get("reason") or "-"),
                message=str(e.get("message") or ""),
            )
        )
    return sorted(rows, key=lambda r: r.time)
