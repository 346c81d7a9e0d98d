"""Who may read /metrics (aitj.core.metrics_auth): the bearer token, the two reviews asked, and
the answer, as tables. The real reviews against an apiserver: tests/e2e/test_metrics_auth.py."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core.metrics_auth import Verdict, access_review, bearer, token_review, verdict

PROMETHEUS = {
    "authenticated": True,
    "user": {
        "username": "system:serviceaccount:monitoring:prometheus-k8s",
        "uid": "u-1",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
    },
}


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param("Bearer abc", "abc", id="a bearer token"),
        pytest.param("bearer  abc ", "abc", id="the scheme in any case, spaces around"),
        pytest.param(None, None, id="no header"),
        pytest.param("", None, id="an empty header"),
        pytest.param("Bearer ", None, id="a scheme with no token"),
        pytest.param("Basic dXNlcjpwYXNz", None, id="basic auth is no token"),
        pytest.param("abc", None, id="a bare value is no token"),
    ],
)
def test_the_token_is_the_bearer_one(header: str | None, token: str | None) -> None:
    assert bearer(header) == token


def test_the_token_review_carries_the_token() -> None:
    assert token_review("abc") == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "abc"},
    }


def test_the_access_review_asks_for_get_on_metrics_as_the_reviewed_user() -> None:
    assert access_review(PROMETHEUS) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:monitoring:prometheus-k8s",
            "uid": "u-1",
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"authenticated": False}, id="not authenticated"),
        pytest.param({}, id="no answer"),
    ],
)
def test_no_access_review_for_a_token_not_authenticated(status: dict[str, Any]) -> None:
    assert access_review(status) is None


@pytest.mark.parametrize(
    ("review", "access", "expected"),
    [
        pytest.param(None, None, Verdict.UNAUTHENTICATED, id="no token: 401"),
        pytest.param({"authenticated": False}, None, Verdict.UNAUTHENTICATED, id="a token not known: 401"),
        pytest.param(PROMETHEUS, {"allowed": False}, Verdict.FORBIDDEN, id="a user not allowed: 403"),
        pytest.param(PROMETHEUS, None, Verdict.FORBIDDEN, id="a user not asked about: 403"),
        pytest.param(
            PROMETHEUS, {"allowed": True, "denied": True}, Verdict.FORBIDDEN, id="an explicit deny wins: 403"
        ),
        pytest.param(PROMETHEUS, {"allowed": True}, Verdict.ALLOWED, id="a user allowed get /metrics: 200"),
    ],
)
def test_the_verdict(review: dict[str, Any] | None, access: dict[str, Any] | None, expected: Verdict) -> None:
    assert verdict(review, access) is expected
