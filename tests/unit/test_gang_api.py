"""The controller's reading of the native gang API's answers (aitj.controller.gangapi)."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from aitj.controller.gangapi import gang_refused

REJECTED = (
    '{"message":"podgroups.scheduling.k8s.io \\"j-gang-1\\" is forbidden: '
    'PodGroup rejected: Workload \\"j\\" not found"}'
)


def refusal(status: int, body: str) -> ApiException:
    e = ApiException(status=status, reason="Forbidden")
    e.body = body
    return e


def test_a_pod_group_refused_for_its_missing_workload_is_told_from_other_refusals() -> None:
    assert gang_refused(refusal(403, REJECTED))
    assert not gang_refused(refusal(403, '{"message":"podgroups is forbidden: User cannot create"}'))
    assert not gang_refused(refusal(422, REJECTED))
    assert not gang_refused(None) and not gang_refused(ValueError("x"))
