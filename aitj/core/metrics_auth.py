"""Who may read the operator's /metrics: the decisions, pure (the HTTP server and the API calls
are ``aitj.controller.metrics_server``'s).

As controller-runtime's metrics filter does (``WithAuthenticationAndAuthorization``): the
request's bearer token is checked by a TokenReview, then the user it names by a
SubjectAccessReview for the non-resource URL ``/metrics``, verb ``get``. So Prometheus reads it
with its ServiceAccount's token and a ClusterRole granting ``nonResourceURLs: [/metrics]``
``get`` (manifests/base/metrics-reader-role.yaml); anyone else is refused.

- no bearer token: 401, and no API call (a flood of anonymous requests costs the apiserver
  nothing);
- a token the apiserver does not authenticate: 401;
- an authenticated user not allowed ``get`` on ``/metrics``: 403;
- else 200.

Layer: core; imports nothing outside it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

METRICS_PATH = "/metrics"
METRICS_VERB = "get"


class Verdict(enum.IntEnum):
    """Verdict: the HTTP status a scrape is answered with."""

    ALLOWED = 200
    UNAUTHENTICATED = 401
    FORBIDDEN = 403


def bearer(header: str | None) -> str | None:
    """bearer: the token of an ``Authorization: Bearer <token>`` header, else None (another
    scheme, or none)."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def token_review(token: str) -> dict[str, Any]:
    """token_review: the TokenReview that asks the apiserver whose ``token`` is."""
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}


def access_review(review_status: Mapping[str, Any]) -> dict[str, Any] | None:
    """access_review: the SubjectAccessReview asking whether the user a TokenReview's status
    names may ``get`` ``/metrics``; None when the token was not authenticated."""
    if not review_status.get("authenticated"):
        return None
    user = review_status.get("user") or {}
    spec: dict[str, Any] = {
        "user": user.get("username", ""),
        "groups": list(user.get("groups") or ()),
        "nonResourceAttributes": {"path": METRICS_PATH, "verb": METRICS_VERB},
    }
    if user.get("uid"):
        spec["uid"] = user["uid"]
    if user.get("extra"):
        spec["extra"] = {key: list(values) for key, values in user["extra"].items()}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def verdict(review_status: Mapping[str, Any] | None, access_status: Mapping[str, Any] | None) -> Verdict:
    """verdict: the answer to a scrape from the TokenReview's status (None: no token sent) and
    the SubjectAccessReview's (None: not asked)."""
    if review_status is None or not review_status.get("authenticated"):
        return Verdict.UNAUTHENTICATED
    if access_status is None or not access_status.get("allowed") or access_status.get("denied"):
        return Verdict.FORBIDDEN
    return Verdict.ALLOWED
