"""Which version of the native gang API the operator speaks (aitj.core.render.gang,
``served_version``: found at start by discovery, aitj.controller.gangapi), and how each
version's objects look (docs/gang.md)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pytest

from aitj.core.planner.types import Settings
from aitj.core.render import gang
from aitj.devcluster.versions import KUBERNETES_RELEASES, kubernetes_release
from tests.unit.builders import seed_job

BOTH = {"workloads", "workloads/status", "podgroups", "podgroups/status"}


@pytest.mark.parametrize(
    ("listed", "chosen"),
    [
        ({"v1beta1": BOTH}, "v1beta1"),  # Kubernetes 1.37
        ({"v1alpha2": BOTH}, "v1alpha2"),  # 1.36
        ({"v1beta1": BOTH, "v1alpha2": BOTH}, "v1beta1"),  # both served: the newest
        ({}, None),  # neither (1.35, or the feature gate off)
        ({"v1beta1": set(), "v1alpha2": set()}, None),  # the group version served, empty
        ({"v1beta1": {"workloads"}, "v1alpha2": BOTH}, "v1alpha2"),  # one kind alone is not enough
        ({"v1alpha1": {"workloads"}}, None),  # 1.35's v1alpha1: another design, not used
        ({"v1beta1": {"podgroups"}}, None),
    ],
)
def test_the_newest_version_serving_both_kinds_is_chosen(
    listed: Mapping[str, Collection[str]], chosen: str | None
) -> None:
    assert gang.served_version(listed) == chosen


def test_the_planner_defaults_to_the_newest_version() -> None:
    assert Settings().gang_version == gang.NEWEST == gang.VERSIONS[0] == "v1beta1"


def test_v1beta1_objects_name_the_template_by_workload_ref() -> None:
    job = seed_job()
    workload = gang.render_workload(job, 3, "v1beta1")
    assert workload["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["spec"]["podGroupTemplates"] == [
        {"name": gang.TEMPLATE, "schedulingPolicy": {"gang": {"minCount": 3}}}
    ]
    group = gang.render_pod_group(job, 2, 3, "v1beta1")
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert group["spec"] == {
        "workloadRef": {"workloadName": job.name, "templateName": gang.TEMPLATE},
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }


def test_v1alpha2_objects_name_the_template_one_level_deeper() -> None:
    job = seed_job()
    assert gang.render_workload(job, 3, "v1alpha2")["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    group = gang.render_pod_group(job, 0, 3, "v1alpha2")
    assert group["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert group["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": job.name, "podGroupTemplateName": gang.TEMPLATE}
        },
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }


@pytest.mark.parametrize(
    ("wanted", "release"),
    [
        (None, "v1.37.2"),
        ("", "v1.37.2"),
        ("1.37", "v1.37.2"),
        ("v1.36", "v1.36.3"),
        ("1.35.4", "v1.35.4"),
        ("v1.36.3", "v1.36.3"),
    ],
)
def test_the_local_control_plane_release_is_chosen_by_minor_or_release(
    wanted: str | None, release: str
) -> None:
    assert kubernetes_release(wanted) == release


@pytest.mark.parametrize("wanted", ["1.34", "v1.36.1", "latest", "1"])
def test_a_release_the_local_control_plane_does_not_build_is_refused_with_the_choices(wanted: str) -> None:
    with pytest.raises(ValueError, match=r"runs Kubernetes 1\.35, 1\.36, 1\.37"):
        kubernetes_release(wanted)
    assert KUBERNETES_RELEASES[-1] == "v1.37.2"
