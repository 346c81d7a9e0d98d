"""What the operator's own calls returned, on its way from the executor to the cache, and
whether the watch events that came while a pass ran only echo it.

The executor fills a ``Written`` as it sends a Plan; the reconciler hands it to the cache
(``InformerCache.written``: write-through), so the next pass plans from the operator's own
writes instead of a copy the watch has not caught up with. Here, apart from both, so that the
cache does not import the executor to read what it is handed.

A pass writes through when its calls are done, and the watch's echoes of its writes (the
replacement's ADDED, the released pod's DELETED, the job's status) mostly come before that,
while it runs. The cache kicks the job for each of them (``Seen``: it holds nothing newer yet),
and the job is planned once more. Telling those echoes from news by the version a call
returned was tried and dropped (``Reconciler._settle``): that version may hold another's
change, which it then passed off as an echo. ``returned_news``: a pod a call returned that
shows what only others write changed since the pass's snapshot makes one more pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aitj.core.observed import PodView
from aitj.core.planner.types import ObjectKind, ObjectRef
from aitj.core.wire import mapping


@dataclass
class Written:
    """Written: what one pass's calls returned, for the cache: ``jobs`` (after a status or spec
    write) and ``pods`` (created, deleted, released) as the server answered, the names of pods
    and objects found gone (404), and the owned objects created."""

    jobs: list[Mapping[str, Any]] = field(default_factory=list)
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    gone_pods: list[str] = field(default_factory=list)
    owned: list[tuple[ObjectKind, Mapping[str, Any]]] = field(default_factory=list)
    gone_owned: list[ObjectRef] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Seen:
    """Seen: a watch event of a job or of one of its pods that kicked the job: the object's
    uid, the version the event brought, and whether it was a deletion."""

    uid: str
    version: str
    deleted: bool = False


def pod_gone(meta: Mapping[str, Any]) -> bool:
    """pod_gone: a pod whose metadata a call returned is gone once nothing holds it: deleted,
    no finalizer left and no grace period to wait out (a graceful deletion stays until the
    kubelet confirms it or the grace runs out)."""
    return bool(
        meta.get("deletionTimestamp")
        and not meta.get("finalizers")
        and not meta.get("deletionGracePeriodSeconds")
    )


# What only others write into a pod (the kubelet, the scheduler, a person's delete; the
# operator's own graceful delete sets ``deleted_at`` too, and costs one more pass): a call's
# response can carry such a change made between the pass's snapshot and the call (the kubelet
# failing the pod while the pass nudged it; a patch that changed nothing returns the pod as it
# is now, at the very version of that change). Its watch event may then be dropped as older
# than what the cache holds once written through:
# ``returned_news`` says the pass must be followed by another.
OTHERS_FIELDS = (
    "phase",
    "node_name",
    "running_since",
    "deleted_at",
    "exit_code",
    "exit_container",
    "exit_at",
    "disruption",
    "disruption_at",
    "reason",
    "message",
    "unschedulable",
    "restarts",
    "restart_exit",
)


def others_changed(old: PodView | None, new: PodView) -> bool:
    """others_changed: the pod a call returned (``new``) differs from the view the pass planned
    from (``old``, the same pod) in what only others write: news no pass has planned from. A pod
    not planned from (just created) or another pod of that name is not judged here."""
    if old is None or old.uid != new.uid:
        return False
    return any(getattr(old, f) != getattr(new, f) for f in OTHERS_FIELDS)


def returned_news(planned: Mapping[str, PodView], wrote: Written) -> bool:
    """returned_news: a pod one of the pass's calls returned differs from the view the pass
    planned from (``planned``, by name: looked up, not searched) in what only others write
    (``others_changed``, which judges only the very pod: the same uid)."""
    for body in wrote.pods:
        meta = mapping(body.get("metadata"))
        old = planned.get(str(meta.get("name") or ""))
        if old is not None and not pod_gone(meta) and others_changed(old, PodView.from_dict(body)):
            return True
    return False
