"""One replica spec of a manifest: its counts, policies, limits and faultTolerantPolicy rules.

Pure. Part of ``parse_job`` (aitj.core.api.validation); the pod template is checked by
aitj.core.api.template.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from aitj.core.api.drain_checkpoint import parse_checkpoint_on_drain
from aitj.core.api.model import (
    DEFAULT_BACKOFF_MAX,
    DEFAULT_BACKOFF_RESET_AFTER,
    DEFAULT_REPLICA_COMPLETE_POLICY,
    DEFAULT_REPLICA_FAIL_POLICY,
    DEFAULT_REPLICA_TYPE,
    DEFAULT_REPLICAS,
    DEFAULT_RESTART_POLICY,
    DEFAULT_RESTART_SCOPE,
    DEFAULT_RESTART_TIME_LIMIT,
    DEFAULT_SCALE_IN_GRACE_PERIOD,
    DEFAULT_SCALE_TIMEOUT,
    EVENTS_HINT,
    EVENTS_PATTERN,
    REPLICA_POLICIES,
    REPLICA_SCOPES,
    RULE_RESTART_POLICIES,
    Backoff,
    ExceptionalEvent,
    FaultTolerantRule,
    InfrastructureFaults,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
    RestartScope,
)
from aitj.core.api.names import (
    MAX_EVENTS_LENGTH,
    MAX_POD_NAME_LENGTH,
    MAX_REPLICAS,
    MAX_RULES,
    MAX_SECONDS,
    MAX_WINDOW_RESTARTS,
)
from aitj.core.api.reader import FieldError, Fields, integral, json_kind, quote
from aitj.core.api.template import parse_template
from aitj.core.exitcodes import ExitCodesError, parse_exit_codes

_EVENTS = re.compile(EVENTS_PATTERN)

_REPLICA_FIELDS = (
    "replicaType",
    "replicas",
    "minReplicas",
    "maxReplicas",
    "completePolicy",
    "failPolicy",
    "restartPolicy",
    "restartScope",
    "restartLimit",
    "restartTimeLimit",
    "restartTimeout",
    "scaleTimeout",
    "scaleInGracePeriod",
    "scaleInpods",
    "checkpointOnDrain",
    "faultTolerantPolicy",
    "template",
)


def parse_replica(name: str, value: object, path: str, errors: list[FieldError]) -> ReplicaSpec | None:
    """parse_replica reads the replica spec ``name``; None if it has an error (all are recorded)."""
    if value is None:
        errors.append(FieldError(path, "must be of type object, not null"))
        return None
    before = len(errors)
    f = Fields(value, path, errors, _REPLICA_FIELDS)
    replica_type = f.choice("replicaType", tuple(ReplicaType), DEFAULT_REPLICA_TYPE)
    replicas = f.integer("replicas", DEFAULT_REPLICAS, 1, MAX_REPLICAS)
    min_replicas = f.optional_integer("minReplicas", 1, MAX_REPLICAS)
    max_replicas = f.optional_integer("maxReplicas", 1, MAX_REPLICAS)
    _check_counts(f, replica_type, replicas, min_replicas, max_replicas)
    restart_scope = f.choice("restartScope", REPLICA_SCOPES, DEFAULT_RESTART_SCOPE)
    spec = ReplicaSpec(
        name=name,
        replica_type=replica_type,
        replicas=replicas,
        min_replicas=replicas if min_replicas is None else min_replicas,
        max_replicas=replicas if max_replicas is None else max_replicas,
        complete_policy=f.choice("completePolicy", REPLICA_POLICIES, DEFAULT_REPLICA_COMPLETE_POLICY),
        fail_policy=f.choice("failPolicy", REPLICA_POLICIES, DEFAULT_REPLICA_FAIL_POLICY),
        restart_policy=f.choice("restartPolicy", tuple(RestartPolicy), DEFAULT_RESTART_POLICY),
        restart_scope=restart_scope,
        restart_limit=f.optional_integer("restartLimit", 0, MAX_SECONDS),
        restart_time_limit=f.integer("restartTimeLimit", DEFAULT_RESTART_TIME_LIMIT, 0, MAX_SECONDS),
        restart_timeout=f.optional_integer("restartTimeout", 1, MAX_SECONDS),
        scale_timeout=f.integer("scaleTimeout", DEFAULT_SCALE_TIMEOUT, 1, MAX_SECONDS),
        rules=_parse_rules(f, restart_scope),
        template=parse_template(f),
        scale_in_grace_period=f.integer("scaleInGracePeriod", DEFAULT_SCALE_IN_GRACE_PERIOD, 0, MAX_SECONDS),
        scale_in_pods=_parse_scale_in_pods(f),
        checkpoint_on_drain=parse_checkpoint_on_drain(f),
    )
    return spec if len(errors) == before else None


def _parse_scale_in_pods(f: Fields) -> tuple[str, ...]:
    """_parse_scale_in_pods reads scaleInpods (CCE's spelling): names of this replica's pods to
    remove first when replicas goes down. Names that are not current pods are ignored."""
    value = f.get("scaleInpods")
    if value is None:
        return ()
    if not isinstance(value, list):
        f.error("scaleInpods", f"must be of type array, not {json_kind(value)}")
        return ()
    if len(value) > MAX_REPLICAS:
        f.error("scaleInpods", f"Too many: {len(value)}: must have at most {MAX_REPLICAS} items")
    names: list[str] = []
    for i, item in enumerate(value):
        where = f"{f.at('scaleInpods')}[{i}]"
        if not isinstance(item, str):
            f.errors.append(FieldError(where, f"must be of type string, not {json_kind(item)}"))
        elif len(item) > MAX_POD_NAME_LENGTH:
            f.errors.append(FieldError(where, f"Too long: may not be more than {MAX_POD_NAME_LENGTH} bytes"))
        else:
            names.append(item)
    return tuple(names)


def _check_counts(
    f: Fields, replica_type: ReplicaType, replicas: int, low: int | None, high: int | None
) -> None:
    """_check_counts: minReplicas <= replicas <= maxReplicas, and a master is exactly one pod."""
    if low is not None and high is not None and low > high:
        f.error("minReplicas", f"minReplicas ({low}) must not be greater than maxReplicas ({high})")
    if low is not None and replicas < low:
        f.error("replicas", f"replicas ({replicas}) must not be less than minReplicas ({low})")
    if high is not None and replicas > high:
        f.error("replicas", f"replicas ({replicas}) must not be greater than maxReplicas ({high})")
    if replica_type is ReplicaType.MASTER:
        for key, value in (("replicas", replicas), ("minReplicas", low), ("maxReplicas", high)):
            if value is not None and value != 1:
                f.error(key, f"a master replica (replicaType: master) runs exactly one pod: {key} must be 1")


_RULE_FIELDS = (
    "exitCodes",
    "exceptionalEvent",
    "restartPolicy",
    "restartScope",
    "restartLimit",
    "restartWindowSeconds",
    "backoff",
    "excludeNodeSeconds",
    "infrastructureFaults",
)
# The CRD's CEL rule says the same (hack/gen_crd.py).
INFRASTRUCTURE_FAULTS_MESSAGE = (
    "infrastructureFaults: Exempt needs restartLimit (the budget it keeps infrastructure faults off)"
)
_BACKOFF_FIELDS = ("initialSeconds", "maxSeconds", "resetAfterSeconds")
# The CRD's CEL rule says the same (hack/gen_crd.py).
WINDOW_LIMIT_MESSAGE = (
    f"with restartWindowSeconds, restartLimit must be at most {MAX_WINDOW_RESTARTS} "
    "(each restart in the window is kept to keep the budget exact)"
)


def _parse_rules(replica: Fields, inherited_scope: RestartScope) -> tuple[FaultTolerantRule, ...]:
    value = replica.get("faultTolerantPolicy")
    if value is None:
        return ()
    if not isinstance(value, list):
        replica.error("faultTolerantPolicy", f"must be of type array, not {json_kind(value)}")
        return ()
    if len(value) > MAX_RULES:
        replica.error("faultTolerantPolicy", f"Too many: {len(value)}: must have at most {MAX_RULES} items")
    path = replica.at("faultTolerantPolicy")
    rules = [
        _parse_rule(item, f"{path}[{i}]", replica.errors, inherited_scope) for i, item in enumerate(value)
    ]
    if any(_in_place_unreachable(value, i) for i in range(len(value))):
        replica.error("faultTolerantPolicy", IN_PLACE_UNREACHABLE_MESSAGE)
    return _distinct_texts(tuple(r for r in rules if r is not None))


# The CRD's CEL rules say the same (hack/gen_crd.py): an in-place rung the kubelet cannot act
# on, or that no failure can reach, is refused rather than left to do nothing.
IN_PLACE_EVENT_MESSAGE = (
    "restartScope InPlace needs exitCodes: the kubelet restarts containers in place only on their exit codes"
)
IN_PLACE_BACKOFF_MESSAGE = (
    "restartScope InPlace cannot have backoff: the kubelet restarts the containers at once"
)
IN_PLACE_EXCLUDE_MESSAGE = (
    "restartScope InPlace cannot have excludeNodeSeconds: an in-place restart stays on its node"
)
IN_PLACE_UNREACHABLE_MESSAGE = (
    "a rule with restartScope InPlace can never act when an earlier rule has the same exitCodes "
    "and no restartLimit (that rule always matches first)"
)


def _in_place_unreachable(rules: list[object], position: int) -> bool:
    """_in_place_unreachable: the rule at ``position`` restarts in place, and an earlier rule
    with the same exitCodes, as written, has no restartLimit: it is never spent, so it always
    matches first. As written, like the CRD's CEL rule, so both refuse the same manifests."""
    rule = rules[position]
    if not isinstance(rule, Mapping) or rule.get("restartScope") != RestartScope.IN_PLACE.value:
        return False
    codes = rule.get("exitCodes")
    return codes is not None and any(
        isinstance(e, Mapping)
        and e.get("exitCodes") is not None
        and str(integral(e.get("exitCodes"))) == str(integral(codes))
        and e.get("restartLimit") is None
        for e in rules[:position]
    )


def _distinct_texts(rules: tuple[FaultTolerantRule, ...]) -> tuple[FaultTolerantRule, ...]:
    """_distinct_texts: a rule whose text repeats an earlier rule's (the rungs of a ladder name
    the same exit codes) is known by its position too (``exitCodes 137 (rule 2)``), so each
    rung keeps a budget of its own in the ledger (aitj.core.planner.rule_budgets)."""
    seen: set[str] = set()
    out: list[FaultTolerantRule] = []
    for position, rule in enumerate(rules):
        if rule.source in seen:
            rule = dataclasses.replace(rule, source=f"{rule.source} (rule {position + 1})")
        seen.add(rule.source)
        out.append(rule)
    return tuple(out)


def _parse_rule(
    value: object, path: str, errors: list[FieldError], inherited_scope: RestartScope
) -> FaultTolerantRule | None:
    """_parse_rule reads one rule; an unset restartScope inherits the replica's restartScope."""
    f = Fields(value, path, errors, _RULE_FIELDS)
    if not isinstance(value, Mapping):
        return None
    policy = f.optional_choice("restartPolicy", RULE_RESTART_POLICIES)
    if not f.has("restartPolicy"):
        f.error("restartPolicy", "Required value")
    scope = f.choice("restartScope", tuple(RestartScope), inherited_scope)
    has_codes, has_events = f.has("exitCodes"), f.has("exceptionalEvent")
    if has_codes == has_events:
        f.errors.append(FieldError(path, "a rule needs exactly one of exitCodes or exceptionalEvent"))
        return None
    if has_codes:
        kind, wanted = "exitCodes", RestartPolicy.EXIT_CODE
    else:
        kind, wanted = "exceptionalEvent", RestartPolicy.ON_NODE_FAIL
    if policy is not None and policy is not wanted:
        f.error(
            "restartPolicy", f"a rule with {kind} needs restartPolicy: {wanted.value}, not {policy.value}"
        )
    codes = _rule_codes(f) if has_codes else frozenset[int]()
    events = frozenset[ExceptionalEvent]() if has_codes else _rule_events(f)
    limit = f.optional_integer("restartLimit", 0, MAX_SECONDS)
    window = f.optional_integer("restartWindowSeconds", 1, MAX_SECONDS)
    if window is not None and limit is None:
        f.error(
            "restartWindowSeconds", "restartWindowSeconds needs restartLimit (the restarts allowed in it)"
        )
    if window is not None and limit is not None and limit > MAX_WINDOW_RESTARTS:
        f.error("restartLimit", WINDOW_LIMIT_MESSAGE)
    backoff = _rule_backoff(f)
    exclude = f.optional_integer("excludeNodeSeconds", 1, MAX_SECONDS)
    if scope is RestartScope.IN_PLACE:
        _check_in_place(f, has_codes)
    infra = _rule_infrastructure_faults(f, limit)
    if policy is None:
        return None
    return FaultTolerantRule(
        restart_policy=policy,
        restart_scope=scope,
        exit_codes=codes,
        events=events,
        source=f"{kind} {f.get(kind)}",
        restart_limit=limit,
        restart_window=window,
        backoff=backoff,
        exclude_node_seconds=exclude,
        infrastructure_faults=infra,
    )


def _check_in_place(f: Fields, has_codes: bool) -> None:
    """_check_in_place: what an InPlace rule cannot have (the kubelet acts on exit codes, at
    once, on the pod's own node)."""
    if not has_codes:
        f.error("restartScope", IN_PLACE_EVENT_MESSAGE)
    if f.has("backoff"):
        f.error("backoff", IN_PLACE_BACKOFF_MESSAGE)
    if f.has("excludeNodeSeconds"):
        f.error("excludeNodeSeconds", IN_PLACE_EXCLUDE_MESSAGE)


def _rule_infrastructure_faults(f: Fields, limit: int | None) -> InfrastructureFaults:
    """_rule_infrastructure_faults reads a rule's infrastructureFaults (issue 28): Exempt keeps
    infrastructure faults off the rule's restartLimit, so it needs one."""
    value = f.choice("infrastructureFaults", tuple(InfrastructureFaults), InfrastructureFaults.CHARGE)
    if value is InfrastructureFaults.EXEMPT and limit is None:
        f.error("infrastructureFaults", INFRASTRUCTURE_FAULTS_MESSAGE)
    return value


def _rule_backoff(rule: Fields) -> Backoff | None:
    """_rule_backoff reads a rule's backoff: initialSeconds is required, maxSeconds (default
    300, or initialSeconds if that is more) may not be below it, resetAfterSeconds defaults to 600."""
    value = rule.get("backoff")
    if value is None:
        return None
    f = Fields(value, rule.at("backoff"), rule.errors, _BACKOFF_FIELDS)
    if not isinstance(value, Mapping):
        return None
    initial = f.optional_integer("initialSeconds", 1, MAX_SECONDS)
    if not f.has("initialSeconds"):
        f.error("initialSeconds", "Required value")
    maximum = f.optional_integer("maxSeconds", 1, MAX_SECONDS)
    reset_after = f.integer("resetAfterSeconds", DEFAULT_BACKOFF_RESET_AFTER, 1, MAX_SECONDS)
    if initial is None:
        return None
    if maximum is None:
        maximum = max(DEFAULT_BACKOFF_MAX, initial)
    elif maximum < initial:
        f.error("maxSeconds", f"maxSeconds ({maximum}) must not be less than initialSeconds ({initial})")
    return Backoff(initial, maximum, reset_after)


def _rule_codes(f: Fields) -> frozenset[int]:
    try:
        return parse_exit_codes(integral(f.get("exitCodes")))
    except ExitCodesError as e:
        f.error("exitCodes", f"exitCodes {e}")
        return frozenset()


def _rule_events(f: Fields) -> frozenset[ExceptionalEvent]:
    value = f.string("exceptionalEvent", MAX_EVENTS_LENGTH)
    if value is None:
        return frozenset()
    if not _EVENTS.match(value):
        f.error("exceptionalEvent", f"exceptionalEvent {quote(value)} must be {EVENTS_HINT}")
        return frozenset()
    return frozenset(ExceptionalEvent(part.strip(" \t")) for part in value.split(","))
