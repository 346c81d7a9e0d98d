"""The fault proxy's rules as pure code: which rule applies to which request (method and path
matched in full, watches only or not, versions below a compaction floor), how often (a count,
a seeded probability), and what the proxy answers with (the apiserver's own shapes)."""

from __future__ import annotations

import json
import random

import pytest

from aitj.devcluster.faultrules import Fault, Request, Rule, choose, gone_event, matches, status_body

PODS_WATCH = Request.of("GET", "/api/v1/pods?watch=true&resourceVersion=120&labelSelector=x")
PODS_LIST = Request.of("GET", "/api/v1/pods?limit=500")
CREATE = Request.of("post", "/api/v1/namespaces/t-1/pods")
STATUS = Request.of("PATCH", "/apis/kongming.cce.baiudbce.com/v1/namespaces/t-1/aitrainingjobs/j/status")


def never() -> float:
    raise AssertionError("no draw for a rule without a probability")


def test_a_request_is_read_off_its_method_and_target() -> None:
    assert (CREATE.method, CREATE.path, CREATE.watch) == ("POST", "/api/v1/namespaces/t-1/pods", False)
    assert (PODS_WATCH.watch, PODS_WATCH.resource_version) == (True, 120)
    assert PODS_LIST.resource_version is None
    assert Request.of("GET", "/api/v1/pods?watch=1").watch


@pytest.mark.parametrize(
    ("rule", "request_", "hit"),
    [
        pytest.param(Rule(Fault.STATUS), CREATE, True, id="a rule with no limits matches everything"),
        pytest.param(
            Rule(Fault.STATUS, "POST", "/api/v1/namespaces/[^/]+/pods"), CREATE, True, id="method and path"
        ),
        pytest.param(
            Rule(Fault.STATUS, "GET", "/api/v1/namespaces/[^/]+/pods"), CREATE, False, id="another method"
        ),
        pytest.param(Rule(Fault.STATUS, path="/api/v1/namespaces/t-1"), CREATE, False, id="the path in full"),
        pytest.param(Rule(Fault.STATUS, path=".*/status"), STATUS, True, id="a status subresource"),
        pytest.param(Rule(Fault.GONE, watch=True), PODS_WATCH, True, id="watches only: a watch"),
        pytest.param(Rule(Fault.GONE, watch=True), PODS_LIST, False, id="watches only: not a listing"),
        pytest.param(Rule(Fault.STATUS, watch=False), PODS_WATCH, False, id="no watches: not a watch"),
        pytest.param(Rule(Fault.GONE, below=121), PODS_WATCH, True, id="a watch from a compacted version"),
        pytest.param(Rule(Fault.GONE, below=120), PODS_WATCH, False, id="a watch from the floor itself"),
        pytest.param(Rule(Fault.GONE, below=500), PODS_LIST, False, id="a floor concerns watches only"),
    ],
)
def test_a_rule_matches_the_requests_it_names(rule: Rule, request_: Request, hit: bool) -> None:
    assert matches(rule, request_) is hit


def test_the_first_matching_rule_with_uses_left_applies() -> None:
    once = Rule(Fault.STATUS, "POST", status=429, times=1)
    always = Rule(Fault.STATUS, "POST", status=500)
    rules = [Rule(Fault.GONE, watch=True), once, always]
    assert choose(rules, CREATE, never) is once
    once.hits = 1  # the proxy counts each use
    assert choose(rules, CREATE, never) is always
    assert choose(rules, PODS_WATCH, never) is rules[0]
    assert choose([once], CREATE, never) is None


def test_a_probability_is_drawn_from_the_seeded_generator_so_a_seed_repeats_the_faults() -> None:
    def faults(seed: int) -> list[bool]:
        rng = random.Random(seed)
        rule = Rule(Fault.STATUS, probability=0.3)
        return [choose([rule], CREATE, rng.random) is rule for _ in range(200)]

    assert faults(7) == faults(7)
    assert faults(7) != faults(8)
    assert 30 < sum(faults(7)) < 90


def test_answers_have_the_apiserver_s_shapes() -> None:
    throttled = json.loads(status_body(429, "slow down"))
    assert (throttled["kind"], throttled["code"], throttled["reason"]) == ("Status", 429, "TooManyRequests")
    assert json.loads(status_body(503, "x"))["reason"] == "ServiceUnavailable"
    event = json.loads(gone_event(120))
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
    assert gone_event(120).endswith(b"\n")  # one event per line, as a watch streams them
