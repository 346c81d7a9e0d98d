"""What a failed pass tells people: an Event and ``status.passFailure``, once per way of failing.

Pure. The reconciler retries a failed pass with a backoff (``aitj.controller.reconciler``);
what it asks here is what to say about it. A pass that fails the same way as the one before
(same reason, same message) says nothing new: a refusal that lasts costs one Event and one
status write, not one per retry. The first pass that goes through removes ``passFailure``.

Why a field of its own and a minimal write: ``status.conditions`` is the phase history
(docs/semantics.md, section 3), and the full status write is often the very call refused (a
schema rule, a ValidatingAdmissionPolicy). ``passFailure`` is written by a merge patch of that
key alone, without the version test, so a policy that refuses what the full status says can
still let it through, and it cannot overwrite a newer status. A policy that refuses every
status write refuses it too: the Event and the operator's log then say it, and the field is
written by the first failed pass that can write it.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass

from aitj.core.api import PassFailure
from aitj.core.planner.types import Event
from aitj.core.wire import format_time

# Events and the field carry at most this much of the message (an Event's own limit is 1 KiB).
MAX_MESSAGE = 1024


class FailureReason(enum.StrEnum):
    """FailureReason: why a pass failed, the Event's reason and ``passFailure.reason``."""

    STATUS_REFUSED = "StatusRefused"  # the status write refused (422 not a version conflict, 403)
    CALL_REFUSED = "CallRefused"  # another call refused (quota, throttling, a server error)
    PASS_ERROR = "PassError"  # the operator's own code raised: a bug or input it cannot take


@dataclass(frozen=True)
class Report:
    """Report: what to send about a job's passes: ``failure`` is what ``status.passFailure``
    becomes (None: removed), ``event`` the Event to post first (None: none)."""

    failure: PassFailure | None
    event: Event | None


def on_failure(
    prev: PassFailure | None, reason: FailureReason, message: str, now: dt.datetime
) -> Report | None:
    """on_failure: what a pass that failed for ``reason`` says, given the ``passFailure`` the
    job's status holds (None: none); None when that already says it."""
    message = message[:MAX_MESSAGE]
    if prev is not None and prev.reason == reason.value and prev.message == message:
        return None
    failure = PassFailure(reason=reason.value, message=message, since=format_time(now))
    return Report(
        failure, Event("Warning", reason.value, f"{message} (retrying with a backoff)"[:MAX_MESSAGE])
    )


def on_success(prev: PassFailure | None) -> Report | None:
    """on_success: a pass went through: the recorded failure, if any, is removed."""
    return None if prev is None else Report(None, None)
