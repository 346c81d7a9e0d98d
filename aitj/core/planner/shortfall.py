"""Shortfall: why one replica index runs without a Running pod, and since when.

Pure data, shared by the parts of the planner that hold an index back (a restart backoff, a
rule budget used up, a node excluded; aitj.core.planner.core) and the part that tells the user
(the degraded state in the job's status, its Events and ``kubectl get`` column). Keeping it in
one small module lets each side be written and table-tested without the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# The causes are a status field's values, so the status types own them (the api layer may not
# import the planner); re-exported here, where the planner's parts find them.
from aitj.core.api.status import ShortfallCause as ShortfallCause


@dataclass(frozen=True)
class Shortfall:
    """Shortfall: replica ``replica``'s index ``index`` lacks a Running pod because of
    ``cause`` (``message`` says it for people) since ``since``; ``until``: when the cause ends
    by itself (a backoff's end, an exclusion's expiry), None if it does not."""

    replica: str
    index: int
    cause: ShortfallCause
    message: str
    since: datetime
    until: datetime | None = None
