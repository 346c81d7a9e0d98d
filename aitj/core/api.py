"""The AITrainingJob API: names, enums and the typed model of a job.

Pure: imports neither kopf, kubernetes nor prometheus_client (import-linter enforces it).
The CRD in ``crds/`` is the admission-time twin of this module: hack/gen_crd.py builds it
from the enums, defaults and bounds below, so the two cannot drift apart. Field meanings
are in docs/api.md.

``parse_job`` turns the raw object (a kopf body or a YAML document) into a frozen ``Job``,
applying the CRD's defaults, and refuses a bad one with ``InvalidJob``: every ``FieldError``
names the field (``spec.replicaSpecs.trainer.minReplicas``). It repeats everything the
apiserver checks on our own fields, with the apiserver's wording where it has one, plus a few
checks only the model makes (``MODEL_ONLY_CHECKS``). ``update_errors`` is the twin of the
CRD's transition rules (what may change on a live job).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aitj.core.exitcodes import ExitCodesError, parse_exit_codes

GROUP = "kongming.cce.baiudbce.com"  # the seed's spelling, so CCE manifests apply verbatim
VERSION = "v1"
KIND = "AITrainingJob"
PLURAL = "aitrainingjobs"
SHORT_NAME = "aitj"
API_VERSION = f"{GROUP}/{VERSION}"

# Labels and annotations the operator puts on what it creates.
LABEL_PREFIX = "aitj.kongming.cce.baiudbce.com"
LABEL_JOB = f"{LABEL_PREFIX}/job-name"
LABEL_REPLICA = f"{LABEL_PREFIX}/replica-name"
LABEL_INDEX = f"{LABEL_PREFIX}/replica-index"
LABEL_GENERATION = f"{LABEL_PREFIX}/restart-generation"
LABEL_PRIORITY = f"{LABEL_PREFIX}/priority"

# The replica the /scale subresource drives (kubectl scale, HPA), as in the seed.
SCALE_REPLICA = "trainer"


class StrEnumMixin(enum.StrEnum):
    """StrEnumMixin: members are their wire values (``str(Policy.ALL) == "All"``)."""


class Policy(StrEnumMixin):
    """completePolicy / failPolicy. Rank0 is valid only at replica level."""

    ALL = "All"
    ANY = "Any"
    NONE = "None"
    RANK0 = "Rank0"


class CleanPodPolicy(StrEnumMixin):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class ReplicaType(StrEnumMixin):
    MASTER = "master"
    WORKER = "worker"


class RestartPolicy(StrEnumMixin):
    """Which failures of a replica may be restarted at all."""

    NEVER = "Never"
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    EXIT_CODE = "ExitCode"
    ON_NODE_FAIL = "OnNodeFail"
    ON_NODE_FAIL_WITH_EXIT_CODE = "OnNodeFailWithExitCode"


class RestartScope(StrEnumMixin):
    POD = "Pod"
    REPLICA = "Replica"
    ALL = "All"


class ExceptionalEvent(StrEnumMixin):
    NODE_NOT_READY = "nodeNotReady"
    POD_FORCE_DELETED = "PodForceDeleted"
    POD_EVICTED = "PodEvicted"
    POD_PREEMPTED = "PodPreempted"


class Phase(StrEnumMixin):
    """Job phase; also the condition types of the status history."""

    PENDING = "Pending"
    CREATING = "Creating"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SCALING = "Scaling"
    TERMINATING = "Terminating"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMEOUT = "Timeout"


class FrameworkType(StrEnumMixin):
    """spec.frameworkType: informational; selects sensible plugin defaults."""

    HOROVOD = "horovod"
    PADDLE = "paddle"
    PYTORCH = "pytorch"
    MPI = "mpi"
    TENSORFLOW = "tensorflow"


class Priority(StrEnumMixin):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class ScaleOperation(StrEnumMixin):
    """status.scaleHistory[].operation."""

    SCALE_OUT = "scaleout"
    SCALE_IN = "scalein"
    ROLLBACK = "rollback"


FINISHED_PHASES = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.TIMEOUT})

# Policies allowed at job level (over replica types); Rank0 only makes sense within one.
JOB_POLICIES = (Policy.ALL, Policy.ANY, Policy.NONE)
REPLICA_POLICIES = tuple(Policy)
# A rule's kind fixes its restartPolicy: the seed's pairing; any other is refused.
RULE_RESTART_POLICIES = (RestartPolicy.EXIT_CODE, RestartPolicy.ON_NODE_FAIL)

# Defaults. The CRD writes the same values as OpenAPI defaults (hack/gen_crd.py).
DEFAULT_FAULT_TOLERANT = False
DEFAULT_JOB_COMPLETE_POLICY = Policy.ALL
DEFAULT_JOB_FAIL_POLICY = Policy.ANY
DEFAULT_CLEAN_POD_POLICY = CleanPodPolicy.ALL
DEFAULT_REPLICA_TYPE = ReplicaType.WORKER
DEFAULT_REPLICAS = 1
DEFAULT_REPLICA_COMPLETE_POLICY = Policy.ALL
DEFAULT_REPLICA_FAIL_POLICY = Policy.ANY
DEFAULT_RESTART_POLICY = RestartPolicy.NEVER
DEFAULT_RESTART_SCOPE = RestartScope.POD
DEFAULT_RESTART_TIME_LIMIT = 60
DEFAULT_SCALE_TIMEOUT = 600
# Seconds scale-in pods stay alive after leaving the discovery host list: about one kubelet
# sync period, the time a ConfigMap edit takes to reach the launcher's mounted file.
DEFAULT_SCALE_IN_GRACE_PERIOD = 60

# Bounds. Besides catching typos they keep the CRD's CEL rules inside the apiserver's cost
# budget, which is estimated from the largest list, map and string the schema admits.
MAX_REPLICA_SPECS = 8
MAX_REPLICAS = 10_000
MAX_RULES = 16
MAX_SECONDS = 2**31 - 1
MAX_EVENTS_LENGTH = 256
MAX_PLUGIN_ITEMS = 8
MAX_PLUGIN_ITEM_LENGTH = 253
MAX_NAME_LENGTH = 63  # the job name is its headless Service's name: a DNS-1035 label
MAX_REPLICA_NAME_LENGTH = 63
MAX_POD_NAME_LENGTH = 63  # pod names are the pods' hostnames in the headless Service: DNS labels
NAME_PART_LENGTH = 5  # the <5 chars> of <job>-<replica>-<5 chars>-<index> (aitj/core/naming.py)
# Status lists are bounded: the operator trims to these before writing, the CRD refuses longer.
MAX_STATUS_CONDITIONS = 64
MAX_SCALE_HISTORY = 64
MAX_RESTART_RECORDS = 64

DNS_1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
DNS_1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_EVENT_NAME = "(" + "|".join(e.value for e in ExceptionalEvent) + ")"
_SPACE = r"[ \t]*"
# exceptionalEvent: a comma list of known names, spaces allowed. The CRD's CEL rule uses it too.
EVENTS_PATTERN = rf"^{_SPACE}{_EVENT_NAME}{_SPACE}(,{_SPACE}{_EVENT_NAME}{_SPACE})*$"

EVENTS_HINT = "a comma-separated list of " + ", ".join(e.value for e in ExceptionalEvent)

# The checks parse_job makes that the apiserver does not (docs/api.md explains each). Every
# FieldError from them carries one of these tags at the start of its message, so a caller (and
# the end-to-end oracle) can tell a model-only refusal from one admission also makes.
MODEL_ONLY_CHECKS = {
    "[duplicate container name]": "no init container has the name of a container",
    "[unknown volume]": "every volumeMount names a volume of the pod",
    "[container name]": "container names are DNS-1123 labels",
}


@dataclass(frozen=True)
class FaultTolerantRule:
    """One faultTolerantPolicy rule: exactly one of exit_codes / events is non-empty."""

    restart_policy: RestartPolicy
    restart_scope: RestartScope
    exit_codes: frozenset[int] = frozenset()
    events: frozenset[ExceptionalEvent] = frozenset()
    source: str = ""  # the rule as written, for messages ("exitCodes 129,101")


@dataclass(frozen=True)
class ReplicaSpec:
    name: str
    replica_type: ReplicaType
    replicas: int
    min_replicas: int  # unset in the manifest: equal to replicas (no elasticity below it)
    max_replicas: int  # unset in the manifest: equal to replicas
    complete_policy: Policy
    fail_policy: Policy
    restart_policy: RestartPolicy
    restart_scope: RestartScope
    restart_limit: int | None  # None: unlimited
    restart_time_limit: int  # seconds an old pod may take to terminate before it is force-deleted
    restart_timeout: int | None  # seconds a replacement may take to reach Running; None: no limit
    scale_timeout: int  # seconds a scale-out may take before it is rolled back
    rules: tuple[FaultTolerantRule, ...]
    template: dict[str, Any] = field(hash=False, compare=False)
    # seconds scale-in pods stay alive out of the host list before they are deleted
    scale_in_grace_period: int = DEFAULT_SCALE_IN_GRACE_PERIOD
    scale_in_pods: tuple[str, ...] = ()  # scaleInpods: pods to remove first at a scale-in (CCE)


@dataclass(frozen=True)
class JobSpec:
    framework_type: str  # "" when unset
    fault_tolerant: bool
    complete_policy: Policy
    fail_policy: Policy
    clean_pod_policy: CleanPodPolicy
    ssh: bool
    discovery: bool
    priority: str | None
    time_limit: int | None
    replicas: tuple[ReplicaSpec, ...]  # in a stable order: workers first, then masters, by name

    def replica(self, name: str) -> ReplicaSpec:
        for r in self.replicas:
            if r.name == name:
                return r
        raise KeyError(name)


@dataclass(frozen=True)
class Job:
    namespace: str
    name: str
    uid: str
    generation: int
    spec: JobSpec
    status: dict[str, Any] = field(hash=False, compare=False)
    # The version of the object this was parsed from: the executor writes status only onto
    # that version, so a pass planned from a stale copy cannot overwrite a newer status.
    resource_version: str = field(default="", compare=False)


@dataclass(frozen=True)
class FieldError:
    """FieldError is one refusal: the field's path (``spec.replicaSpecs.trainer.replicas``) and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InvalidJob(ValueError):
    """InvalidJob carries every FieldError found in a manifest, not just the first."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("invalid AITrainingJob:\n" + "\n".join(f"  {e}" for e in self.errors))


def pod_name_length(job_name: str, replica: str, index: int) -> int:
    """pod_name_length is len(``<job>-<replica>-<5 chars>-<index>``) without building the name."""
    return len(job_name) + len(replica) + NAME_PART_LENGTH + len(str(index)) + 3


def parse_job(obj: Mapping[str, Any]) -> Job:
    """parse_job validates a raw AITrainingJob and returns the typed, defaulted Job."""
    errors: list[FieldError] = []
    if not isinstance(obj, Mapping):
        raise InvalidJob([FieldError("<root>", f"must be an object, not {_kind(obj)}")])
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = obj.get(key)
        if value is not None and value != expected:
            errors.append(
                FieldError(key, f"Unsupported value: {_q(value)}: supported values: {_q(expected)}")
            )
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = _job_name(meta, errors)
    spec = _parse_spec(obj.get("spec"), errors)
    if spec is not None and name:
        _check_pod_names(name, spec, errors)
    if errors or spec is None:
        raise InvalidJob(errors)
    status = obj.get("status")
    generation = meta.get("generation")
    return Job(
        namespace=str(meta.get("namespace") or "default"),
        name=name,
        uid=str(meta.get("uid") or ""),
        generation=generation if isinstance(generation, int) else 0,
        spec=spec,
        status=dict(status) if isinstance(status, Mapping) else {},
        resource_version=str(meta.get("resourceVersion") or ""),
    )


def update_errors(old: Job, new: Job) -> list[FieldError]:
    """update_errors lists what a spec edit of a live job may not change (the CRD's transition rules)."""
    errors: list[FieldError] = []
    old_names = {r.name for r in old.spec.replicas}
    new_names = {r.name for r in new.spec.replicas}
    if old_names != new_names:
        errors.append(
            FieldError(
                "spec.replicaSpecs",
                "replica names cannot change after creation: was "
                f"[{', '.join(sorted(old_names))}], now [{', '.join(sorted(new_names))}]",
            )
        )
    elastic = old.spec.fault_tolerant and new.spec.fault_tolerant
    for r in new.spec.replicas:
        if r.name not in old_names:
            continue
        before = old.spec.replica(r.name)
        path = f"spec.replicaSpecs.{r.name}"
        if r.replica_type != before.replica_type:
            errors.append(FieldError(f"{path}.replicaType", "replicaType cannot change after creation"))
        if not elastic and r.replicas != before.replicas:
            errors.append(
                FieldError(
                    f"{path}.replicas",
                    f"replicas cannot change ({before.replicas} -> {r.replicas}) "
                    "unless spec.faultTolerant is true before and after the edit",
                )
            )
    return errors


# --- reading one object ----------------------------------------------------------------------

E = TypeVar("E", bound=StrEnumMixin)


class _Fields:
    """_Fields reads the keys of one object of the manifest, recording a FieldError per bad value.

    A null value counts as absent, as on the apiserver, which prunes nulls of non-nullable
    fields before defaulting. Unknown keys are refused, as ``kubectl --validate=strict`` does.
    """

    def __init__(self, value: object, path: str, errors: list[FieldError], known: Sequence[str]) -> None:
        self.path = path
        self.errors = errors
        self.data: Mapping[str, Any] = {}
        if not isinstance(value, Mapping):
            errors.append(FieldError(path, f"must be of type object, not {_kind(value)}"))
            return
        self.data = value
        for key in value:
            if key not in known:
                errors.append(FieldError(self.at(str(key)), f'unknown field "{self.at(str(key))}"'))

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def error(self, key: str, message: str) -> None:
        self.errors.append(FieldError(self.at(key), message))

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        value = self.optional_integer(key, minimum, maximum)
        return default if value is None else value

    def optional_integer(self, key: str, minimum: int, maximum: int) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        value = _integral(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(key, f"must be of type integer, not {_kind(value)} {_q(value)}")
            return None
        if value < minimum:
            self.error(key, f"Invalid value: {value}: should be greater than or equal to {minimum}")
        elif value > maximum:
            self.error(key, f"Invalid value: {value}: should be less than or equal to {maximum}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(key, f"must be of type boolean, not {_kind(value)} {_q(value)}")
            return default
        return value

    def string(self, key: str, max_length: int) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.error(key, f"must be of type string, not {_kind(value)} {_q(value)}")
            return None
        if len(value) > max_length:
            self.error(key, f"Too long: may not be more than {max_length} bytes")
        return value

    def choice(self, key: str, allowed: Sequence[E], default: E) -> E:
        value = self.optional_choice(key, allowed)
        return default if value is None else value

    def optional_choice(self, key: str, allowed: Sequence[E]) -> E | None:
        """optional_choice returns the member named by the value; None when absent or refused."""
        value = self.data.get(key)
        if value is None:
            return None
        for member in allowed:
            if value == member.value:
                return member
        supported = ", ".join(_q(m.value) for m in allowed)
        self.error(key, f"Unsupported value: {_q(value)}: supported values: {supported}")
        return None


def _integral(value: object) -> object:
    """_integral reads 3.0 as 3, as the apiserver's JSON decoder does."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _kind(value: object) -> str:
    """_kind names a value's JSON type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _q(value: object) -> str:
    """_q quotes a value the way the apiserver's messages do (strings in double quotes)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


# --- the job -----------------------------------------------------------------------------------

_JOB_NAME = re.compile(DNS_1035_LABEL)
_REPLICA_NAME = re.compile(DNS_1123_LABEL)
_EVENTS = re.compile(EVENTS_PATTERN)


def _job_name(meta: Mapping[str, Any], errors: list[FieldError]) -> str:
    """_job_name checks metadata.name: its headless Service needs a DNS-1035 label."""
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append(FieldError("metadata.name", "Required value: name is required"))
        return ""
    if len(name) > MAX_NAME_LENGTH:
        errors.append(FieldError("metadata.name", f"Too long: may not be more than {MAX_NAME_LENGTH} bytes"))
    elif not _JOB_NAME.fullmatch(name):
        errors.append(
            FieldError(
                "metadata.name",
                f"job name {_q(name)} must be a DNS-1035 label (lower-case letters, digits and '-', "
                "starting with a letter): it names the job's headless Service",
            )
        )
    return name


_SPEC_FIELDS = (
    "frameworkType",
    "faultTolerant",
    "completePolicy",
    "failPolicy",
    "cleanPodPolicy",
    "plugin",
    "priority",
    "timeLimit",
    "replicaSpecs",
)


def _parse_spec(value: object, errors: list[FieldError]) -> JobSpec | None:
    if value is None:
        errors.append(FieldError("spec", "Required value"))
        return None
    f = _Fields(value, "spec", errors, _SPEC_FIELDS)
    framework = f.optional_choice("frameworkType", tuple(FrameworkType))
    priority = f.optional_choice("priority", tuple(Priority))
    ssh, discovery = _parse_plugin(f)
    return JobSpec(
        framework_type=framework.value if framework else "",
        fault_tolerant=f.boolean("faultTolerant", DEFAULT_FAULT_TOLERANT),
        complete_policy=_job_policy(f, "completePolicy", DEFAULT_JOB_COMPLETE_POLICY),
        fail_policy=_job_policy(f, "failPolicy", DEFAULT_JOB_FAIL_POLICY),
        clean_pod_policy=f.choice("cleanPodPolicy", tuple(CleanPodPolicy), DEFAULT_CLEAN_POD_POLICY),
        ssh=ssh,
        discovery=discovery,
        priority=priority.value if priority else None,
        time_limit=f.optional_integer("timeLimit", 1, MAX_SECONDS),
        replicas=_parse_replica_specs(f, errors),
    )


def _job_policy(f: _Fields, key: str, default: Policy) -> Policy:
    """_job_policy reads a job-level policy; Rank0 gets its own message, it is a common slip."""
    if f.get(key) == Policy.RANK0.value:
        f.error(
            key,
            'Unsupported value: "Rank0": supported values: "All", "Any", "None" '
            f"(Rank0 is allowed only in spec.replicaSpecs.<name>.{key})",
        )
        return default
    return f.choice(key, JOB_POLICIES, default)


def _parse_plugin(spec: _Fields) -> tuple[bool, bool]:
    """_parse_plugin: a plugin is on when its key is present, even as ``[""]`` (CCE) or null."""
    if "plugin" not in spec.data or spec.get("plugin") is None:
        return False, False
    f = _Fields(spec.get("plugin"), spec.at("plugin"), spec.errors, ("ssh", "discovery"))
    for key in ("ssh", "discovery"):
        items = f.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            f.error(key, f"must be of type array, not {_kind(items)}")
            continue
        if len(items) > MAX_PLUGIN_ITEMS:
            f.error(key, f"Too many: {len(items)}: must have at most {MAX_PLUGIN_ITEMS} items")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                f.errors.append(FieldError(f"{f.at(key)}[{i}]", f"must be of type string, not {_kind(item)}"))
            elif len(item) > MAX_PLUGIN_ITEM_LENGTH:
                f.errors.append(
                    FieldError(
                        f"{f.at(key)}[{i}]", f"Too long: may not be more than {MAX_PLUGIN_ITEM_LENGTH} bytes"
                    )
                )
    return "ssh" in f.data, "discovery" in f.data


def _parse_replica_specs(spec: _Fields, errors: list[FieldError]) -> tuple[ReplicaSpec, ...]:
    path = spec.at("replicaSpecs")
    value = spec.get("replicaSpecs")
    if value is None:
        errors.append(FieldError(path, "Required value"))
        return ()
    if not isinstance(value, Mapping):
        errors.append(FieldError(path, f"must be of type object, not {_kind(value)}"))
        return ()
    if not value:
        errors.append(FieldError(path, "should have at least 1 properties: a job needs a replica spec"))
    elif len(value) > MAX_REPLICA_SPECS:
        errors.append(FieldError(path, f"should have at most {MAX_REPLICA_SPECS} properties"))
    replicas: list[ReplicaSpec] = []
    for name, body in value.items():
        name = str(name)
        if len(name) > MAX_REPLICA_NAME_LENGTH or not _REPLICA_NAME.fullmatch(name):
            errors.append(
                FieldError(
                    path,
                    "replica names must be DNS-1123 labels (lower-case letters, digits and '-', at most "
                    f"{MAX_REPLICA_NAME_LENGTH} characters): they are part of pod names; not {_q(name)}",
                )
            )
        replica = _parse_replica(name, body, f"{path}.{name}", errors)
        if replica is not None:
            replicas.append(replica)
    # Counted on the raw values, as the CRD's rule does, so a master with another mistake still counts.
    masters = sorted(
        str(n)
        for n, body in value.items()
        if isinstance(body, Mapping) and body.get("replicaType") == "master"
    )
    if len(masters) > 1:
        errors.append(
            FieldError(
                path,
                f"at most one replica spec may have replicaType: master, found {len(masters)}: "
                + ", ".join(masters),
            )
        )
    order = {ReplicaType.WORKER: 0, ReplicaType.MASTER: 1}
    return tuple(sorted(replicas, key=lambda r: (order[r.replica_type], r.name)))


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
    "faultTolerantPolicy",
    "template",
)


def _parse_replica(name: str, value: object, path: str, errors: list[FieldError]) -> ReplicaSpec | None:
    if value is None:
        errors.append(FieldError(path, "must be of type object, not null"))
        return None
    before = len(errors)
    f = _Fields(value, path, errors, _REPLICA_FIELDS)
    replica_type = f.choice("replicaType", tuple(ReplicaType), DEFAULT_REPLICA_TYPE)
    replicas = f.integer("replicas", DEFAULT_REPLICAS, 1, MAX_REPLICAS)
    min_replicas = f.optional_integer("minReplicas", 1, MAX_REPLICAS)
    max_replicas = f.optional_integer("maxReplicas", 1, MAX_REPLICAS)
    _check_counts(f, replica_type, replicas, min_replicas, max_replicas)
    restart_scope = f.choice("restartScope", tuple(RestartScope), DEFAULT_RESTART_SCOPE)
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
        template=_parse_template(f),
        scale_in_grace_period=f.integer("scaleInGracePeriod", DEFAULT_SCALE_IN_GRACE_PERIOD, 0, MAX_SECONDS),
        scale_in_pods=_parse_scale_in_pods(f),
    )
    return spec if len(errors) == before else None


def _parse_scale_in_pods(f: _Fields) -> tuple[str, ...]:
    """_parse_scale_in_pods reads scaleInpods (CCE's spelling): names of this replica's pods to
    remove first when replicas goes down. Names that are not current pods are ignored."""
    value = f.get("scaleInpods")
    if value is None:
        return ()
    if not isinstance(value, list):
        f.error("scaleInpods", f"must be of type array, not {_kind(value)}")
        return ()
    if len(value) > MAX_REPLICAS:
        f.error("scaleInpods", f"Too many: {len(value)}: must have at most {MAX_REPLICAS} items")
    names: list[str] = []
    for i, item in enumerate(value):
        where = f"{f.at('scaleInpods')}[{i}]"
        if not isinstance(item, str):
            f.errors.append(FieldError(where, f"must be of type string, not {_kind(item)}"))
        elif len(item) > MAX_POD_NAME_LENGTH:
            f.errors.append(FieldError(where, f"Too long: may not be more than {MAX_POD_NAME_LENGTH} bytes"))
        else:
            names.append(item)
    return tuple(names)


def _check_counts(
    f: _Fields, replica_type: ReplicaType, replicas: int, low: int | None, high: int | None
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


_RULE_FIELDS = ("exitCodes", "exceptionalEvent", "restartPolicy", "restartScope")


def _parse_rules(replica: _Fields, inherited_scope: RestartScope) -> tuple[FaultTolerantRule, ...]:
    value = replica.get("faultTolerantPolicy")
    if value is None:
        return ()
    if not isinstance(value, list):
        replica.error("faultTolerantPolicy", f"must be of type array, not {_kind(value)}")
        return ()
    if len(value) > MAX_RULES:
        replica.error("faultTolerantPolicy", f"Too many: {len(value)}: must have at most {MAX_RULES} items")
    path = replica.at("faultTolerantPolicy")
    rules = (
        _parse_rule(item, f"{path}[{i}]", replica.errors, inherited_scope) for i, item in enumerate(value)
    )
    return tuple(r for r in rules if r is not None)


def _parse_rule(
    value: object, path: str, errors: list[FieldError], inherited_scope: RestartScope
) -> FaultTolerantRule | None:
    """_parse_rule reads one rule; an unset restartScope inherits the replica's restartScope."""
    f = _Fields(value, path, errors, _RULE_FIELDS)
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
    if policy is None:
        return None
    return FaultTolerantRule(
        restart_policy=policy,
        restart_scope=scope,
        exit_codes=codes,
        events=events,
        source=f"{kind} {f.get(kind)}",
    )


def _rule_codes(f: _Fields) -> frozenset[int]:
    try:
        return parse_exit_codes(_integral(f.get("exitCodes")))
    except ExitCodesError as e:
        f.error("exitCodes", f"exitCodes {e}")
        return frozenset()


def _rule_events(f: _Fields) -> frozenset[ExceptionalEvent]:
    value = f.string("exceptionalEvent", MAX_EVENTS_LENGTH)
    if value is None:
        return frozenset()
    if not _EVENTS.match(value):
        f.error("exceptionalEvent", f"exceptionalEvent {_q(value)} must be {EVENTS_HINT}")
        return frozenset()
    return frozenset(ExceptionalEvent(part.strip(" \t")) for part in value.split(","))


# --- the pod template --------------------------------------------------------------------------


def _parse_template(replica: _Fields) -> dict[str, Any]:
    """_parse_template checks the template's shape; the apiserver validates the full PodTemplateSpec.

    What it adds are the MODEL_ONLY_CHECKS: pod validation the apiserver makes only when a
    pod is created, too late for the job, and that a CEL rule cannot make within its cost
    budget because the upstream PodSpec lists carry no maxItems.
    """
    value = replica.get("template")
    path = replica.at("template")
    if value is None:
        replica.error("template", "Required value")
        return {}
    if not isinstance(value, Mapping):
        replica.error("template", f"must be of type object, not {_kind(value)}")
        return {}
    pod = value.get("spec")
    if not isinstance(pod, Mapping):
        replica.errors.append(FieldError(f"{path}.spec", "Required value: a pod template needs a spec"))
        return dict(value)
    containers = pod.get("containers")
    if containers is None:
        replica.errors.append(FieldError(f"{path}.spec.containers", "Required value"))
        return dict(value)
    if not isinstance(containers, list) or not containers:
        replica.errors.append(
            FieldError(
                f"{path}.spec.containers", "should have at least 1 items: a pod needs at least one container"
            )
        )
        return dict(value)
    _check_containers(pod, f"{path}.spec", replica.errors)
    return dict(value)


def _check_containers(pod: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    seen: dict[str, str] = {}  # container name -> the list it is in
    volumes = {v.get("name") for v in _objects(pod.get("volumes"))}
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(_objects(pod.get(kind))):
            where = f"{path}.{kind}[{i}]"
            cname = c.get("name")
            if not isinstance(cname, str):
                errors.append(FieldError(f"{where}.name", "Required value"))
                continue
            if not _REPLICA_NAME.fullmatch(cname) or len(cname) > 63:
                errors.append(
                    FieldError(f"{where}.name", f"[container name] {_q(cname)} must be a DNS-1123 label")
                )
            if seen.get(cname) == kind:  # the apiserver refuses this one too: name is the list's key
                errors.append(FieldError(where, f'Duplicate value: {{"name":{_q(cname)}}}'))
            elif cname in seen:
                errors.append(
                    FieldError(
                        f"{where}.name",
                        f"[duplicate container name] {_q(cname)} is both an init container and a container",
                    )
                )
            seen[cname] = kind
            for j, mount in enumerate(_objects(c.get("volumeMounts"))):
                if mount.get("name") not in volumes:
                    errors.append(
                        FieldError(
                            f"{where}.volumeMounts[{j}].name",
                            f"[unknown volume] {_q(mount.get('name'))} is not a volume "
                            "of the pod (spec.volumes)",
                        )
                    )


def _objects(value: object) -> list[Mapping[str, Any]]:
    """_objects keeps the mappings of a list, tolerating null and junk the apiserver refuses anyway."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


# --- cross-field checks over the whole job -----------------------------------------------------


def _check_pod_names(job_name: str, spec: JobSpec, errors: list[FieldError]) -> None:
    """_check_pod_names: the longest pod name of every replica must fit a DNS label."""
    for r in spec.replicas:
        last = max(r.replicas, r.max_replicas) - 1
        length = pod_name_length(job_name, r.name, last)
        if length > MAX_POD_NAME_LENGTH:
            errors.append(
                FieldError(
                    "metadata.name",
                    "the job name and a replica name make pod names (<job>-<replica>-xxxxx-<index>) longer "
                    f"than {MAX_POD_NAME_LENGTH} characters: {job_name}-{r.name}-xxxxx-{last} has {length}; "
                    "shorten the job or replica name",
                )
            )
