"""The job's objects other than pods (aitj.core.planner.resources): the planner sees, through
``owned``, which of the Service, ssh Secret and discovery ConfigMap exist, and plans the
missing ones, rendered; the Service goes with cleanPodPolicy All. And the PodDisruptionBudgets,
one per replica type, kept in step with the pods they protect."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aitj.core import naming
from aitj.core.api import LABEL_JOB, LABEL_REPLICA, CleanPodPolicy
from aitj.core.planner import ObjectKind, ObjectRef, Settings, plan
from aitj.core.planner.resources import (
    configmap_ref,
    needs_service,
    needs_ssh_keys,
    secret_ref,
    service_ref,
)
from aitj.core.planner.types import ObjectState, Owned
from aitj.core.render import ANNOTATION_MAX_UNAVAILABLE
from tests.unit.builders import (
    JOB,
    KEYS,
    Cluster,
    Pod,
    at,
    name_of,
    nodes,
    owned,
    running_seed,
    seed_job,
    views,
    with_replica,
    with_status,
)

SERVICE = ObjectRef(ObjectKind.SERVICE, JOB)
SECRET = ObjectRef(ObjectKind.SECRET, f"{JOB}-ssh")
CONFIGMAP = ObjectRef(ObjectKind.CONFIGMAP, f"{JOB}-discovery")
ACCESS = tuple(
    ObjectRef(kind, f"{JOB}-launcher")
    for kind in (ObjectKind.SERVICE_ACCOUNT, ObjectKind.ROLE, ObjectKind.ROLE_BINDING)
)
BUDGETS = frozenset(
    {ObjectRef(ObjectKind.PDB, f"{JOB}-trainer"), ObjectRef(ObjectKind.PDB, f"{JOB}-launcher")}
)
ALL = frozenset({SERVICE, SECRET, CONFIGMAP, *ACCESS}) | BUDGETS


def running() -> Cluster:
    cluster = Cluster(seed_job())
    cluster.step(0)  # its objects first, as the operator makes them
    cluster.pods = {p.name: p for p in running_seed()}
    cluster.step(10)
    assert cluster.status["phase"] == "Running"
    return cluster


def test_a_new_job_gets_its_service_secret_and_configmap_before_its_pods() -> None:
    result = plan(seed_job(), [], nodes(), at(0), owned={}, keys=KEYS)
    assert [m.ref for m in result.ensure] == [SERVICE, SECRET, CONFIGMAP, *ACCESS]
    secret = result.ensure[1].body
    assert secret["metadata"]["name"] == naming.ssh_secret_name(JOB) and "private" not in repr(result)
    assert result.creates  # and the pods, in the same pass


def test_a_service_deleted_by_hand_is_planned_again() -> None:
    cluster = running()
    assert set(cluster.objects) == ALL
    del cluster.objects[SERVICE]
    result = cluster.step(20)
    assert [m.ref for m in result.ensure] == [SERVICE]
    assert SERVICE in cluster.objects and cluster.step(30).ensure == ()


def test_a_configmap_deleted_by_hand_comes_back_with_the_current_hosts() -> None:
    cluster = running()
    del cluster.objects[CONFIGMAP]
    [configmap] = cluster.step(20).ensure
    assert configmap.body["data"]["hosts"] == "".join(
        f"{naming.pod_host(JOB, name)}:1\n" for name in cluster.status["discoveryHosts"]
    )


def test_objects_in_place_are_not_planned() -> None:
    cluster = running()
    assert cluster.step(20).ensure == ()


def test_a_missing_secret_without_a_key_pair_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="no key pair"):
        plan(seed_job(), [], nodes(), at(0), owned=owned(seed_job(), SERVICE, CONFIGMAP))


@pytest.mark.parametrize(
    ("ssh", "refs", "finished", "wanted"),
    [
        pytest.param(True, frozenset(), False, True, id="a live ssh job without its Secret needs keys"),
        pytest.param(True, ALL, False, False, id="one with its Secret does not"),
        pytest.param(False, frozenset(), False, False, id="a job without plugin.ssh does not"),
        pytest.param(True, frozenset(), True, False, id="a finished job does not"),
        pytest.param(True, "held", False, True, id="one whose Secret is held by another does (to try again)"),
        pytest.param(True, None, False, False, id="nor one whose objects are not observed"),
    ],
)
def test_needs_ssh_keys(
    ssh: bool, refs: frozenset[ObjectRef] | str | None, finished: bool, wanted: bool
) -> None:
    job = seed_job(ssh=ssh, status={"phase": "Succeeded"} if finished else None)
    if refs == "held":
        observed: Owned | None = {SECRET: ObjectState(uid="u", controller="someone-else")}
    else:
        observed = None if refs is None else owned(job, *refs)
    assert needs_ssh_keys(job, observed, ()) is wanted


def test_without_plugins_no_object_is_planned_not_even_the_service() -> None:
    result = plan(seed_job(ssh=False, discovery=False), [], nodes(), at(0), owned={})
    assert [m.ref for m in result.ensure] == list(ACCESS)  # only the launcher's access


def test_the_launcher_runs_as_the_jobs_account_which_may_read_pods_and_the_job() -> None:
    # The seed's job-barrier init container lists the job's pods with the pod's own account.
    result = plan(
        seed_job(),
        [Pod("trainer", i).running().view() for i in range(3)],
        nodes(),
        at(5),
        owned={},
        keys=KEYS,
    )
    (launcher,) = [c for c in result.creates if c.replica == "launcher"]
    assert launcher.body["spec"]["serviceAccountName"] == f"{JOB}-launcher"
    role, binding = (m.body for m in result.ensure if m.kind in (ObjectKind.ROLE, ObjectKind.ROLE_BINDING))
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": ["kongming.cce.baiudbce.com"], "resources": ["aitrainingjobs"], "verbs": ["get"]},
    ]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": f"{JOB}-launcher", "namespace": "default"}
    ]
    assert binding["roleRef"]["name"] == f"{JOB}-launcher"


def test_a_launcher_template_that_names_its_account_keeps_it_and_gets_no_access_objects() -> None:
    job = seed_job()
    job = with_replica(
        job,
        "launcher",
        template={
            **job.spec.replica("launcher").template,
            "spec": {**job.spec.replica("launcher").template["spec"], "serviceAccountName": "mine"},
        },
    )
    result = plan(
        job,
        [Pod("trainer", i).running().view() for i in range(3)],
        nodes(),
        at(5),
        owned={},
        keys=KEYS,
    )
    assert not {m.ref for m in result.ensure} & set(ACCESS)
    assert [c.body["spec"]["serviceAccountName"] for c in result.creates] == ["mine"]


def test_workers_keep_the_namespaces_default_account() -> None:
    result = plan(seed_job(), [], nodes(), at(0), owned={}, keys=KEYS)
    assert {c.replica for c in result.creates} == {"trainer"}
    assert all("serviceAccountName" not in c.body["spec"] for c in result.creates)


@pytest.mark.parametrize(
    ("ssh", "discovery", "wanted"),
    [
        pytest.param(True, False, True, id="ssh reaches peers by their DNS names"),
        pytest.param(False, True, True, id="the discovery host list names them"),
        pytest.param(False, False, False, id="nothing else resolves them"),
    ],
)
def test_the_service_is_kept_only_where_a_plugin_uses_the_dns_names(
    ssh: bool, discovery: bool, wanted: bool
) -> None:
    assert needs_service(seed_job(ssh=ssh, discovery=discovery)) is wanted


def test_not_observed_plans_no_objects() -> None:
    assert plan(seed_job(), [], nodes(), at(0)).ensure == ()


@pytest.mark.parametrize(
    ("policy", "refs", "removes"),
    [
        pytest.param(
            CleanPodPolicy.ALL, ALL, {SERVICE} | BUDGETS, id="cleanPodPolicy All removes the Service"
        ),
        pytest.param(CleanPodPolicy.ALL, frozenset(), set(), id="not again once it is gone"),
        pytest.param(CleanPodPolicy.RUNNING, ALL, BUDGETS, id="cleanPodPolicy Running keeps it"),
    ],
)
def test_a_finished_job_gets_nothing_new_and_its_cleanup(
    policy: CleanPodPolicy, refs: frozenset[ObjectRef], removes: set[ObjectRef]
) -> None:
    job = with_status(seed_job(clean_pod_policy=policy), {"phase": "Succeeded"})
    result = plan(job, views(running_seed()), nodes(), at(0), owned=owned(job, *refs))
    assert result.ensure == () and set(result.removes) == removes


def test_the_refs_are_named_as_naming_says() -> None:
    job = seed_job()
    assert (service_ref(job), secret_ref(job), configmap_ref(job)) == (SERVICE, SECRET, CONFIGMAP)


def test_the_operator_s_priority_class_reaches_the_rendered_pod() -> None:
    settings = Settings({"normal": "batch-normal"})
    result = plan(seed_job(), [], nodes(), at(0), settings=settings)
    assert {c.body["spec"].get("priorityClassName") for c in result.creates} == {"batch-normal"}
    assert all(
        "priorityClassName" not in c.body["spec"] for c in plan(seed_job(), [], nodes(), at(0)).creates
    )


def budget(cluster: Cluster, replica: str) -> dict[str, Any]:
    body: dict[str, Any] = dict(cluster.objects[ObjectRef(ObjectKind.PDB, f"{JOB}-{replica}")])
    return body


def test_each_replica_type_gets_a_budget_that_lets_one_pod_at_a_time_go() -> None:
    cluster = running()
    trainer = budget(cluster, "trainer")
    assert trainer["spec"] == {
        "minAvailable": 2,
        "selector": {"matchLabels": {LABEL_JOB: JOB, LABEL_REPLICA: "trainer"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
    assert trainer["metadata"]["ownerReferences"][0]["kind"] == "AITrainingJob"
    assert budget(cluster, "launcher")["spec"]["minAvailable"] == 0
    assert cluster.status["disruptionBudgets"] == {"trainer": 2, "launcher": 0}
    assert cluster.step(20).budgets == ()  # written once, not every pass


def test_a_budget_follows_the_pods_it_protects_when_an_index_fails_for_good() -> None:
    cluster = running()
    cluster.pods[name_of("trainer", 0)].exited(1)  # no trainer rule names exit code 1: it stands
    result = cluster.step(101)
    assert [(m.name, m.body["spec"]["minAvailable"]) for m in result.budgets] == [(f"{JOB}-trainer", 1)]


@pytest.mark.parametrize(
    ("value", "trainer"),
    [
        pytest.param("2", 1, id="an integer changes how many pods may go at once"),
        pytest.param("0", 3, id="0 lets no voluntary eviction take a pod"),
        pytest.param("two", 2, id="anything else is the default 1"),
    ],
)
def test_the_max_unavailable_annotation_changes_the_budgets(value: str, trainer: int) -> None:
    job = dataclasses.replace(seed_job(), annotations={ANNOTATION_MAX_UNAVAILABLE: value})
    result = plan(job, views(running_seed()), nodes(), at(10), owned={}, keys=KEYS)
    assert {m.name: m.body["spec"]["minAvailable"] for m in result.budgets}[f"{JOB}-trainer"] == trainer


def test_a_job_that_opts_out_has_no_budgets_and_loses_those_it_had() -> None:
    cluster = running()
    cluster.job = dataclasses.replace(cluster.job, annotations={ANNOTATION_MAX_UNAVAILABLE: "none"})
    result = cluster.step(20)
    assert set(result.removes) == BUDGETS and result.budgets == ()
    assert "disruptionBudgets" not in cluster.status


def test_a_finished_job_removes_its_budgets() -> None:
    cluster = running()
    cluster.pods[name_of("launcher", 0)].exited(0)
    result = cluster.step(200)
    assert result.outcome is not None and set(result.removes) >= BUDGETS


def test_after_an_operator_start_a_job_with_pods_of_its_own_needs_no_key_pair() -> None:
    # Secrets are not watched: after a start the cache knows no job's Secret. A job with a pod
    # of its own got its Secret (pods come after the ensure step, which stops at one held by
    # another), so no key pair (about 118 ms each) is made and no Secret is planned for it.
    job = seed_job()
    pods = [p.view() for p in running_seed()]
    assert not needs_ssh_keys(job, owned(job), pods)
    result = plan(job, pods, nodes(), at(5), owned=owned(job), keys=None)  # no ValueError
    assert secret_ref(job) not in [m.ref for m in result.ensure + result.probes]


def test_a_pod_that_only_carries_the_job_s_labels_does_not_stand_for_its_secret() -> None:
    job = seed_job()
    bare = Pod("trainer", 0).running()
    bare.raw["metadata"]["ownerReferences"] = []  # made by someone else: not the job's pod
    assert needs_ssh_keys(job, owned(job), [bare.view()])
