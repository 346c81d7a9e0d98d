"""The invariants of the in-place rung (issue 28, docs/semantics.md section 23), checked over a
run's history against what ``expect`` worked out. Pure.

- ``kept_in_place``: each kill the operator charges to an InPlace rule (``Expected.in_place``)
  restarts the pod's containers in the pod: the same pod (uid) is seen Running again with more
  container restarts than at the kill, on the same node, and no other pod of its index is
  created meanwhile; how long from the kill (``InPlaceSeen``).
- ``in_place_entries``: each job's ``status.restarts`` entries of scope InPlace, as last seen,
  are those it had when first seen plus the in-place restarts expected, exactly (unless the
  list reached its cap, MAX_RESTART_RECORDS: older entries then drop out).

``RestartCount exact`` (aitj.tools.chaos.invariants) covers the rest of the ladder: in-place
restarts do not count, the replacements of the rungs above do; ``one live pod per index``
that no replacement runs beside a pod kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aitj.core.api import MAX_RESTART_RECORDS
from aitj.tools.chaos.expect import Expected, InPlaceCalled
from aitj.tools.chaos.history import History, JobKey, PodSample
from aitj.tools.chaos.invariants import Bounds, Check, Violation, job_name

IN_PLACE = "InPlace"


@dataclass(frozen=True)
class InPlaceSeen:
    """InPlaceSeen: an in-place restart expected at ``t`` of ``pod``, Running again in place
    ``seconds`` later (None: not seen so)."""

    t: float
    job: JobKey
    pod: str
    seconds: float | None
    rung: str


def checks(history: History, expected: Expected, bounds: Bounds) -> list[Check]:
    """checks: the in-place invariants, in the report's order (after check_all's)."""
    return [kept_in_place(history, expected, bounds.recovery)[0], in_place_entries(history, expected)]


def kept_in_place(history: History, expected: Expected, bound: float) -> tuple[Check, list[InPlaceSeen]]:
    """kept_in_place: each expected in-place restart, judged on the pod samples after it."""
    check = Check("kept in place")
    seen: list[InPlaceSeen] = []
    pods = sorted(history.pods, key=lambda s: (s.t, s.rv))
    for key, calls in sorted(expected.in_place.items()):
        for c in calls:
            check.checks += 1
            took, wrong = _follow(c, [s for s in pods if s.t >= c.t], bound)
            name = next((s.pod.name for s in pods if s.pod.uid == c.uid), c.uid)
            seen.append(InPlaceSeen(c.t, key, name, took, c.rung))
            if wrong:
                check.violations.append(Violation(check.name, c.t, job_name(key), f"pod {name}: {wrong}"))
    return check, seen


def _follow(c: InPlaceCalled, after: list[PodSample], bound: float) -> tuple[float | None, str | None]:
    """_follow: how long until the killed pod ran again in place, or what went wrong instead."""
    for s in after:
        if s.t > c.t + bound:
            break
        p = s.pod
        if s.slot == c.slot and p.uid != c.uid and not s.gone:
            return None, f"a second pod {p.name} for its index after a kill restarted in place"
        if p.uid != c.uid:
            continue
        if s.gone or p.deleting:
            return None, "deleted after a kill restarted in place"
        if p.node_name != c.node:
            return None, f"on node {p.node_name}, not {c.node}, after an in-place restart"
        started = p.running_since
        again = started is not None and (c.running_since is None or started > c.running_since)
        if p.restarts > c.restarts and p.phase == "Running" and again:
            return s.t - c.t, None
    return None, f"not seen Running again in place within {bound:.0f}s of the kill ({c.rung})"


def _in_place(status: Mapping[str, Any]) -> tuple[int, bool]:
    entries = status.get("restarts") or []
    return sum(1 for e in entries if e.get("scope") == IN_PLACE), len(entries) >= MAX_RESTART_RECORDS


def in_place_entries(history: History, expected: Expected) -> Check:
    """in_place_entries: the InPlace entries of each job's status, first and last seen, against
    the in-place restarts expected."""
    check = Check("InPlace entries exact")
    first: dict[JobKey, Mapping[str, Any]] = {}
    last: dict[JobKey, tuple[float, Mapping[str, Any]]] = {}
    for j in sorted(history.jobs, key=lambda j: (j.rv, j.t)):
        if j.gone:
            continue
        first.setdefault(j.key, j.status)
        last[j.key] = (j.t, j.status)
    for key, (t, status) in sorted(last.items()):
        want = len(expected.in_place.get(key, []))
        base, _ = _in_place(first[key])
        have, capped = _in_place(status)
        if not want and not have - base:
            continue
        check.checks += 1
        if have - base != want and not capped:
            check.violations.append(
                Violation(
                    check.name,
                    t,
                    job_name(key),
                    f"{have - base} new status.restarts entries of scope InPlace, the kills called "
                    f"for {want}",
                )
            )
    return check
