"""How a failed pass is retried and reported: the wait before the next attempt, the server's
Retry-After, and the reason ``failed_pass`` gives (aitj.controller.reconciler uses them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from aitj.controller.executor import StatusRefused, Stop
from aitj.core.api import PassFailure
from aitj.core.planner.failed_pass import FailureReason
from aitj.core.wire import mapping

# A failed pass (a refused call, the apiserver unreachable) is retried after RETRY_SECONDS,
# doubled for each failure in a row up to MAX_RETRY_SECONDS, and never sooner than the
# server's Retry-After; kicks in between wait too (``retry_delay``): a job whose calls keep
# failing costs one attempt per delay, however busy its watch is.
RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 30.0


def retry_delay(failures: int, retry_after: float | None = None) -> float:
    """retry_delay: how long a job waits after its ``failures``-th failed pass in a row (1: the
    first): RETRY_SECONDS, doubled per earlier failure, at most MAX_RETRY_SECONDS, and never
    less than the server's ``retry_after``."""
    delay: float = min(MAX_RETRY_SECONDS, RETRY_SECONDS * 2 ** min(max(failures - 1, 0), 16))
    return max(delay, retry_after or 0.0)


def retry_after(e: BaseException) -> float | None:
    """retry_after: the Retry-After seconds of the API error that failed a pass (None: none)."""
    cause = e if isinstance(e, ApiException) else e.__cause__
    value = (getattr(cause, "headers", None) or {}).get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: not sent by the apiserver
        return None


def failure_reason(error: Exception) -> FailureReason | None:
    """failure_reason: why a pass failed, as ``failed_pass`` reports it; None when the API
    server gave no answer (a call with no ApiException behind it)."""
    if isinstance(error, StatusRefused):
        return FailureReason.STATUS_REFUSED
    if isinstance(error, Stop):
        return FailureReason.CALL_REFUSED if isinstance(error.__cause__, ApiException) else None
    return FailureReason.PASS_ERROR


def pass_failure(body: Mapping[str, Any] | None) -> PassFailure | None:
    """pass_failure: the ``status.passFailure`` a job's body holds (None: none, or no body)."""
    value = mapping(mapping((body or {}).get("status")).get("passFailure"))
    return PassFailure.from_json(value) if value else None
