"""Tenants' rights to AITrainingJobs (manifests/base/aggregated-roles.yaml): the apiserver
aggregates aitj-view into the built-in ``view`` and aitj-edit into ``edit`` and ``admin``, so
a user bound to ``edit`` in a namespace creates, scales and deletes jobs there, and one bound to
``view`` reads them and changes nothing. Asked of the apiserver itself: a create as each user
(impersonation, server-side dry run) and SubjectAccessReviews, what ``kubectl auth can-i`` asks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client

from aitj.core import api
from tests.clusters import KubeCluster
from tests.jobs import seed_variant
from tests.seeds import REPO
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
ROLES = REPO / "manifests" / "base" / "aggregated-roles.yaml"


def can(cluster: KubeCluster, user: str, namespace: str, verb: str, subresource: str = "") -> bool:
    """can: the apiserver's answer to whether ``user`` may ``verb`` aitrainingjobs(/subresource)."""
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            resource_attributes=client.V1ResourceAttributes(
                namespace=namespace, verb=verb, group=api.GROUP, resource=api.PLURAL, subresource=subresource
            ),
        )
    )
    answer = client.AuthorizationV1Api(cluster.api).create_subject_access_review(review)
    return bool(answer.status and answer.status.allowed)


@pytest.fixture
def tenants(cluster: KubeCluster, crd: None, namespace: str) -> Iterator[tuple[str, str]]:
    """tenants: (editor, viewer), users bound to the built-in edit and view in ``namespace``,
    once the roles are applied and aggregated (the controller manager copies the rules)."""
    cluster.kubectl("apply", "--server-side", "-f", str(ROLES))
    editor, viewer = f"editor-{uuid.uuid4().hex[:6]}", f"viewer-{uuid.uuid4().hex[:6]}"
    for user, role in ((editor, "edit"), (viewer, "view")):
        cluster.kubectl("create", "rolebinding", user, "--clusterrole", role, "--user", user, "-n", namespace)
    wait_for(lambda: can(cluster, editor, namespace, "create"), 30, "aitj-edit aggregated into edit")
    wait_for(lambda: can(cluster, viewer, namespace, "list"), 30, "aitj-view aggregated into view")
    yield editor, viewer


def test_a_user_with_edit_creates_scales_and_deletes_jobs_and_one_with_view_only_reads_them(
    cluster: KubeCluster, namespace: str, tenants: tuple[str, str]
) -> None:
    editor, viewer = tenants
    job = yaml.safe_dump(seed_variant("tenant"))
    as_editor = cluster.kubectl(
        "create", "-f", "-", "-n", namespace, f"--as={editor}", "--dry-run=server", input=job, check=False
    )
    assert as_editor.returncode == 0, as_editor.stderr
    as_viewer = cluster.kubectl(
        "create", "-f", "-", "-n", namespace, f"--as={viewer}", "--dry-run=server", input=job, check=False
    )
    assert as_viewer.returncode != 0 and "forbidden" in as_viewer.stderr, as_viewer.stderr

    for verb in ("update", "patch", "delete", "deletecollection"):
        assert can(cluster, editor, namespace, verb) and not can(cluster, viewer, namespace, verb), verb
    assert can(cluster, editor, namespace, "update", "scale")  # kubectl scale aitj/NAME
    assert not can(cluster, viewer, namespace, "update", "scale")
    for verb in ("get", "list", "watch"):
        assert can(cluster, viewer, namespace, verb) and can(cluster, viewer, namespace, verb, "status"), verb
    # Only the operator writes a job's status; nobody's rights reach another namespace.
    assert not can(cluster, editor, namespace, "patch", "status")
    assert not can(cluster, editor, "default", "create") and not can(cluster, viewer, "default", "get")
