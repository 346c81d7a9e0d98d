"""The client's errors: one exception type per thing a caller can act on.

Pure: ``from_response`` turns an apiserver refusal (its HTTP status and JSON body) into the
typed error, so every mapping is table-tested without a cluster (tests/unit/test_client.py).
Every error's ``str()`` is one sentence, the apiserver's own words where it gave any: the
command line prints it as ``error: <it>`` and exits 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


class AitjError(Exception):
    """AitjError: the base of every error ``aitj.client`` raises."""


class NotConfigured(AitjError):
    """NotConfigured: no kubeconfig, a context it does not have, or no in-cluster credentials."""


class Unreachable(AitjError):
    """Unreachable: the apiserver did not answer (refused, reset, DNS, TLS)."""


class Timeout(AitjError):
    """Timeout: a request past ``request_timeout``, or ``wait`` past its ``timeout``."""


class ApiError(AitjError):
    """ApiError: the apiserver refused a request; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ApiError):
    """NotFound: no such job (or pod, or the CRD is not installed). ``elsewhere``: namespaces
    that do hold a job of that name, when only the namespace was wrong."""

    def __init__(self, message: str, status: int = 404, elsewhere: tuple[str, ...] = ()) -> None:
        super().__init__(message, status)
        self.elsewhere = elsewhere


class Forbidden(ApiError):
    """Forbidden: the caller may not do this (403), or is not who it says (401)."""


class Conflict(ApiError):
    """Conflict: the job already exists, or changed since it was read (a scale's test failed)."""


@dataclass(frozen=True)
class FieldError:
    """FieldError: one cause of a refusal: the field path admission names, and why."""

    path: str
    message: str


class Invalid(ApiError):
    """Invalid: admission refused the object (422); ``fields`` holds each field path and why."""

    def __init__(self, message: str, status: int = 422, fields: tuple[FieldError, ...] = ()) -> None:
        super().__init__(message, status)
        self.fields = fields


class JobEnded(AitjError):
    """JobEnded: ``wait`` saw the job finish in a phase other than the ones waited for."""

    def __init__(self, message: str, phase: str) -> None:
        super().__init__(message)
        self.phase = phase


def _body(body: str | bytes | None) -> dict[str, object]:
    try:
        parsed = json.loads(body or b"")
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def field_errors(body: str | bytes | None) -> tuple[FieldError, ...]:
    """field_errors: the causes of a refusal that name a field (``spec.replicaSpecs.trainer...``)."""
    details = _body(body).get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    return tuple(
        FieldError(str(c["field"]), str(c.get("message") or c.get("reason") or ""))
        for c in causes or []
        if isinstance(c, dict) and c.get("field")
    )


def from_response(what: str, status: int, reason: str, body: str | bytes | None) -> ApiError:
    """from_response: the typed error for a refused request, ``what`` saying what was asked
    (``reading AITrainingJob ns/name``), then the apiserver's message or the HTTP reason."""
    said = _body(body).get("message")
    message = f"{what}: {said or f'{status} {reason}'.strip()}"
    if status == 404:
        return NotFound(message, status)
    if status in (401, 403):
        return Forbidden(message, status)
    if status == 409:
        return Conflict(message, status)
    if status == 422:
        fields = field_errors(body)
        # A JSON patch's failed "test" op is a 422 without causes: the value changed since read.
        if not fields and "testing value" in str(said):
            return Conflict(message, status)
        return Invalid(message, status, fields)
    if status == 504:
        return ApiError(message, status)
    return ApiError(message, status)
