"""The restart ledger's records in their wire form: a ``RestartRecord`` as a pod's stamp and
``status.restarts`` carry it (aitj.core.planner.ledger).

Pure. Apart from the ledger so that it holds the histories only.
"""

from __future__ import annotations

from typing import Any

from aitj.core.api import RestartEntry, RestartScope
from aitj.core.planner.types import RestartRecord
from aitj.core.policy import Failure, FailureKind
from aitj.core.wire import as_int, format_time, mapping, parse_time


def record_to_json(r: RestartRecord) -> dict[str, Any]:
    """record_to_json: a restart record's wire form, which is also its ``status.restarts`` entry.
    ``cause`` is the failure's wording (``exitCode 137``, ``nodeNotReady``); ``exitCode`` is set
    for exit-code failures only, ``failureTime`` when the failure time is known."""
    out: dict[str, Any] = {
        "time": format_time(r.time),
        "replica": r.replica,
        "index": r.index,
        "generation": r.generation,
        "pod": r.pod,
        "cause": r.failure.cause,
        "message": r.failure.description,
        "rule": r.rule,
        "scope": r.scope.value,
    }
    if r.failure.exit_code is not None:
        out["exitCode"] = r.failure.exit_code
    if r.failure.at is not None:
        out["failureTime"] = format_time(r.failure.at)
    return out


def record_entry(r: RestartRecord) -> RestartEntry:
    """record_entry: a restart record's ``status.restarts`` entry (``record_to_json``'s form)."""
    return RestartEntry.from_json(record_to_json(r))


def record_from_json(value: object) -> RestartRecord | None:
    """record_from_json reads ``record_to_json``'s form; None when it is unreadable."""
    e = mapping(value)
    index, generation, code = as_int(e.get("index")), as_int(e.get("generation")), as_int(e.get("exitCode"))
    time = parse_time(e.get("time"))
    try:
        kind = FailureKind.EXIT_CODE if code is not None else FailureKind(str(e.get("cause")))
        scope = RestartScope(str(e.get("scope")))
    except ValueError:
        return None
    if index is None or generation is None or time is None:
        return None
    failure = Failure(kind, str(e.get("message", "")), code, parse_time(e.get("failureTime")))
    return RestartRecord(
        str(e.get("replica", "")),
        index,
        generation,
        str(e.get("pod", "")),
        failure,
        str(e.get("rule", "")),
        scope,
        time,
    )
