"""What makes a pod or an object the job's (issue 47, HIGH 2): names and proofs derived from the
job's key, which the operator writes in the status before it makes anything
(aitj.core.planner.ownership). A creator who writes the job's labels, ownerReference and a name
derived from public inputs (the job's uid, replica, index, generation) makes nothing the job's.
The real-apiserver half (the admission policy that refuses the claim at create) is
tests/e2e/test_ownership_policy.py."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core import naming
from aitj.core.observed import TRACKING_FINALIZER
from aitj.core.planner import plan
from aitj.core.planner.objects import ANNOTATION_PROOF, controls, state_of
from aitj.core.planner.types import ObjectKind, ObjectRef, Plan
from aitj.core.wire import format_time
from tests.unit.builders import JOB, NAMESPACE, UID, Cluster, Pod, at, node, observed, seed_job, with_status

KEY = "5f" * 16
SECRET = ObjectRef(ObjectKind.SECRET, f"{JOB}-ssh")
HOSTS = ObjectRef(ObjectKind.CONFIGMAP, f"{JOB}-discovery")


def keyed() -> Cluster:
    """keyed: the seed job brought up by passes that hand the planner ``KEY`` as the reconciler
    hands a fresh key, every pod Running."""
    cluster = Cluster(seed_job(), fresh_key=KEY)
    first = cluster.step(1)
    assert first.creates == () and first.ensure == ()  # the key pass makes nothing
    assert cluster.job.status.ownership is not None and cluster.job.status.ownership.key == KEY
    assert cluster.job.status.ownership.legacy_before is None  # nothing before the key
    for t in range(2, 8):
        cluster.step(t)
        cluster.run_all(t)
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def forged(replica: str, index: int, generation: int, *, key: str | None = None, created: float = 20) -> Pod:
    """forged: a pod a tenant made with everything a creator can write: the job's labels, its
    controller ownerReference, the operator's finalizer, and the name derived from the public
    inputs (unkeyed: the creator cannot read the key; ``key``: one who could)."""
    pod = Pod(replica, index, generation, created=created)
    pod.raw["metadata"]["name"] = naming.pod_name(JOB, UID, replica, index, generation, key)
    return pod


def with_intruder(cluster: Cluster, intruder: Pod, now: float) -> Plan:
    """with_intruder: the pass of ``cluster``'s job at ``now`` with ``intruder`` among its pods."""
    views = [p.view() for p in [*cluster.pods.values(), intruder]]
    return plan(cluster.job, views, cluster.nodes, at(now), owned=observed(cluster.objects))


def test_the_first_pass_stores_the_key_and_the_pods_are_named_from_it() -> None:
    cluster = keyed()
    names = sorted(cluster.pods)
    assert names == sorted(
        naming.pod_name(JOB, UID, r, i, 0, KEY)
        for r, i in [("trainer", k) for k in range(3)] + [("launcher", 0)]
    )
    assert not set(names) & {naming.pod_name(JOB, UID, "trainer", k, 0) for k in range(3)}  # none unkeyed
    for body in cluster.objects.values():  # every object carries the proof of the key
        assert ANNOTATION_PROOF in body["metadata"]["annotations"]


def test_a_forged_pod_of_a_later_generation_supersedes_nothing_and_joins_no_host_list() -> None:
    cluster = keyed()
    intruder = forged("trainer", 0, 7).running(20)
    result = with_intruder(cluster, intruder, 21)
    assert result.deletes == () and result.creates == () and result.discovery is None
    assert result.release == (intruder.name,)  # it had the operator's finalizer: let go, no more


def test_a_forged_succeeded_launcher_does_not_end_the_job() -> None:
    cluster = keyed()
    intruder = forged("launcher", 0, 1).exited(0, finished=20)  # the next generation's name, unkeyed
    result = with_intruder(cluster, intruder, 21)
    assert result.outcome is None and result.deletes == () and result.creates == ()


def test_a_pod_forged_under_the_name_of_one_the_job_replaced_ends_nothing() -> None:
    """The name of a pod the job had is public: once that pod is gone (its replacement made,
    its finalizer let go), a tenant may create a pod under it, Succeeded. It is an old
    generation: superseded, it ends nothing."""
    cluster = keyed()
    launcher = next(n for n in cluster.pods if "-launcher-" in n)
    cluster.pods[launcher].deleted(20, 0)  # force-deleted: seen, replaced, let go
    cluster.step(21)
    cluster.collect()
    assert launcher not in cluster.pods
    cluster.run_all(22)
    cluster.step(23)
    intruder = forged("launcher", 0, 0, key=None).exited(0, finished=24)
    intruder.raw["metadata"]["name"] = launcher
    result = with_intruder(cluster, intruder, 25)
    assert result.outcome is None and result.creates == ()


def test_a_reader_of_the_key_forges_a_name_but_not_the_proof_of_an_object() -> None:
    """The key is in the status: whoever can read the job can derive a name (the admission
    policy is what stops them, tests/e2e/test_ownership_policy.py). Without it, no name."""
    job = keyed().job
    assert forged("trainer", 0, 7, key=KEY).view().made_by(JOB, UID, job.status.ownership)
    assert not forged("trainer", 0, 7).view().made_by(JOB, UID, job.status.ownership)


def planted(ref: ObjectRef, *, proof: str | None = None, created: float = 30) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": ref.name,
        "namespace": NAMESPACE,
        "uid": f"planted-{ref.name}",
        "creationTimestamp": format_time(at(created)),
        "ownerReferences": [{"kind": "AITrainingJob", "name": JOB, "uid": UID, "controller": True}],
        "labels": {"aitj.kongming.cce.baiudbce.com/job-name": JOB},
    }
    if proof is not None:
        meta["annotations"] = {ANNOTATION_PROOF: proof}
    return {"metadata": meta}


def test_a_secret_planted_with_the_jobs_owner_reference_before_the_operator_makes_it_is_held() -> None:
    cluster = Cluster(seed_job(), fresh_key=KEY)
    cluster.step(1)  # the key pass
    cluster.objects[SECRET] = planted(SECRET)  # in the moment before the job's create
    result = cluster.step(2)
    assert result.creates == ()  # no pod would mount it
    assert SECRET in {m.ref for m in result.probes}  # its create is tried again
    assert cluster.status["conditions"][-1]["reason"] == "ObjectNotOwned"
    assert "ssh" in cluster.status["conditions"][-1]["message"]


def test_an_object_is_the_jobs_with_its_controller_and_the_proof_of_its_key() -> None:
    job = keyed().job
    proof = naming.object_proof(KEY, SECRET.kind, SECRET.name)
    assert controls(job, SECRET, state_of(planted(SECRET, proof=proof)["metadata"]))
    assert not controls(job, SECRET, state_of(planted(SECRET)["metadata"]))  # no proof
    assert not controls(job, SECRET, state_of(planted(SECRET, proof="0" * 32)["metadata"]))
    assert not controls(job, HOSTS, state_of(planted(HOSTS, proof=proof)["metadata"]))  # another's proof


def test_a_job_made_before_keys_keeps_its_pods_and_objects_and_refuses_later_unkeyed_ones() -> None:
    """An operator before keys made the job: its first pass under keys writes the key with
    legacyBefore; what was there before keeps its unkeyed name, a later unkeyed name is not the
    job's."""
    old = Cluster(seed_job())  # planned without a key: unkeyed names, no proofs
    for t in range(1, 6):
        old.step(t)
        old.run_all(t)
    old.step(10)
    assert old.status["phase"] == "Running"
    before = sorted(old.pods)
    upgraded = Cluster(old.job, old.pods.values(), fresh_key=KEY)
    upgraded.objects = dict(old.objects)
    for body in upgraded.objects.values():  # as the apiserver stored them, before the upgrade
        body["metadata"]["creationTimestamp"] = format_time(at(5))
    keyed_pass = upgraded.step(30)
    assert keyed_pass.creates == () and keyed_pass.deletes == ()
    ownership = upgraded.job.status.ownership
    assert ownership is not None and ownership.key == KEY and ownership.legacy_before == format_time(at(31))
    after = upgraded.step(31)
    assert (
        after.creates == () and after.deletes == () and after.probes == () and sorted(upgraded.pods) == before
    )
    assert upgraded.status["phase"] == "Running"
    late = forged("trainer", 1, 4, created=40).running(40)  # unkeyed, created after the key
    result = plan(
        upgraded.job,
        [p.view() for p in [*upgraded.pods.values(), late]],
        {"node-a": node()},
        at(41),
        owned=observed(upgraded.objects),
    )
    assert result.deletes == () and result.creates == () and result.release == (late.name,)


# --- the property: nothing a tenant without rights on the job makes changes what it does -----

KINDS = st.sampled_from(["pod", "secret", "configmap"])


@st.composite
def intrusions(draw: st.DrawFn) -> list[tuple[str, dict[str, Any]]]:
    """intrusions: what a tenant makes in the job's namespace, in order: pods, Secrets and
    ConfigMaps with the job's labels, names derived from public inputs or the job's object
    names, the job's controller ownerReference, the operator's finalizer, in any phase."""
    made: list[tuple[str, dict[str, Any]]] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(KINDS)
        if kind == "pod":
            replica = draw(st.sampled_from(["trainer", "launcher"]))
            index = draw(st.integers(0, 3))
            pod = forged(replica, index, draw(st.integers(0, 9)), created=draw(st.integers(11, 40)))
            if not draw(st.booleans()):
                del pod.raw["metadata"]["ownerReferences"]
            if not draw(st.booleans()):
                pod.untracked()
            phase = draw(st.sampled_from(["running", "succeeded", "failed", "pending"]))
            if phase == "running":
                pod.running(20)
            elif phase != "pending":
                pod.exited(0 if phase == "succeeded" else 1, finished=25)
            made.append(("pod", pod.raw))
        else:
            ref = SECRET if kind == "secret" else HOSTS
            made.append((kind, planted(ref, proof=draw(st.sampled_from([None, "0" * 32])))))
    return made


def outcome(result: Plan) -> tuple[Any, ...]:
    """outcome: what a pass does to the job, its pods and its objects (the releases of the
    tenant's own pods aside: letting go of a finalizer on a pod not the job's is all it gets)."""
    status = result.status.to_json() if result.status is not None else None
    return (
        [c.name for c in result.creates],
        result.deletes,
        [m.ref for m in result.ensure],
        result.discovery.body["data"] if result.discovery is not None else None,
        status,
        result.outcome,
        result.restarts,
    )


@settings(max_examples=200, deadline=None)
@given(made=intrusions(), now=st.integers(41, 60))
def test_whatever_a_tenant_without_rights_on_the_job_makes_the_job_is_what_it_would_be(
    made: list[tuple[str, dict[str, Any]]], now: int
) -> None:
    cluster = keyed()
    clean = plan(
        cluster.job,
        [p.view() for p in cluster.pods.values()],
        cluster.nodes,
        at(now),
        owned=observed(cluster.objects),
    )
    pods = [p.view() for p in cluster.pods.values()]
    objects = copy.deepcopy(cluster.objects)
    intruders: list[str] = []
    for kind, body in made:
        if kind == "pod":
            if body["metadata"]["name"] in cluster.pods:
                continue  # the name is taken: the create is refused
            pods.append(_view(body))
            intruders.append(body["metadata"]["name"])
        else:
            ref = SECRET if kind == "secret" else HOSTS
            objects.setdefault(ref, body)  # AlreadyExists when the job's is there
    dirty = plan(cluster.job, pods, cluster.nodes, at(now), owned=observed(objects))
    assert outcome(dirty) == outcome(clean)
    assert set(dirty.release) - set(clean.release) <= set(intruders)


def _view(body: dict[str, Any]) -> Any:
    from aitj.core.observed import PodView

    return PodView.from_dict(body)


def test_the_finalizer_alone_is_what_a_forged_pod_gets_back() -> None:
    cluster = keyed()
    intruder = forged("trainer", 2, 3).running(20)
    assert TRACKING_FINALIZER in intruder.raw["metadata"]["finalizers"]
    result = with_intruder(cluster, intruder, 21)
    assert result.release == (intruder.name,)


def test_with_status_keeps_the_key() -> None:
    job = with_status(seed_job(), {"ownership": {"key": KEY}})
    assert job.name_key == KEY and job.pod_name("trainer", 0, 0) == naming.pod_name(
        JOB, UID, "trainer", 0, 0, KEY
    )
