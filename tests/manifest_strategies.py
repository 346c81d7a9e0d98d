"""Hypothesis strategies for AITrainingJob manifests, and the oracle they are judged by.

Used by the model's property test (tests/unit/test_api_properties.py), by the end-to-end
property test against the apiserver (tests/e2e/test_crd.py), and, with ``hostile_manifests``
(at the end), by the hostile-input test with the operator running (tests/e2e/test_hostile_input.py).

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

from aitj.core.api import (
    MAX_NAME_LENGTH,
    MAX_POD_NAME_LENGTH,
    MAX_REPLICA_NAME_LENGTH,
    MAX_REPLICAS,
    MAX_SECONDS,
    pod_name_length,
)
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


# --- hostile input: what admission lets through, and what the operator must make of it ---------
#
# ``hostile_manifests`` draws small jobs (one worker replica of the seed's trainer, 1-2 pods) with
# one or two attacks: integers at and past their bounds, names at the DNS limits, odd exitCodes
# and exceptionalEvent strings, templates no node fits, and templates the apiserver refuses only
# when a pod is created. ``Hostile`` says what must happen: admission refuses it naming ``refused``,
# or the job ``goes-on``, ends ``failed`` with a condition naming ``field``, or stays Pending
# because it is ``unschedulable`` (docs/semantics.md, "Input the operator cannot run").

GOES_ON, FAILED, UNSCHEDULABLE = "goes-on", "failed", "unschedulable"
REPLICA = "trainer"
# (path under the replica spec, or under spec for the job's own, its minimum and maximum).
BOUNDED = [
    ("spec.timeLimit", 1, MAX_SECONDS),
    ("restartLimit", 0, MAX_SECONDS),
    ("restartTimeLimit", 0, MAX_SECONDS),
    ("restartTimeout", 1, MAX_SECONDS),
    ("scaleTimeout", 1, MAX_SECONDS),
    ("scaleInGracePeriod", 0, MAX_SECONDS),
    ("replicas", 1, MAX_REPLICAS),
    ("minReplicas", 1, MAX_REPLICAS),
    ("maxReplicas", 1, MAX_REPLICAS),
]
HUGE = [MAX_SECONDS, MAX_SECONDS + 1, 2**53, 2**63 - 1, 2**63, -(2**63), 10**20]
EVENT_NAMES = ("nodeNotReady", "PodForceDeleted", "PodEvicted", "PodPreempted")
EVENT_TOKENS = [*EVENT_NAMES, "nodenotready", "PodFailed", "", "nodeNotReady" * 22]
EVENT_JOINS = [",", " , ", ",\t", ";", ", ,"]
ODD_EXIT_CODES: list[Any] = ["\uff11", "0x10", "1\n2", "9" * 20, 2**63 - 1, -1, 256, 255, 0, 1.5, True]
UNPLACEABLE: list[tuple[str, dict[str, Any]]] = [
    ("a nodeSelector no node matches", {"nodeSelector": {"aitj.test/nowhere": "x"}}),
    ("100000 CPUs", {"resources": {"requests": {"cpu": "100000"}, "limits": {"cpu": "100000"}}}),
    ("1000Ti of memory", {"resources": {"requests": {"memory": "1000Ti"}, "limits": {"memory": "1000Ti"}}}),
    (
        "1000 GPUs",
        {"resources": {"requests": {"nvidia.com/gpu": "1000"}, "limits": {"nvidia.com/gpu": "1000"}}},
    ),
]
# Templates admission accepts and the apiserver refuses as pods: (what, change, the pod's field).
POD_INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("no image", {"image": None}, "spec.containers[0].image"),
    (
        "requests above limits",
        {"resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "1"}}},
        "spec.containers[0].resources.requests",
    ),
    ("port 70000", {"ports": [{"containerPort": 70000}]}, "spec.containers[0].ports[0].containerPort"),
    ("a 100-character label value", {"labels": {"aitj.test/long": "x" * 100}}, "metadata.labels"),
    ("300 kB of annotations", {"annotations": {"aitj.test/big": "x" * 300_000}}, "metadata.annotations"),
]


@dataclass
class Hostile:
    manifest: dict[str, Any]
    refused: set[str] = field(default_factory=set)  # paths admission must name; empty: admitted
    expect: str = GOES_ON
    fields: set[str] = field(default_factory=set)  # the Failed condition names one of these
    what: list[str] = field(default_factory=list)  # the attacks drawn, for messages
    model_only: bool = False  # the model refuses the template (MODEL_ONLY_CHECKS): it fails first

    def fail(self, path: str) -> None:
        """fail: the operator must end the job Failed naming ``path`` (the model's refusals win
        over the pod's: the spec is parsed before any pod is made)."""
        self.expect = FAILED
        self.fields.add(path)


def exit_codes_valid(value: Any) -> bool:
    """exit_codes_valid: the exitCodes grammar, written again for the oracle (docs/api.md): a
    code 0-255, or a string of at most 64 characters of comma-separated codes and ranges a-b
    (a <= b), codes without leading zeros, spaces and tabs around each."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return False
    if isinstance(value, int):
        return 0 <= value <= 255
    if len(value) > 64:
        return False
    for part in value.split(","):
        ends = [e.strip(" \t") for e in part.split("-")] if part.strip(" \t") else [""]
        if len(ends) > 2 or not all(_code(e) for e in ends):
            return False
        if len(ends) == 2 and int(ends[0]) > int(ends[1]):
            return False
    return True


def _code(text: str) -> bool:
    return (
        text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0")) and int(text) <= 255
    )


def events_valid(value: str) -> bool:
    """events_valid: exceptionalEvent is at most 256 characters of comma-separated event names."""
    return len(value) <= 256 and all(p.strip(" \t") in EVENT_NAMES for p in value.split(","))


def hostile_base() -> dict[str, Any]:
    """hostile_base: the seed with its trainer alone (one pod) and no plugins: small and fast."""
    doc = {"apiVersion": _SEED["apiVersion"], "kind": _SEED["kind"], "metadata": {"name": "hostile"}}
    trainer = copy.deepcopy(_SEED["spec"]["replicaSpecs"][REPLICA])
    trainer.update(replicas=1, minReplicas=1, maxReplicas=2)
    # No cGPU: many small jobs must fit the test cluster's nodes.
    trainer["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "10m"}}
    doc["spec"] = {"faultTolerant": True, "replicaSpecs": {REPLICA: trainer}}
    return doc


@st.composite
def _huge(draw: st.DrawFn, h: Hostile) -> None:
    path, low, high = draw(st.sampled_from(BOUNDED))
    value = draw(st.sampled_from(HUGE + ([high] if high == MAX_REPLICAS else [])))
    where = h.manifest["spec"] if path.startswith("spec.") else h.manifest["spec"]["replicaSpecs"][REPLICA]
    key = path.removeprefix("spec.")
    where[key] = value
    full = path if path.startswith("spec.") else f"spec.replicaSpecs.{REPLICA}.{key}"
    h.what.append(f"{full}: {value}")
    if not low <= value <= high:
        h.refused.add(full)
    elif key in ("replicas", "minReplicas"):  # in range, but more than maxReplicas (2)
        h.refused.add(f"spec.replicaSpecs.{REPLICA}")


@st.composite
def _exit_codes(draw: st.DrawFn, h: Hostile) -> None:
    value = draw(
        st.one_of(
            st.text(alphabet="0123456789-, \t", max_size=70),
            st.sampled_from(ODD_EXIT_CODES),
            # Mostly valid: codes, duplicates and ranges that fit 64 characters.
            st.lists(st.integers(0, 256), min_size=1, max_size=12).map(lambda c: ",".join(map(str, c))),
            st.tuples(st.integers(0, 255), st.integers(0, 255)).map(
                lambda r: f" {min(r)} - {max(r)} ,{r[0]}"
            ),
        )
    )
    _rule(h, {"exitCodes": value, "restartPolicy": "ExitCode"}, "exitCodes", exit_codes_valid(value))


@st.composite
def _events(draw: st.DrawFn, h: Hostile) -> None:
    tokens = draw(st.lists(st.sampled_from(EVENT_TOKENS), min_size=1, max_size=4))
    value = tokens[0]
    for token in tokens[1:]:
        value += draw(st.sampled_from(EVENT_JOINS)) + token
    _rule(
        h, {"exceptionalEvent": value, "restartPolicy": "OnNodeFail"}, "exceptionalEvent", events_valid(value)
    )


def _rule(h: Hostile, rule: dict[str, Any], key: str, valid: bool) -> None:
    rules = h.manifest["spec"]["replicaSpecs"][REPLICA].setdefault("faultTolerantPolicy", [])
    rules.append(rule)
    path = f"spec.replicaSpecs.{REPLICA}.faultTolerantPolicy[{len(rules) - 1}].{key}"
    h.what.append(f"{path}: {rule[key]!r}")
    if not valid:
        h.refused.add(path)


def _container(h: Hostile) -> dict[str, Any]:
    container: dict[str, Any] = h.manifest["spec"]["replicaSpecs"][REPLICA]["template"]["spec"]["containers"][
        0
    ]
    return container


@st.composite
def _unplaceable(draw: st.DrawFn, h: Hostile) -> None:
    # A node selector when the resources are another attack's (requests above limits).
    pool = UNPLACEABLE[:1] if any("requests above" in w for w in h.what) else UNPLACEABLE
    what, change = draw(st.sampled_from(pool))
    template = h.manifest["spec"]["replicaSpecs"][REPLICA]["template"]
    if "nodeSelector" in change:
        template["spec"].update(copy.deepcopy(change))
    else:
        _container(h)["resources"] = copy.deepcopy(change["resources"])
    h.what.append(f"unschedulable: {what}")
    if h.expect == GOES_ON:
        h.expect = UNSCHEDULABLE


@st.composite
def _pod_invalid(draw: st.DrawFn, h: Hostile) -> None:
    # Not requests above limits when the resources are already an unplaceable template's.
    placed = any("unschedulable" in w and "nodeSelector" not in w for w in h.what)
    what, change, pod_field = draw(
        st.sampled_from([p for p in POD_INVALID if not (placed and "resources" in p[1])])
    )
    template = h.manifest["spec"]["replicaSpecs"][REPLICA]["template"]
    for key, value in change.items():
        if key in ("labels", "annotations"):
            template.setdefault("metadata", {})[key] = copy.deepcopy(value)
        elif value is None:
            _container(h).pop(key, None)
        else:
            _container(h)[key] = copy.deepcopy(value)
    h.what.append(f"refused as a pod: {what}")
    if not h.model_only:
        h.fail(f"spec.replicaSpecs.{REPLICA}.template.{pod_field}")


@st.composite
def _model_only(draw: st.DrawFn, h: Hostile) -> None:
    _container(h)["name"] = draw(st.sampled_from(["Bad_Name", "x.y"]))
    h.what.append(f"container name {_container(h)['name']!r} (the model refuses it)")
    h.expect, h.model_only = FAILED, True
    h.fields = {f"spec.replicaSpecs.{REPLICA}.template.spec.containers[0].name"}


@st.composite
def _long_strings(draw: st.DrawFn, h: Hostile) -> None:
    size = draw(st.sampled_from([10_000, 100_000]))
    _container(h)["args"] = ["x" * size]
    h.what.append(f"an argument of {size} characters")


@st.composite
def _names(draw: st.DrawFn, h: Hostile) -> None:
    """_names renames the job and its replica to lengths at the DNS limits (the test makes the
    job name unique: it keeps the length and overwrites the first characters)."""
    job_len = draw(st.sampled_from([9, 30, 46, 47, 48, 52, 53, 63, 64, 80]))
    replica_len = draw(st.sampled_from([1, 7, 9, 10, 16, 40, 63, 64]))
    name, replica = "h" + "n" * (job_len - 1), "r" * replica_len
    h.manifest["metadata"]["name"] = name
    specs = h.manifest["spec"]["replicaSpecs"]
    specs[replica] = specs.pop(REPLICA)
    h.what.append(f"job name of {job_len}, replica name of {replica_len} characters")
    spec = specs[replica]
    last = max(spec.get("replicas", 1), spec.get("maxReplicas", 1)) - 1
    if job_len > MAX_NAME_LENGTH:
        h.refused.add("metadata.name")
    if replica_len > MAX_REPLICA_NAME_LENGTH:
        h.refused.add("spec.replicaSpecs")
    elif job_len <= MAX_NAME_LENGTH and pod_name_length(name, replica, last) > MAX_POD_NAME_LENGTH:
        h.refused.add("metadata.name")
    # Paths into the replica now go through its new name.
    renamed = {p.replace(f"replicaSpecs.{REPLICA}", f"replicaSpecs.{replica}") for p in h.fields}
    h.fields = renamed
    h.refused = {p.replace(f"replicaSpecs.{REPLICA}", f"replicaSpecs.{replica}") for p in h.refused}


ATTACKS = [_huge, _exit_codes, _events, _unplaceable, _pod_invalid, _model_only, _long_strings]


@st.composite
def hostile_manifests(draw: st.DrawFn) -> Hostile:
    """hostile_manifests draws a small job with one or two attacks (names, when drawn, last:
    they rename the replica every other attack writes to)."""
    h = Hostile(hostile_base())
    if draw(st.booleans()):  # the seed's plugins: an ssh Secret and a discovery ConfigMap named after the job
        h.manifest["spec"]["plugin"] = {"ssh": [""], "discovery": [""]}
        h.what.append("plugins ssh and discovery")
    for attack in draw(st.lists(st.sampled_from(ATTACKS), min_size=1, max_size=2, unique=True)):
        draw(attack(h))
    if draw(st.integers(0, 3)) == 0:
        draw(_names(h))
    return h
