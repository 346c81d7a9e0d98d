"""The job's key (``status.ownership``): written before the job has anything, so that what it
has is provably its own.

Pure. A pod is the job's only under a name derived from the job's key (naming.pod_name), and
each of its other objects only with the proof derived from it (objects.split): nobody who cannot
read the job's status can tell either, and only the operator writes the status
(docs/security.md, "What makes a pod the job's"). The key is randomness, so the caller makes it
(``fresh``, like the ssh Secret's key pair) and the planner writes it: the pass of a live job
whose status has none writes it and does nothing else, not a pod nor an object created under a
key that is not stored yet (a crash before the status write would leave them the job's under
no key). The pass asks to be followed at once (``requeue_after`` 0): the next, milliseconds
later, creates under the stored key.

A job that had pods or objects when its key was written (made by an operator before keys) keeps
them: ``legacyBefore``, the time of the write in whole seconds, lets what was created before it
keep its unkeyed name and no proof (creationTimestamp is the apiserver's: nobody can create an
object in the past). It is the second after the write's: a creationTimestamp has whole
seconds. A job created under keys never has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from aitj.core.api import FINISHED_PHASES, Job, Ownership
from aitj.core.observed import PodView
from aitj.core.planner.objects import pods_of
from aitj.core.planner.types import Owned, Plan
from aitj.core.wire import format_time


def key_pass(
    job: Job, pods: Sequence[PodView], owned: Owned | None, fresh: str, now: datetime
) -> Plan | None:
    """key_pass: the pass that writes the job's key ``fresh``, asked before ``plan`` (None: the
    job has its key, or has finished: plan it). ``pods`` and ``owned`` as ``plan`` gets them."""
    if job.status.ownership is not None or job.status.phase in FINISHED_PHASES:
        return None
    mine, _ = pods_of(job, pods)  # unkeyed: the job has no key yet
    legacy = bool(mine) or any(s.controller == job.uid for s in (owned or {}).values())
    # The second after now's: creationTimestamps are whole seconds, and a pod the operator
    # before keys created in the second the key is written is still its.
    before = format_time(now + timedelta(seconds=1)) if legacy else None
    status = job.status.updated(ownership=Ownership(key=fresh, legacy_before=before))
    # Planned again at once: nothing else changes for a new job, and the status write's own
    # watch event finds its version already in the cache (the executor's write-through), so it
    # would kick no pass (a job seen waiting 2 minutes for an unrelated event on real nodes).
    return Plan(status=status, requeue_after=0.0)
