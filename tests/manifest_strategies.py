"""Hypothesis strategies for AITrainingJob manifests, and the oracle they are judged by.

Used by the model's property test (tests/unit/test_api_properties.py) and by the end-to-end
property test against the apiserver (tests/e2e/test_crd.py).

A drawn ``Drawn`` holds a manifest built from knobs: each field of ours is absent, a valid
value or a mistake, drawn from small pools. ``expected_errors`` is the oracle: the set of field
paths a correct validator must refuse, derived from the knobs alone by the rules of docs/api.md:

- job: completePolicy/failPolicy in All, Any, None; cleanPodPolicy in All, Running, None;
  faultTolerant a boolean; timeLimit an integer >= 1.
- replica names are DNS-1123 labels; at most one replica spec is a master.
- replica: replicaType master or worker; replicas, minReplicas, maxReplicas integers >= 1 with
  minReplicas <= maxReplicas and minReplicas <= replicas <= maxReplicas (each bound only when set;
  replicas defaults to 1); a master has replicas 1 and minReplicas/maxReplicas 1 when set.
- rule: exactly one of exitCodes / exceptionalEvent; restartPolicy present, ExitCode with
  exitCodes and OnNodeFail with exceptionalEvent; the value in its grammar (pools below say
  which values are).

When the oracle finds no error, ``expected_values`` says what the parsed job holds.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.seeds import seed_job

ABSENT = object()  # the knob leaves the field out

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

# (value, valid) pools.
JOB_POLICIES = [("All", True), ("Any", True), ("None", True), ("Rank0", False), ("some", False)]
CLEAN = [("All", True), ("Running", True), ("None", True), ("Finished", False)]
BOOLS = [(True, True), (False, True), ("yes", False)]
TIME_LIMITS = [(1, True), (3600, True), (0, False), (-3, False)]
REPLICA_TYPES = [("master", True), ("worker", True), ("chief", False)]
COUNTS = [(1, True), (2, True), (3, True), (5, True), (0, False), ("two", False), (3.0, True)]
REPLICA_POLICIES = [("All", True), ("Any", True), ("None", True), ("Rank0", True), ("Most", False)]
EXIT_CODES = [
    (137, True),
    ("129,101", True),
    ("130-140", True),
    (" 1 , 3 - 7 ", True),
    ("0-255", True),
    (256, False),
    (-1, False),
    ("129,,101", False),
    ("140-130", False),
    ("007", False),
    ("sigkill", False),
    ("", False),
]
EVENTS = [
    ("nodeNotReady", True),
    ("nodeNotReady,PodForceDeleted", True),
    (" PodEvicted , PodPreempted ", True),
    ("NodeNotReady", False),
    ("nodeDown", False),
    ("nodeNotReady,", False),
]
RULE_POLICIES = [("ExitCode", True), ("OnNodeFail", True), ("Always", False)]
NAMES = ["trainer", "worker", "ps", "launcher"] * 4 + ["Bad_Name", "x" * 64]
_SEED = seed_job()
_TEMPLATE = _SEED["spec"]["replicaSpecs"]["trainer"]["template"]


def knob(
    pool: list[tuple[Any, bool]], absent: bool = True, careful: bool = False
) -> st.SearchStrategy[tuple[Any, bool]]:
    """knob draws a field: absent (when allowed), a valid value, or now and then a mistake
    (never when ``careful``: then only combinations of valid values can be wrong)."""
    valid = st.sampled_from([p for p in pool if p[1]])
    mistakes = [] if careful else [p for p in pool if not p[1]]
    weighted = [(1, st.just((ABSENT, True)))] if absent else []
    weighted.append((4 if absent else 7, valid))
    if mistakes:
        weighted.append((1, st.sampled_from(mistakes)))
    return st.integers(min_value=0, max_value=sum(w for w, _ in weighted) - 1).flatmap(
        lambda i: _pick(weighted, i)
    )


def _pick(weighted: list[tuple[int, st.SearchStrategy[Any]]], i: int) -> st.SearchStrategy[Any]:
    for weight, strategy in weighted:
        if i < weight:
            return strategy
        i -= weight
    raise AssertionError("unreachable")


@dataclass
class Drawn:
    manifest: dict[str, Any]
    errors: set[str] = field(default_factory=set)  # the oracle's expected refusals (field paths)
    values: dict[str, Any] = field(default_factory=dict)  # the oracle's expected parse, when valid


def _put(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is not ABSENT:
        obj[key] = copy.deepcopy(value)


@st.composite
def rules(draw: st.DrawFn, path: str, drawn: Drawn, careful: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(draw(st.integers(min_value=0, max_value=2))):
        where = f"{path}.faultTolerantPolicy[{i}]"
        rule: dict[str, Any] = {}
        kind = draw(
            st.sampled_from(
                ["exitCodes", "exceptionalEvent"] * (1 if careful else 4)
                + ["both", "neither"] * (not careful)
            )
        )
        matching = {"exitCodes": "ExitCode", "exceptionalEvent": "OnNodeFail"}.get(kind)
        # Mostly the policy that pairs with the rule's kind; the others are mistakes for it.
        pool = [(p, matching in (None, p)) for p, _ in RULE_POLICIES[:2]] + [("Always", False)]
        policy, _ = draw(knob(sorted(pool, key=lambda p: not p[1]), careful=careful))
        _put(rule, "restartPolicy", policy)
        if policy is ABSENT or policy == "Always" or (matching is not None and policy != matching):
            drawn.errors.add(f"{where}.restartPolicy")
        if kind in ("exitCodes", "both"):
            value, ok = draw(knob(EXIT_CODES, absent=False, careful=careful))
            rule["exitCodes"] = value
            if not ok and kind == "exitCodes":
                drawn.errors.add(f"{where}.exitCodes")
        if kind in ("exceptionalEvent", "both"):
            value, ok = draw(knob(EVENTS, absent=False, careful=careful))
            rule["exceptionalEvent"] = value
            if not ok and kind == "exceptionalEvent":
                drawn.errors.add(f"{where}.exceptionalEvent")
        if kind in ("both", "neither"):
            drawn.errors.add(where)
        out.append(rule)
    return out


def _consistent_counts(draw: st.DrawFn, master: bool) -> dict[str, list[tuple[Any, bool]]]:
    """_consistent_counts: pools for replicas, minReplicas, maxReplicas that satisfy the bounds."""
    if master:
        return {key: [(1, True)] for key in ("replicas", "minReplicas", "maxReplicas")}
    replicas = draw(st.integers(min_value=1, max_value=5))
    return {
        "replicas": [(replicas, True)] if replicas > 1 else [(1, True)],
        "minReplicas": [(n, True) for n in range(1, replicas + 1)],
        "maxReplicas": [(n, True) for n in range(replicas, 7)],
    }


def _count(value: Any) -> Any:
    return int(value) if isinstance(value, float) else value


@st.composite
def replica(draw: st.DrawFn, name: str, drawn: Drawn, careful: bool) -> dict[str, Any]:
    path = f"spec.replicaSpecs.{name}"
    spec: dict[str, Any] = {"template": copy.deepcopy(_TEMPLATE)}
    knobs: dict[str, Any] = {}
    pools: dict[str, list[tuple[Any, bool]]] = {
        "replicaType": REPLICA_TYPES,
        "replicas": COUNTS,
        "minReplicas": COUNTS,
        "maxReplicas": COUNTS,
        "completePolicy": REPLICA_POLICIES,
        "failPolicy": REPLICA_POLICIES,
    }
    type_choice = draw(knob(REPLICA_TYPES, careful=careful))
    if draw(st.integers(min_value=0, max_value=3)) > 0:  # mostly counts that fit together
        pools.update(_consistent_counts(draw, type_choice[0] == "master"))
    for key, pool in pools.items():
        value, ok = type_choice if key == "replicaType" else draw(knob(pool, careful=careful))
        _put(spec, key, value)
        knobs[key] = _count(value) if ok else ABSENT
        if not ok:
            drawn.errors.add(f"{path}.{key}")
    replicas = 1 if knobs["replicas"] is ABSENT else knobs["replicas"]
    low, high = knobs["minReplicas"], knobs["maxReplicas"]
    if low is not ABSENT and high is not ABSENT and low > high:
        drawn.errors.add(f"{path}.minReplicas")
    if (low is not ABSENT and replicas < low) or (high is not ABSENT and replicas > high):
        drawn.errors.add(f"{path}.replicas")
    if knobs["replicaType"] == "master":
        for key, value in (("replicas", replicas), ("minReplicas", low), ("maxReplicas", high)):
            if value is not ABSENT and value != 1:
                drawn.errors.add(f"{path}.{key}")
    ft_rules = draw(rules(path, drawn, careful))
    if ft_rules:
        spec["faultTolerantPolicy"] = ft_rules
    drawn.values[name] = {
        "replica_type": knobs["replicaType"] if knobs["replicaType"] is not ABSENT else "worker",
        "replicas": replicas,
        "min_replicas": replicas if low is ABSENT else low,
        "max_replicas": replicas if high is ABSENT else high,
        "complete_policy": "All" if knobs["completePolicy"] is ABSENT else knobs["completePolicy"],
        "fail_policy": "Any" if knobs["failPolicy"] is ABSENT else knobs["failPolicy"],
        "rules": len(ft_rules),
    }
    return spec


@st.composite
def manifests(draw: st.DrawFn) -> Drawn:
    """manifests draws a job of 1-3 replica specs with knobs of ours valid or not."""
    doc = {"apiVersion": _SEED["apiVersion"], "kind": _SEED["kind"], "metadata": {"name": "prop"}}
    drawn = Drawn(doc)
    careful = draw(st.booleans())  # half the jobs have no single-field mistake
    spec: dict[str, Any] = {}
    for key, pool in (
        ("completePolicy", JOB_POLICIES),
        ("failPolicy", JOB_POLICIES),
        ("cleanPodPolicy", CLEAN),
        ("faultTolerant", BOOLS),
        ("timeLimit", TIME_LIMITS),
    ):
        value, ok = draw(knob(pool, careful=careful))
        _put(spec, key, value)
        drawn.values[key] = value
        if not ok:
            drawn.errors.add(f"spec.{key}")
    name_pool = [n for n in NAMES if DNS_LABEL.fullmatch(n) and len(n) <= 63] if careful else NAMES
    names = draw(st.lists(st.sampled_from(name_pool), min_size=1, max_size=3, unique=True))
    spec["replicaSpecs"] = {name: draw(replica(name, drawn, careful)) for name in names}
    if any(not DNS_LABEL.fullmatch(n) or len(n) > 63 for n in names):
        drawn.errors.add("spec.replicaSpecs")
    masters = [n for n in names if spec["replicaSpecs"][n].get("replicaType") == "master"]
    if len(masters) > 1:
        drawn.errors.add("spec.replicaSpecs")
    doc["spec"] = spec
    return drawn
