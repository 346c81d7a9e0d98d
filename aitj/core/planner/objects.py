"""Whose the objects under a job's names are, and whether what was written into them landed.

Pure. docs/semantics.md, "A job's objects are the ones it controls", is the rule for users.

Every object other than pods the operator makes for a job (the Service, ssh Secret, discovery
ConfigMap, launcher ServiceAccount, Role and RoleBinding, PodDisruptionBudgets, Volcano
PodGroup) has a name derived from the job's, so anyone who may create objects in the
namespace can make one first. An object is the job's only when its controller ownerReference
names the job's uid and it carries the proof derived from the job's key (``controls``:
annotation ``ANNOTATION_PROOF``, naming.object_proof; the key is in the job's status, which
only the operator writes, aitj.core.planner.ownership); the label proves nothing, nor does the
name, nor the ownerReference alone (anyone who may create the object may write it). An
object held by another (``foreign``) is never written, patched, deleted or mounted: the job gets an Event
naming it and its current condition says so, its create is tried again after the status
write (``Plan.probes``: a create never changes an object that exists, and the pass that finds
it gone makes it), and while one the pods would use is held by another (any kind but the
budgets) no pod is created (``held_back``).

What was written is judged from what is observed, never from what the status claims: the
operator stamps each object it rewrites (the discovery ConfigMap, the budgets, the Volcano
PodGroup) with a fingerprint of the content (annotation ``ANNOTATION_WRITTEN``), the
metadata-only cache keeps it (``ObjectState.digest``), and a pass rewrites an object whose
fingerprint is not the one the spec and the live pods call for (``stale``), whatever the
status recorded: a status write that landed while the object's write did not (or the
reverse) is repaired by the next pass. The ConfigMap's replace names the resourceVersion
observed (``Manifest.version``), so it never overwrites a change it has not seen; a budget's or
PodGroup's spec patch names the uid observed (``Manifest.uid``): their controllers write their
status all the time, so a version would conflict at every pod change, while the spec is the
operator's alone and needs only to be the job's object's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from aitj.core import naming
from aitj.core.api import Job, JobStatus
from aitj.core.api.names import LABEL_PREFIX
from aitj.core.observed import PodView
from aitj.core.planner.part import Context
from aitj.core.planner.status import Condition, advance_conditions
from aitj.core.planner.types import Event, Manifest, ObjectKind, ObjectRef, ObjectState, Owned, Plan
from aitj.core.wire import format_time, mapping, parse_time

ANNOTATION_WRITTEN = f"{LABEL_PREFIX}/written"
ANNOTATION_PROOF = f"{LABEL_PREFIX}/proof"
REASON_FOREIGN = "ObjectNotOwned"
# Kinds a pod of the job uses (mounts, runs as, is named or scheduled by): one held by another
# holds back every pod create. A budget only slows a drain: the job runs without it.
_POD_FREE = frozenset({ObjectKind.PDB})


def state_of(metadata: Mapping[str, Any]) -> ObjectState:
    """state_of: what the cache keeps of an object, from its metadata."""
    controllers = [
        str(ref.get("uid") or "")
        for ref in metadata.get("ownerReferences") or ()
        if isinstance(ref, Mapping) and ref.get("controller") is True
    ]
    annotations = mapping(metadata.get("annotations"))
    return ObjectState(
        uid=str(metadata.get("uid") or ""),
        resource_version=str(metadata.get("resourceVersion") or ""),
        controller=controllers[0] if controllers else "",
        digest=str(annotations.get(ANNOTATION_WRITTEN) or ""),
        proof=str(annotations.get(ANNOTATION_PROOF) or ""),
        created=str(metadata.get("creationTimestamp") or ""),
    )


def controls(job: Job, ref: ObjectRef, state: ObjectState) -> bool:
    """controls: the object ``ref`` (observed as ``state``) is the job's: the job is its
    controller, and it carries the proof made from the job's key, or was created before the
    key was written (``legacyBefore``: made by an operator before keys). A job with no key yet
    (a caller planning without one) has the controller rule alone."""
    if not job.uid or state.controller != job.uid:
        return False
    key = job.name_key
    if key is None or state.proof == naming.object_proof(key, ref.kind, ref.name):
        return True
    ownership = job.status.ownership
    return ownership is not None and ownership.predates(parse_time(state.created))


def proven(job: Job, m: Manifest) -> Manifest:
    """proven: ``m`` carrying the proof of the job's key (``ANNOTATION_PROOF``; as it is when
    the job has no key)."""
    key = job.name_key
    if key is None:
        return m
    meta = dict(mapping(m.body.get("metadata")))
    meta["annotations"] = {
        **mapping(meta.get("annotations")),
        ANNOTATION_PROOF: naming.object_proof(key, m.kind, m.name),
    }
    return replace(m, body={**m.body, "metadata": meta})


def with_proofs(job: Job, result: Plan) -> Plan:
    """with_proofs: every object ``result`` creates or rewrites carrying the job's proof."""
    if job.name_key is None:
        return result
    return replace(
        result,
        ensure=tuple(proven(job, m) for m in result.ensure),
        probes=tuple(proven(job, m) for m in result.probes),
        budgets=tuple(proven(job, m) for m in result.budgets),
        discovery=None if result.discovery is None else proven(job, result.discovery),
        podgroup=None if result.podgroup is None else proven(job, result.podgroup),
    )


def owned_by(job: Job, pod: PodView) -> bool:
    """owned_by: ``pod`` is one ``job`` made: the job is its controller, and its name is the one
    the operator derives from its labels (naming.pod_name). Here rather than in
    aitj.core.planner.core (which imports it) so that ``resources`` may ask it too."""
    return pod.made_by(job.name, job.uid, job.status.ownership)


def pods_of(job: Job, pods: Sequence[PodView]) -> tuple[list[PodView], list[PodView]]:
    """pods_of: of ``pods``, those carrying the job's label in its namespace, in their order,
    split in those the job made (``owned_by``) and the others, each judged once (the rule
    hashes a name: once per pod per pass is enough)."""
    mine: list[PodView] = []
    others: list[PodView] = []
    for p in pods:
        verdict = belongs(job, p)
        if verdict is not None:
            (mine if verdict else others).append(p)
    return mine, others


def belongs(job: Job, pod: PodView) -> bool | None:
    """belongs: ``pod`` is the job's (``owned_by``: True), carries its label in its namespace
    without being its (False), or is another job's (None). ``pods_of`` asks it of every pod;
    aitj.core.planner.memo asks it once per pod view."""
    if pod.job != job.name or pod.namespace not in ("", job.namespace):
        return None
    return owned_by(job, pod)


def split(job: Job, owned: Owned | None) -> tuple[Owned | None, Owned]:
    """split: of the objects observed under the job's names, those the job controls (None:
    not observed) and those held by another (a user's, another job's, an earlier job's of the
    same name the garbage collector has not removed yet)."""
    if owned is None:
        return None, {}
    mine = {ref: s for ref, s in owned.items() if controls(job, ref, s)}
    return mine, {ref: s for ref, s in owned.items() if ref not in mine}


def digest(content: Any) -> str:
    """digest: the fingerprint of an object's content as the operator writes it."""
    data = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def stamped(m: Manifest, fingerprint: str, owned: Owned | None) -> Manifest:
    """stamped: ``m`` carrying ``fingerprint`` (``ANNOTATION_WRITTEN``), and the observed
    resourceVersion and uid of the job's object it rewrites ("" when ``owned`` has none: a
    create)."""
    meta = dict(mapping(m.body.get("metadata")))
    meta["annotations"] = {**mapping(meta.get("annotations")), ANNOTATION_WRITTEN: fingerprint}
    state = (owned or {}).get(m.ref)
    version, uid = (state.resource_version, state.uid) if state else ("", "")
    return Manifest(m.kind, m.name, {**m.body, "metadata": meta}, version, uid)


def stale(owned: Owned, ref: ObjectRef, fingerprint: str) -> bool:
    """stale: the job's object ``ref`` is observed and does not hold ``fingerprint`` (a
    missing one is made, not rewritten)."""
    state = owned.get(ref)
    return state is not None and state.digest != fingerprint


def holds_back_pods(foreign: Owned) -> bool:
    """holds_back_pods: an object the pods would use is held by another: no pod is created."""
    return any(ref.kind not in _POD_FREE for ref in foreign)


def probes(wanted: tuple[Manifest, ...], foreign: Owned) -> tuple[tuple[Manifest, ...], tuple[Manifest, ...]]:
    """probes: ``wanted`` creates split in those to make (no object under the name) and those
    to try again after the status write (held by another: ``Plan.probes``)."""
    return tuple(m for m in wanted if m.ref not in foreign), tuple(m for m in wanted if m.ref in foreign)


def message(ref: ObjectRef, state: ObjectState) -> str:
    """message: what a held object means, for people: which object, whose, and what to do."""
    whose = f"its controller is uid {state.controller}" if state.controller else "it has no controller"
    pods = "" if ref.kind in _POD_FREE else "; no pod of the job is created until then"
    return (
        f"{ref.kind} {ref.name} exists and is not this job's ({whose}): the operator leaves it "
        f"untouched; delete or rename it and the job makes its own{pods}"
    )


def event(job: Job, ref: ObjectRef, state: ObjectState) -> Event:
    """event: the Warning naming a held object, posted once per object (named after it)."""
    key = digest([ref.kind, ref.name, state.uid])[:10]
    return Event("Warning", REASON_FOREIGN, message(ref, state), name=f"{job.name}.held.{key}")


def held_back(ctx: Context, result: Plan) -> Plan:
    """held_back: the combined ``result`` of a live pass, told of the objects held by another
    that it tries again (``Plan.probes``: those under names the job wants; one that only
    carries the job's label under another name concerns it not): an Event naming each, the
    job's current condition saying so (its phase unchanged), no pod created while one the
    pods use is held, and the job planned again right after a pass whose probes all went
    through (the names were free: the job's own objects are made, and its pods may follow)."""
    held = sorted(
        ((m.ref, ctx.foreign[m.ref]) for m in result.probes if m.ref in ctx.foreign),
        key=lambda item: (item[0].kind, item[0].name),
    )
    if not held:
        return result
    status = _said(ctx, held, result.status or ctx.prev)
    return replace(
        result,
        events=result.events + tuple(event(ctx.job, ref, state) for ref, state in held),
        status=None if status == ctx.prev else status,
        creates=() if holds_back_pods(dict(held)) else result.creates,
        requeue_after=0.0,
    )


def _said(ctx: Context, held: Sequence[tuple[ObjectRef, ObjectState]], status: JobStatus) -> JobStatus:
    """_said: ``status`` with its current condition naming the ``held`` objects (reason
    ObjectNotOwned), or as it was when the last status said so already (no new write)."""
    current = status.current_condition()
    if current is None or current.type is None:
        return status
    text = "; ".join(message(ref, state) for ref, state in held)
    before = ctx.prev.current_condition()
    if before is not None and (before.type, before.reason, before.message) == (
        current.type,
        REASON_FOREIGN,
        text,
    ):
        return status.updated(conditions=ctx.prev.conditions)
    want = Condition(current.type, REASON_FOREIGN, text)
    return status.updated(conditions=advance_conditions(status.conditions or (), want, format_time(ctx.now)))
