"""Retirees: the pods a pass no longer wants, and why (aitj.core.planner.survey retires them).

Pure. Apart from the survey so that the survey's module stays one screenful of decisions.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from aitj.core.observed import PodView


class RetireReason(enum.StrEnum):
    """RetireReason: why the operator no longer wants a pod."""

    NOT_IN_SPEC = "NotInSpec"  # its replica is not in the job's spec (or it has no index)
    SCALED_AWAY = "ScaledAway"  # its index is not one of those wanted
    SUPERSEDED = "Superseded"  # a higher generation of its index exists
    RESTART = "Restart"  # the old pod of a restart counted in this pass
    RESTART_COUNTED = "RestartCounted"  # its failure was counted by a pass that did not finish
    RESTART_SCOPE = "RestartScope"  # a Replica- or All-scope restart recreates it
    EXCLUSION_EXPIRED = "ExclusionExpired"  # unschedulable while it kept off nodes no longer excluded
    ENDED = "Ended"  # its generation was ended (scaled away) and it is terminating; the index is wanted again

    @property
    def restart(self) -> bool:
        """restart: the pod is the old pod of a restart, so restartTimeLimit applies to its
        termination."""
        return self not in (RetireReason.NOT_IN_SPEC, RetireReason.SCALED_AWAY, RetireReason.ENDED)


@dataclass(frozen=True)
class Retiree:
    """Retiree: a pod the operator no longer wants, why (``reason``), and the same for people
    (``text``: the deletion's reason in logs and ``aitj explain``)."""

    pod: PodView
    reason: RetireReason
    text: str

    @property
    def restart(self) -> bool:
        """restart: see RetireReason.restart."""
        return self.reason.restart
