"""What ``aitj describe`` says of a job's goodput and of its restarts by class (issue 28;
docs/semantics.md section 25): the same account the metrics export
(``aitj.core.planner.goodput.account``), read from the job's status."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aitj.core.api import JobStatus
from aitj.core.planner.goodput import account
from aitj.core.wire import mapping


def goodput(job: Mapping[str, Any], now: datetime) -> dict[str, Any] | None:
    """goodput: the job's ratio, seconds training and seconds lost by cause (None: it has not run)."""
    got = account(JobStatus.from_json(job.get("status")), now)
    if got.ratio is None:
        return None
    lost = {c.value: round(s, 1) for c, s in got.badput.items()}
    return {"ratio": round(got.ratio, 4), "trainingSeconds": round(got.training, 1), "badputSeconds": lost}


def goodput_line(job: Mapping[str, Any], now: datetime) -> str:
    """goodput_line: ``goodput 97.2% since it first ran: training 3412s; lost recovery 81s, fault 12s``."""
    got = goodput(job, now)
    if got is None:
        return "goodput: the job has not run yet"
    lost = ", ".join(f"{cause} {s:.0f}s" for cause, s in got["badputSeconds"].items() if s > 0) or "nothing"
    return (
        f"goodput {100 * got['ratio']:.1f}% since it first ran: training {got['trainingSeconds']:.0f}s; "
        f"lost {lost} (what the operator sees: not the work redone since a checkpoint)"
    )


def restart_split(job: Mapping[str, Any]) -> dict[str, int]:
    """restart_split: the job's restarts, all (``totalRestarts``), and of them those of
    infrastructure faults (``infrastructureRestarts``) and of the application."""
    status = mapping(job.get("status"))
    total = status.get("totalRestarts")
    infra = sum(v for v in mapping(status.get("infrastructureRestarts")).values() if isinstance(v, int))
    total = total if isinstance(total, int) else 0
    return {"total": total, "infrastructure": infra, "application": max(total - infra, 0)}
