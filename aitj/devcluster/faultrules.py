"""The fault proxy's rules: which requests a fault applies to, pure and unit-tested
(tests/unit/test_faultproxy.py); ``aitj.devcluster.faultproxy`` applies them."""

from __future__ import annotations

import enum
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit


class Fault(enum.Enum):
    """Fault: what a matching rule does to a request."""

    PASS = "pass"  # forward it (after the rule's delay or gate)
    STATUS = "status"  # answer ``status`` without forwarding (429, 409, 500, 503, ...)
    LOST = "lost"  # forward it, then answer ``status`` instead of the apiserver's answer
    DROP = "drop"  # close the connection unanswered, not forwarded
    DROP_AFTER = "drop-after"  # forward it, then close the connection unanswered
    GONE = "gone"  # a watch: 200 and one ERROR event, 410 Expired (the version was compacted)
    STALL = "stall"  # a watch: forwarded, but its events are withheld (kept in ``withheld``)


@dataclass(frozen=True)
class Request:
    """Request: what a rule matches on."""

    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, method: str, target: str) -> Request:
        """of: the request of an HTTP method and request target (path and query)."""
        parts = urlsplit(target)
        return cls(method.upper(), parts.path, dict(parse_qsl(parts.query)))

    @property
    def watch(self) -> bool:
        """watch: a watch request (a stream of events)."""
        return self.query.get("watch") in ("true", "1")

    @property
    def resource_version(self) -> int | None:
        """resource_version: the version a watch starts from (None: none, or not a number)."""
        value = self.query.get("resourceVersion", "")
        return int(value) if value.isdigit() else None


@dataclass
class Rule:
    """Rule: a fault for the requests it matches. ``method`` and ``path`` are regular
    expressions matched in full; ``watch`` True/False limits it to watches / other requests;
    ``below``: only watches from a resourceVersion below it (the versions compacted away);
    ``times``: at most that many requests (None: all); ``probability``: of each match, drawn
    from the proxy's seeded generator. ``delay`` and ``gate`` hold the request first."""

    fault: Fault
    method: str = ".*"
    path: str = ".*"
    watch: bool | None = None
    below: int | None = None
    status: int = 503
    retry_after: int | None = None
    delay: float = 0.0
    gate: threading.Event | None = None
    times: int | None = None
    probability: float = 1.0
    hits: int = 0  # requests it applied to so far


def matches(rule: Rule, req: Request) -> bool:
    """matches: ``req`` is one of the requests ``rule`` is about (its count left aside)."""
    if not re.fullmatch(rule.method, req.method) or not re.fullmatch(rule.path, req.path):
        return False
    if rule.watch is not None and rule.watch != req.watch:
        return False
    if rule.below is not None:
        version = req.resource_version
        return req.watch and version is not None and version < rule.below
    return True


def choose(rules: Sequence[Rule], req: Request, draw: Callable[[], float]) -> Rule | None:
    """choose: the first rule that matches ``req``, has uses left and (for a rule with a
    probability under 1) wins its draw; None: forward it untouched. A draw is made only for
    such a rule, so the sequence of faults is fixed by the seed and the requests."""
    for rule in rules:
        if not matches(rule, req) or (rule.times is not None and rule.hits >= rule.times):
            continue
        if rule.probability >= 1.0 or draw() < rule.probability:
            return rule
    return None


def status_body(code: int, message: str) -> bytes:
    """status_body: a metav1.Status as the apiserver sends one with an error."""
    reasons = {409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError"}
    reason = reasons.get(code, "ServiceUnavailable" if code == 503 else "Unknown")
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return json.dumps(body).encode()


def gone_event(version: int | None) -> bytes:
    """gone_event: the ERROR event the apiserver ends a watch with when its version is too old."""
    status = json.loads(status_body(410, f"too old resource version: {version} (injected)"))
    return json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"
