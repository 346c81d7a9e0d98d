"""Native gang scheduling (aitj.core.planner.gang, aitj.core.render.gang; docs/gang.md): the
gang objects a job gets, which PodGroup its pods join, when a gang is formed anew."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from aitj.core.api import Job, RestartScope
from aitj.core.explain import explain
from aitj.core.planner import Plan, PodCreate, plan
from aitj.core.planner.resources import needs_ssh_keys
from aitj.core.planner.types import ObjectKind, ObjectRef, Settings
from aitj.core.render import gang as render_gang
from tests.unit.builders import (
    JOB,
    KEYS,
    Cluster,
    Pod,
    at,
    event_rule,
    name_of,
    node,
    nodes,
    observed,
    seed_job,
    with_replica,
)

GANG = Settings(gang_schedulers=frozenset({"volcano"}))
WORKLOAD = ObjectRef(ObjectKind.GANG_WORKLOAD, JOB)


def group(epoch: int) -> ObjectRef:
    return ObjectRef(ObjectKind.GANG_POD_GROUP, f"{JOB}-gang-{epoch}")


def on_scheduler(job: Job, name: str | None = "volcano", only: str | None = None) -> Job:
    """on_scheduler: the job with its pod templates naming ``name`` (``only``: that replica's)."""
    replicas = []
    for r in job.spec.replicas:
        spec = dict(r.template.get("spec") or {})
        if only is None or r.name == only:
            spec.pop("schedulerName", None)
            if name is not None:
                spec["schedulerName"] = name
        replicas.append(dataclasses.replace(r, template={**r.template, "spec": spec}))
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, replicas=tuple(replicas)))


class GangCluster(Cluster):
    """GangCluster: the builders' Cluster with the operator's settings, whose pods keep the
    PodGroup they were created in (as the API server keeps spec.schedulingGroup)."""

    def __init__(self, job: Job, settings: Settings = GANG, pods: Sequence[Pod] = ()) -> None:
        super().__init__(job, pods)
        self.settings = settings

    def plan(self, now: float) -> Plan:
        owned = observed(self.objects)
        views = [p.view() for p in self.pods.values()]
        keys = KEYS if needs_ssh_keys(self.job, owned, views) else None
        return plan(self.job, views, self.nodes, at(now), owned=owned, keys=keys, settings=self.settings)

    def send_creates(self, creates: Sequence[PodCreate]) -> None:
        super().send_creates(creates)
        for c in creates:
            sg = c.body["spec"].get("schedulingGroup")
            if sg is not None:
                self.pods[c.name].raw["spec"].setdefault("schedulingGroup", sg)

    def groups(self) -> list[str]:
        return sorted(r.name for r in self.objects if r.kind is ObjectKind.GANG_POD_GROUP)

    def pod_groups(self) -> dict[str, str | None]:
        return {
            n: p.view().pod_group
            for n, p in self.pods.items()
            if "deletionTimestamp" not in p.raw["metadata"]
        }


def started(job: Job | None = None, settings: Settings = GANG) -> GangCluster:
    """started: the seed job on volcano, planned until every pod runs."""
    cluster = GangCluster(job or on_scheduler(seed_job()), settings)
    cluster.step(1)
    cluster.run_all(2)
    cluster.step(3)  # the launcher, once the trainers run
    cluster.run_all(4)
    cluster.step(5)
    assert cluster.status["phase"] == "Running"
    return cluster


def spec_of(body: Mapping[str, Any]) -> Any:
    return body["spec"]


def test_a_job_on_a_gang_scheduler_gets_its_workload_and_first_pod_group_before_its_pods() -> None:
    cluster = GangCluster(on_scheduler(seed_job()))
    first = cluster.step(1)
    kinds = [m.kind for m in first.ensure]
    assert kinds[-2:] == [ObjectKind.GANG_WORKLOAD, ObjectKind.GANG_POD_GROUP]
    workload, pod_group = first.ensure[-2].body, first.ensure[-1].body
    assert workload["apiVersion"] == "scheduling.k8s.io/v1beta1" and workload["kind"] == "Workload"
    assert spec_of(workload)["podGroupTemplates"] == [
        {"name": "trainers", "schedulingPolicy": {"gang": {"minCount": 1}}}
    ]
    assert spec_of(workload)["controllerRef"]["name"] == JOB
    assert pod_group["metadata"]["name"] == f"{JOB}-gang-0"
    assert (
        pod_group["metadata"]["ownerReferences"][0]["uid"]
        == workload["metadata"]["ownerReferences"][0]["uid"]
    )
    assert spec_of(pod_group)["workloadRef"] == {"workloadName": JOB, "templateName": "trainers"}
    assert [c.body["spec"]["schedulingGroup"] for c in first.creates] == [
        {"podGroupName": f"{JOB}-gang-0"}
    ] * 3


def test_the_gang_objects_are_written_in_the_version_the_cluster_serves() -> None:
    settings = dataclasses.replace(GANG, gang_version="v1alpha2")  # Kubernetes 1.36
    first = GangCluster(on_scheduler(seed_job()), settings).step(1)
    workload, pod_group = first.ensure[-2].body, first.ensure[-1].body
    assert {workload["apiVersion"], pod_group["apiVersion"]} == {"scheduling.k8s.io/v1alpha2"}
    assert spec_of(pod_group)["podGroupTemplateRef"] == {
        "workload": {"workloadName": JOB, "podGroupTemplateName": "trainers"}
    }


def test_min_count_is_the_sum_of_the_workers_min_replicas_and_leaves_out_the_launcher() -> None:
    job = on_scheduler(with_replica(seed_job(), "trainer", replicas=4, min_replicas=4))
    first = GangCluster(job).step(1)
    assert spec_of(first.ensure[-1].body)["schedulingPolicy"] == {"gang": {"minCount": 4}}


def test_a_job_of_masters_only_counts_its_masters() -> None:
    job = on_scheduler(seed_job(seed_job().spec.replica("launcher")))
    first = GangCluster(job).step(1)
    assert spec_of(first.ensure[-1].body)["schedulingPolicy"] == {"gang": {"minCount": 1}}


@pytest.mark.parametrize(
    ("settings", "job"),
    [
        (Settings(), on_scheduler(seed_job())),  # the cluster serves no Workload API
        (GANG, seed_job()),  # the default scheduler
        (GANG, on_scheduler(seed_job(), "default-scheduler")),
        (GANG, on_scheduler(seed_job(), "default-scheduler", only="launcher")),  # two schedulers
    ],
    ids=["api-not-served", "no-scheduler-name", "not-a-gang-scheduler", "mixed-schedulers"],
)
def test_without_a_gang_scheduler_nothing_changes(settings: Settings, job: Job) -> None:
    gang = GangCluster(job, settings).step(1)
    plain = Cluster(job).step(1)
    assert gang == plain
    assert all("schedulingGroup" not in c.body["spec"] for c in gang.creates)


def test_objects_not_observed_plan_nothing_about_gangs() -> None:
    job = on_scheduler(seed_job())
    result = plan(job, [], nodes(), at(1), owned=None, settings=GANG)
    assert result.ensure == () and all("schedulingGroup" not in c.body["spec"] for c in result.creates)


def test_the_launcher_and_a_pod_replaced_alone_join_the_gang_already_placed() -> None:
    cluster = started()
    assert set(cluster.pod_groups().values()) == {f"{JOB}-gang-0"}
    cluster.pods[name_of("trainer", 1)].deleted(10, 0)  # force-deleted: scope Pod
    result = cluster.step(11)
    assert [c.name for c in result.creates] == [name_of("trainer", 1, 1)]
    assert result.creates[0].body["spec"]["schedulingGroup"] == {"podGroupName": f"{JOB}-gang-0"}
    assert result.ensure == () and result.removes == ()
    assert cluster.groups() == [f"{JOB}-gang-0"]


def test_a_restart_of_scope_replica_beside_a_running_launcher_joins_the_gang() -> None:
    job = with_replica(
        on_scheduler(seed_job()), "trainer", rules=(event_rule("nodeNotReady", RestartScope.REPLICA),)
    )
    cluster = started(job)
    cluster.pods[name_of("launcher", 0)].raw["spec"]["nodeName"] = "node-b"
    cluster.nodes = nodes(node("node-a", "False", since=95), node("node-b"))
    result = cluster.step(100)
    assert len(result.creates) == 3 and not any(m.kind is ObjectKind.GANG_POD_GROUP for m in result.ensure)


def test_a_restart_of_scope_all_forms_a_new_gang_and_deletes_the_old_pod_group() -> None:
    job = with_replica(
        on_scheduler(seed_job()), "trainer", rules=(event_rule("nodeNotReady", RestartScope.ALL),)
    )
    cluster = started(job)
    cluster.nodes = nodes(node("node-a", "False", since=95))
    first = cluster.step(100)
    assert [m.ref for m in first.ensure] == [group(1)]
    assert first.removes == (group(0),)
    assert {c.body["spec"]["schedulingGroup"]["podGroupName"] for c in first.creates} == {f"{JOB}-gang-1"}
    cluster.nodes = nodes(node("node-a"))
    cluster.terminate_deleted()
    cluster.run_all(102)
    second = cluster.step(103)  # the launcher joins the new gang
    assert [c.body["spec"]["schedulingGroup"]["podGroupName"] for c in second.creates] == [f"{JOB}-gang-1"]
    assert second.ensure == () and second.removes == ()
    assert cluster.groups() == [f"{JOB}-gang-1"]


def test_a_pass_that_died_after_creating_the_new_gangs_pods_does_not_form_another() -> None:
    job = with_replica(
        on_scheduler(seed_job()), "trainer", rules=(event_rule("nodeNotReady", RestartScope.ALL),)
    )
    cluster = started(job)
    cluster.nodes = nodes(node("node-a", "False", since=95))
    first = cluster.plan(100)
    cluster.apply(first, 100, stop_after="creates")  # no status, no deletes
    # and the old PodGroup not deleted either
    cluster.objects[group(0)] = {"metadata": {"ownerReferences": [{"uid": job.uid, "controller": True}]}}
    again = cluster.step(101)
    assert all(m.ref != group(2) for m in again.ensure)
    assert {c.body["spec"]["schedulingGroup"]["podGroupName"] for c in again.creates} <= {f"{JOB}-gang-1"}
    assert group(0) in again.removes


def test_scale_out_pods_join_the_gang() -> None:
    cluster = started()
    job = with_replica(cluster.job, "trainer", replicas=4)
    cluster.job = dataclasses.replace(job, generation=job.generation + 1)
    result = cluster.step(20)
    assert [c.name for c in result.creates] == [name_of("trainer", 3)]
    assert result.creates[0].body["spec"]["schedulingGroup"] == {"podGroupName": f"{JOB}-gang-0"}
    assert result.ensure == ()


def test_a_pod_group_deleted_by_hand_comes_back_under_its_name() -> None:
    cluster = started()
    del cluster.objects[group(0)]
    assert [m.ref for m in cluster.step(20).ensure] == [group(0)]


def test_a_pass_that_died_before_creating_the_new_gangs_pods_creates_them_in_that_gang() -> None:
    job = with_replica(
        on_scheduler(seed_job()), "trainer", rules=(event_rule("nodeNotReady", RestartScope.ALL),)
    )
    cluster = started(job)
    cluster.nodes = nodes(node("node-a", "False", since=95))
    cluster.apply(cluster.plan(100), 100, stop_after="ensure")
    assert cluster.groups() == [f"{JOB}-gang-0", f"{JOB}-gang-1"]
    again = cluster.step(101)
    assert all(m.ref != group(2) for m in again.ensure)
    assert {c.body["spec"]["schedulingGroup"]["podGroupName"] for c in again.creates} == {f"{JOB}-gang-1"}


@pytest.mark.parametrize(
    ("name", "epoch"),
    [
        (f"{JOB}-gang-0", 0),
        (f"{JOB}-gang-12", 12),
        (f"{JOB}-gang-01", None),
        (f"{JOB}-gang-", None),
        (f"{JOB}-gang-x", None),
        ("other-gang-1", None),
        (f"{JOB}x-gang-1", None),
    ],
)
def test_a_pod_group_name_reads_back_as_its_epoch(name: str, epoch: int | None) -> None:
    assert render_gang.pod_group_epoch(JOB, name) == epoch
    if epoch is not None:
        assert render_gang.pod_group_name(JOB, epoch) == name


def test_explain_with_the_operator_s_settings_and_objects_says_what_its_pass_does() -> None:
    # aitj explain derives the operator's Settings and reads the job's objects as its cache
    # does (aitj.controller.settings): then its next pass is the operator's, gang included.
    cluster = GangCluster(on_scheduler(seed_job()))
    cluster.step(1)  # the gang and the trainers are made; the ConfigMap is then deleted by hand
    configmap = next(ref for ref in cluster.objects if ref.kind is ObjectKind.CONFIGMAP)
    del cluster.objects[configmap]
    pods = [p.view() for p in cluster.pods.values()]
    told = explain(cluster.job, pods, cluster.nodes, at(2), settings=GANG, owned=observed(cluster.objects))
    operator = cluster.plan(2)
    assert [m.ref for m in operator.ensure] == [configmap]
    assert f"create the job's ConfigMap {configmap.name} (missing)" in told.next_pass
    assert [line for line in told.next_pass if line.startswith("create pod")] == [
        f"create pod {c.name} ({c.replica} {c.index}, generation {c.generation})" for c in operator.creates
    ]
    blind = explain(cluster.job, pods, cluster.nodes, at(2))  # without them: no gang, no objects
    assert not any("ConfigMap" in line for line in blind.next_pass)


@pytest.mark.parametrize("held", [WORKLOAD, group(0)], ids=["the Workload", "the first PodGroup"])
def test_a_gang_object_held_by_another_is_tried_again_after_the_status_that_names_it(
    held: ObjectRef,
) -> None:
    # Its create in ``ensure`` would meet the object again and stop the pass before the status
    # write: the condition naming it would never be written.
    cluster = GangCluster(on_scheduler(seed_job()))
    theirs = {"metadata": {"name": held.name, "uid": "theirs"}}
    cluster.objects[held] = theirs
    result = cluster.step(1)
    assert held not in [m.ref for m in result.ensure] and held in [m.ref for m in result.probes]
    assert result.creates == ()  # the pods would join a gang not the job's
    condition = cluster.status["conditions"][-1]
    assert condition["reason"] == "ObjectNotOwned" and held.name in condition["message"]
    assert cluster.objects[held] == theirs
