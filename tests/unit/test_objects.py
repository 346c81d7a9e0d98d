"""A job's objects are the ones it controls, and they converge to what is observed of them
(aitj.core.planner.objects; docs/semantics.md, "A job's objects are the ones it controls")."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core import naming, render
from aitj.core.planner import ObjectKind, ObjectRef
from aitj.core.planner.objects import ANNOTATION_WRITTEN, REASON_FOREIGN, digest, split, state_of
from aitj.core.planner.types import ObjectState
from tests.unit.builders import JOB, Cluster, running_seed, seed_job, with_status

CONFIGMAP = ObjectRef(ObjectKind.CONFIGMAP, naming.discovery_configmap_name(JOB))
SECRET = ObjectRef(ObjectKind.SECRET, naming.ssh_secret_name(JOB))
PDB = ObjectRef(ObjectKind.PDB, render.pdb_name(JOB, "trainer"))


def running() -> Cluster:
    cluster = Cluster(seed_job(), running_seed())
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def users(name: str) -> dict[str, Any]:
    """users: an object a user made under the name, before the job (no owner, no label)."""
    return {"metadata": {"name": name, "uid": "users-uid"}, "data": {"config": "ProxyCommand evil"}}


@pytest.mark.parametrize(
    ("owners", "mine"),
    [
        pytest.param([{"uid": "JOB", "controller": True}], True, id="controlled by the job: its own"),
        pytest.param([], False, id="no owner (a user's): another's"),
        pytest.param([{"uid": "JOB"}], False, id="owned by the job but not controlled: another's"),
        pytest.param([{"uid": "other", "controller": True}], False, id="another controller: another's"),
    ],
)
def test_only_an_object_the_job_controls_is_its_own(owners: list[dict[str, Any]], mine: bool) -> None:
    job = seed_job()
    for owner in owners:
        owner["uid"] = job.uid if owner["uid"] == "JOB" else owner["uid"]
    own, held = split(job, {CONFIGMAP: state_of({"ownerReferences": owners})})
    assert (CONFIGMAP in (own or {}), CONFIGMAP in held) == (mine, not mine)


def test_the_state_kept_is_the_metadatas_few_facts() -> None:
    meta = {
        "uid": "u",
        "resourceVersion": "9",
        "ownerReferences": [{"uid": "x"}, {"uid": "j", "controller": True}],
        "annotations": {ANNOTATION_WRITTEN: "abc", "other": "ignored"},
    }
    assert state_of(meta) == ObjectState("u", "9", "j", "abc")


@pytest.mark.parametrize(
    "ref", [pytest.param(CONFIGMAP, id="discovery ConfigMap"), pytest.param(SECRET, id="ssh Secret")]
)
def test_an_object_the_pods_use_held_by_another_is_untouched_and_holds_back_the_pods(ref: ObjectRef) -> None:
    cluster = Cluster(seed_job())
    cluster.objects[ref] = users(ref.name)
    result = cluster.step(0)
    assert ref not in [m.ref for m in result.ensure] and [m.ref for m in result.probes] == [ref]
    assert result.creates == ()  # no pod would mount it
    [event] = [e for e in result.events if e.reason == REASON_FOREIGN]
    assert f"{ref.kind} {ref.name} exists and is not this job's" in event.message and event.name
    condition = cluster.status["conditions"][-1]
    assert condition["reason"] == REASON_FOREIGN and ref.name in condition["message"]
    cluster.step(1)
    assert cluster.objects[ref] == users(ref.name)  # never written
    assert cluster.step(2).status is None  # and the condition stays, unchanged


def test_the_job_makes_its_own_once_the_name_is_free() -> None:
    cluster = Cluster(seed_job())
    cluster.objects[CONFIGMAP] = users(CONFIGMAP.name)
    cluster.step(0)
    del cluster.objects[CONFIGMAP]  # the user deletes theirs
    result = cluster.step(1)
    assert [m.ref for m in result.ensure] == [CONFIGMAP] and result.creates
    assert cluster.status["conditions"][-1]["reason"] != REASON_FOREIGN


def test_a_budget_held_by_another_is_never_written_nor_deleted_and_the_job_runs() -> None:
    cluster = Cluster(seed_job())
    theirs = {"metadata": {"name": PDB.name, "uid": "theirs"}, "spec": {"minAvailable": 9}}
    cluster.objects[PDB] = theirs
    first = cluster.step(0)
    assert first.creates  # a budget only slows a drain
    assert PDB not in [m.ref for m in first.budgets] and PDB in [m.ref for m in first.probes]
    cluster.run_all()
    cluster.step(10)
    cluster.job = with_status(cluster.job, {**cluster.status, "phase": "Succeeded"})
    assert PDB not in cluster.step(20).removes
    assert cluster.objects[PDB] == theirs


def test_the_discovery_configmap_converges_to_the_live_pods_whatever_the_status_says() -> None:
    # Pass A writes the ConfigMap with 2 hosts and its status write is refused (stale); the
    # lost pod comes back: pass B wants 3 hosts, which the status already says.
    cluster = running()
    three = cluster.objects[CONFIGMAP]["data"]["hosts"]
    lost = cluster.pods[naming.pod_name(JOB, cluster.job.uid, "trainer", 2, 0)]
    lost.raw["status"]["phase"] = "Pending"
    a = cluster.plan(20)
    assert a.discovery is not None
    cluster.apply(a, 20, status=False)
    assert cluster.objects[CONFIGMAP]["data"]["hosts"].count("\n") == 2
    lost.raw["status"]["phase"] = "Running"
    b = cluster.step(30)
    assert b.discovery is not None and cluster.objects[CONFIGMAP]["data"]["hosts"] == three
    assert cluster.step(40).discovery is None  # then quiet


def test_a_budget_recorded_but_never_written_is_written() -> None:
    # The operator stopped between the status write and the budget's: the status records
    # minAvailable 2 while the budget still holds 4.
    cluster = running()
    old = render.render_pdb(cluster.job, "trainer", 4)
    old["metadata"]["annotations"] = {ANNOTATION_WRITTEN: digest(old["spec"])}
    cluster.objects[PDB] = old
    result = cluster.step(20)
    assert [m.ref for m in result.budgets] == [PDB]
    assert cluster.objects[PDB]["spec"] == render.render_pdb(cluster.job, "trainer", 2)["spec"]
    assert cluster.step(30).budgets == ()


def test_a_job_s_objects_are_removed_under_their_observed_uid() -> None:
    cluster = running()
    cluster.job = with_status(cluster.job, {**cluster.status, "phase": "Succeeded"})
    cluster.objects[PDB] = {
        **cluster.objects[PDB],
        "metadata": {**cluster.objects[PDB]["metadata"], "uid": "p-1"},
    }
    [removed] = [r for r in cluster.plan(20).removes if r == PDB]
    assert removed.uid == "p-1"


def test_an_object_that_only_carries_the_job_s_label_under_another_name_concerns_it_not() -> None:
    # The cache finds objects by the job's label: one under a name the job never uses is not
    # in its way, so it holds nothing back and is named nowhere.
    cluster = Cluster(seed_job())
    other = ObjectRef(ObjectKind.CONFIGMAP, "someone-elses-notes")
    cluster.objects[other] = users(other.name)
    result = cluster.step(0)
    assert result.creates and result.probes == ()
    assert not [e for e in result.events if e.reason == REASON_FOREIGN]
    assert all(c.get("reason") != REASON_FOREIGN for c in cluster.status.get("conditions") or [])


def test_a_pass_that_tries_a_held_name_again_plans_the_job_again_right_after() -> None:
    # A probe that goes through makes the job's own object and nothing else: the pods it held
    # back come with the next pass, which nothing else would cause (the object is the
    # operator's own write, whose watch event kicks nothing).
    cluster = Cluster(seed_job())
    cluster.objects[SECRET] = users(SECRET.name)
    result = cluster.step(0, rest=False)
    assert result.probes and result.requeue_after == 0.0
