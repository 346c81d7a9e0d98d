"""The Volcano PodGroup (issue 16, item 2): where Volcano's PodGroup kind is served and a job's
pods use ``schedulerName: volcano``, the job owns one PodGroup (minMember: the sum of
minReplicas) and its pods name it; restarts and scaling keep that one group; anywhere else
nothing changes."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest
from kubernetes.client import ApiClient

from aitj.controller.cache import OWNED, InformerCache, owned_kind
from aitj.core.api import RestartScope
from aitj.core.planner import ObjectKind, ObjectRef, Plan, Settings, plan
from aitj.core.render import Placement, PodIdentity, render_pod
from aitj.core.render.volcano import (
    ANNOTATION_GROUP_NAME,
    ANNOTATION_QUEUE,
    format_quantity,
    parse_quantity,
    render_podgroup,
)
from tests.unit.builders import (
    JOB,
    KEYS,
    UID,
    Cluster,
    Pod,
    at,
    event_rule,
    name_of,
    nodes,
    observed,
    seed_job,
    with_replica,
)

SERVED = Settings({"normal": "aitj-normal"}, volcano_podgroups=True)
PODGROUP = ObjectRef(ObjectKind.VOLCANO_PODGROUP, JOB)


def volcano_template(cpu: str = "1", memory: str = "2Gi") -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    return {"spec": {"schedulerName": "volcano", "containers": [{"name": "aitj-0", "resources": resources}]}}


def volcano_job(**changes: Any) -> Any:
    """volcano_job: the seed job with both replicas scheduled by Volcano (trainer minReplicas 1
    of 3, launcher 1)."""
    job = with_replica(seed_job(**changes), "trainer", template=volcano_template())
    return with_replica(job, "launcher", template=volcano_template("500m", "1Gi"))


class VolcanoCluster(Cluster):
    """VolcanoCluster: the simulated cluster of an operator started with ``settings``."""

    def __init__(self, job: Any, pods: Any = (), settings: Settings = SERVED) -> None:
        super().__init__(job, pods)
        self.settings = settings

    def plan(self, now: float) -> Plan:
        owned = observed(self.objects)
        pods = [p.view() for p in self.pods.values()]
        return plan(self.job, pods, self.nodes, at(now), owned=owned, keys=KEYS, settings=self.settings)


def group_of(body: Any) -> str | None:
    return dict(body["metadata"].get("annotations") or {}).get(ANNOTATION_GROUP_NAME)


def running() -> VolcanoCluster:
    pods = [Pod("trainer", i).running() for i in range(3)] + [Pod("launcher", 0).running(2)]
    cluster = VolcanoCluster(volcano_job(), pods)
    cluster.step(10)
    assert cluster.status["phase"] == "Running" and PODGROUP in cluster.objects
    return cluster


def test_a_volcano_job_gets_one_podgroup_before_its_pods_and_its_pods_name_it() -> None:
    result = VolcanoCluster(volcano_job()).step(0)
    [group] = [m for m in result.ensure if m.kind is ObjectKind.VOLCANO_PODGROUP]
    assert group.body["apiVersion"] == "scheduling.volcano.sh/v1beta1" and group.body["kind"] == "PodGroup"
    assert group.body["spec"] == {
        # Trainer minReplicas 1: the launcher, created once the trainers run, is not counted.
        "minMember": 1,
        "minResources": {"cpu": "1", "memory": str(2 * 2**30)},  # one trainer's requests
        "queue": "default",
        "priorityClassName": "aitj-normal",
    }
    [owner] = group.body["metadata"]["ownerReferences"]
    assert owner["uid"] == UID and owner["controller"] is True
    assert group.body["metadata"]["labels"] == {"aitj.kongming.cce.baiudbce.com/job-name": JOB}
    assert result.creates and all(group_of(c.body) == JOB for c in result.creates)


def test_min_member_is_the_sum_of_min_replicas_of_the_replicas_volcano_schedules_that_start_together() -> (
    None
):
    job = with_replica(volcano_job(), "trainer", min_replicas=2)
    assert render_podgroup(job, None)["spec"]["minMember"] == 2  # the launcher waits for the trainers
    # A job of one master replica: its pods start at once, so they are the gang.
    alone = dataclasses.replace(
        job, spec=dataclasses.replace(job.spec, replicas=(job.spec.replica("launcher"),))
    )
    assert render_podgroup(alone, None)["spec"]["minMember"] == 1
    # A replica left to the default scheduler is not a member: the gang would wait for it forever.
    job = with_replica(job, "launcher", template={"spec": {"containers": [{"name": "aitj-0"}]}})
    result = VolcanoCluster(job).step(0)
    [group] = [m for m in result.ensure if m.kind is ObjectKind.VOLCANO_PODGROUP]
    assert group.body["spec"]["minMember"] == 2
    assert {c.replica: group_of(c.body) for c in result.creates} == {"trainer": JOB}
    launcher = job.spec.replica("launcher")
    body = render_pod(
        job, PodIdentity(launcher, 0, 0, "l"), {}, finalizer="f", placement=Placement(volcano_pod_group=JOB)
    )
    assert group_of(body) is None


def test_the_queue_comes_from_the_jobs_annotation_else_from_a_template() -> None:
    job = volcano_job()
    template = volcano_template()
    template["metadata"] = {"annotations": {ANNOTATION_QUEUE: "from-template"}}
    job = with_replica(job, "trainer", template=template)
    assert render_podgroup(job, None)["spec"]["queue"] == "from-template"
    job = dataclasses.replace(job, annotations={ANNOTATION_QUEUE: "from-job"})
    assert render_podgroup(job, None)["spec"]["queue"] == "from-job"


def test_a_podgroup_in_place_is_not_planned_again_and_one_deleted_by_hand_comes_back() -> None:
    cluster = running()
    assert not [m for m in cluster.step(20).ensure if m.kind is ObjectKind.VOLCANO_PODGROUP]
    del cluster.objects[PODGROUP]
    assert [m.ref for m in cluster.step(30).ensure] == [PODGROUP]


@pytest.mark.parametrize("scope", [RestartScope.ALL, RestartScope.POD])
def test_a_restart_keeps_the_one_podgroup_and_the_new_pods_join_it(scope: RestartScope) -> None:
    # All: every pod is new, none of the group runs, so Volcano holds them until minMember fit
    # together (the gang re-forms). Pod: the others still run and count toward minMember, so
    # the replacement is placed alone (it never waits for a new gang).
    cluster = running()
    rules = (event_rule("nodeNotReady,PodForceDeleted", scope),)
    cluster.job = with_replica(cluster.job, "trainer", rules=rules)
    cluster.pods[name_of("trainer", 1)].deleted(20, 0)
    result = cluster.step(20)
    expected = 3 if scope is RestartScope.ALL else 1  # All: the launcher follows once they run
    assert len(result.creates) == expected
    assert all(group_of(c.body) == JOB for c in result.creates)
    assert not [m for m in result.ensure if m.kind is ObjectKind.VOLCANO_PODGROUP]
    assert list(cluster.objects).count(PODGROUP) == 1


def test_scale_out_pods_join_the_gangs_accounting_without_raising_min_member() -> None:
    cluster = running()
    before = cluster.objects[PODGROUP]
    job = with_replica(cluster.job, "trainer", replicas=5)
    cluster.job = dataclasses.replace(job, generation=job.generation + 1)
    result = cluster.step(20)
    assert [c.index for c in result.creates] == [3, 4]
    assert all(group_of(c.body) == JOB for c in result.creates)
    assert result.podgroup is None
    assert cluster.objects[PODGROUP] is before and before["spec"]["minMember"] == 1


def test_the_status_records_the_spec_written_and_a_pass_that_changes_nothing_rewrites_nothing() -> None:
    cluster = running()
    assert cluster.status["volcanoPodGroup"] == cluster.objects[PODGROUP]["spec"]
    assert [r.podgroup for r in cluster.history] == [None]
    assert cluster.step(20).podgroup is None


def test_an_edit_of_min_replicas_rewrites_the_podgroup() -> None:
    cluster = running()
    job = with_replica(cluster.job, "trainer", min_replicas=3)
    cluster.job = dataclasses.replace(job, generation=job.generation + 1)
    result = cluster.step(20)
    assert result.podgroup is not None and result.podgroup.body["spec"]["minMember"] == 3
    assert cluster.objects[PODGROUP]["spec"]["minMember"] == 3
    assert cluster.status["volcanoPodGroup"]["minMember"] == 3
    assert cluster.step(30).podgroup is None


def test_a_podgroup_found_without_a_record_is_rewritten_once() -> None:
    # One made by an operator that did not stamp what it wrote (an upgrade): its content is
    # not known to be the wanted one, whatever the status says.
    cluster = running()
    body = dict(cluster.objects[PODGROUP])
    body["metadata"] = {**body["metadata"], "annotations": {}}
    cluster.objects[PODGROUP] = body
    assert cluster.step(20).podgroup is not None and cluster.step(30).podgroup is None


@pytest.mark.parametrize(
    ("settings", "job"),
    [
        pytest.param(Settings(), volcano_job(), id="Volcano's PodGroup not served"),
        pytest.param(SERVED, seed_job(), id="served, but no pod uses Volcano"),
    ],
)
def test_without_a_gang_scheduler_nothing_changes(settings: Settings, job: Any) -> None:
    result = plan(job, [], nodes(), at(0), owned={}, keys=KEYS, settings=settings)
    assert [m.kind for m in result.ensure][:3] == [
        ObjectKind.SERVICE,
        ObjectKind.SECRET,
        ObjectKind.CONFIGMAP,
    ]
    assert not {ObjectKind.VOLCANO_PODGROUP} & {m.kind for m in result.ensure}
    assert result.creates and all(group_of(c.body) is None for c in result.creates)
    plain_settings = dataclasses.replace(settings, volcano_podgroups=False)
    plain = plan(job, [], nodes(), at(0), owned={}, keys=KEYS, settings=plain_settings)
    assert [c.body for c in result.creates] == [c.body for c in plain.creates]


def test_a_finished_job_plans_no_podgroup() -> None:
    cluster = running()
    del cluster.objects[PODGROUP]
    cluster.pods[name_of("launcher", 0)].exited(0)
    result = cluster.step(20)
    assert result.outcome is not None and result.ensure == ()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1.5", Fraction(3, 2)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1k", Fraction(1000)),
        ("1e3", Fraction(1000)),
        ("1E", Fraction(10**18)),
        (".5", Fraction(1, 2)),
        ("lots", None),
        ("", None),
    ],
)
def test_quantities_parse_exactly(text: str, value: Fraction | None) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [(Fraction(3), "3"), (Fraction(3, 2), "1500m"), (Fraction(1, 3000), "1m"), (Fraction(2**31), str(2**31))],
)
def test_quantities_format_whole_or_in_thousandths_rounded_up(value: Fraction, text: str) -> None:
    assert format_quantity(value) == text


@pytest.mark.parametrize(
    ("served", "podgroups"),
    [
        pytest.param(frozenset(), [], id="not served: not watched"),
        pytest.param(
            frozenset({ObjectKind.VOLCANO_PODGROUP}),
            [("podgroups.scheduling.volcano.sh", "/apis/scheduling.volcano.sh/v1beta1/podgroups")],
            id="served: watched by name only",
        ),
    ],
)
def test_the_cache_watches_volcano_podgroups_only_where_they_are_served(
    served: frozenset[ObjectKind], podgroups: list[tuple[str, str]]
) -> None:
    cache = InformerCache()
    informers = cache.informers_for(ApiClient(), [], served)
    found = [(i.kind.name, i.kind.path(None)) for i in informers if i.kind.plural == "podgroups"]
    assert found == podgroups
    assert all(i.kind.metadata_only for i in informers if i.kind.plural == "podgroups")
    assert OWNED[owned_kind(ObjectKind.VOLCANO_PODGROUP).name] is ObjectKind.VOLCANO_PODGROUP
