"""Validating a manifest: ``parse_job`` and ``update_errors``.

Pure. ``parse_job`` turns the raw object (a kopf body or a YAML document) into a frozen ``Job``
(aitj.core.api.model), applying the CRD's defaults, and refuses a bad one with ``InvalidJob``:
every ``FieldError`` names the field (``spec.replicaSpecs.trainer.minReplicas``). It repeats
everything the apiserver checks on our own fields, with the apiserver's wording where it has
one, plus a few checks only the model makes (``MODEL_ONLY_CHECKS``, aitj.core.api.template).
``update_errors`` is the twin of the CRD's transition rules (what may change on a live job).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aitj.core.api.job import Job
from aitj.core.api.model import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_FAULT_TOLERANT,
    DEFAULT_JOB_COMPLETE_POLICY,
    DEFAULT_JOB_FAIL_POLICY,
    DEFAULT_REPLICAS,
    DEFAULT_SUSPEND,
    JOB_POLICIES,
    CleanPodPolicy,
    FrameworkType,
    JobSpec,
    Policy,
    Priority,
    ReplicaSpec,
    ReplicaType,
)
from aitj.core.api.names import (
    API_VERSION,
    KIND,
    MAX_NAME_LENGTH,
    MAX_PLUGIN_ITEM_LENGTH,
    MAX_PLUGIN_ITEMS,
    MAX_POD_NAME_LENGTH,
    MAX_REPLICA_NAME_LENGTH,
    MAX_REPLICA_SPECS,
    MAX_REPLICAS,
    MAX_SECONDS,
    NAME_PART_LENGTH,
    is_dns1035_label,
    is_dns1123_label,
    pod_name_length,
)
from aitj.core.api.progress import parse_progress
from aitj.core.api.reader import FieldError, Fields, integral, json_kind, quote
from aitj.core.api.replica import parse_replica
from aitj.core.api.status import JobStatus
from aitj.core.wire import as_list, mapping

# What plugin.discovery counts as a pod's GPUs (its Horovod slots): the names of
# aitj.core.render.discovery.is_gpu_resource, which this layer sits below and cannot import
# (tests/unit/test_gpu_quantities.py checks the two agree).
_GPU_RESOURCE = re.compile(r"nvidia\.com/gpu|baidu\.com/[A-Za-z0-9_.-]+_cgpu")
_WHOLE = re.compile(r"[0-9]+")

# plugin.discovery's ConfigMap must fit the apiserver's limit on a ConfigMap's data (1 MiB). The
# bound is on the longest lines the operator writes (aitj.core.render.discovery and .volcano):
# each pod the job may have (max of replicas and maxReplicas, per replica) is written at most
# three times, as "<host>:<slots>\n" in ``hosts``, "<host>\n" in its replica's host file and
# "<host>," in VC_<REPLICA>_HOSTS, where <host> is "<pod>.<job>" and a replica's longest pod
# name is "<job>-<replica>-xxxxx-<last index>" (aitj.core.naming). Counting master pods as if
# they were in ``hosts`` too only errs on the safe side. A pod's slots (its GPUs) are assumed
# to take at most SLOT_DIGITS digits; the script, the keys, the wanted count and the
# VC_<REPLICA>_NUM values fit in DISCOVERY_RESERVE. hack/gen_crd.py writes the same sum as the
# CRD's CEL rule.
CONFIGMAP_MAX_BYTES = 1024 * 1024
DISCOVERY_RESERVE = 8 * 1024
DISCOVERY_BUDGET = CONFIGMAP_MAX_BYTES - DISCOVERY_RESERVE
SLOT_DIGITS = 4
HOST_EXTRA = NAME_PART_LENGTH + 4  # the three '-' of the pod name and the '.' before the job's
LINE_EXTRA = 3 + 1 + SLOT_DIGITS  # a separator in each list, the ':' and the slots
DISCOVERY_TOO_BIG = (
    "plugin.discovery's host lists for this many pods would not fit a ConfigMap (1 MiB): ask for "
    "fewer pods (replicas, maxReplicas) or shorten the job and replica names"
)


def discovery_bytes(job_name: str, replica: str, pods: int) -> int:
    """discovery_bytes: the most bytes ``pods`` pods of ``replica`` take in the job's discovery
    ConfigMap (the lines the comment above counts)."""
    host = 2 * len(job_name) + len(replica) + HOST_EXTRA + len(str(pods - 1))
    return pods * (3 * host + LINE_EXTRA)


class InvalidJob(ValueError):
    """InvalidJob carries every FieldError found in a manifest, not just the first."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("invalid AITrainingJob:\n" + "\n".join(f"  {e}" for e in self.errors))


def parse_job(obj: Mapping[str, Any]) -> Job:
    """parse_job validates a raw AITrainingJob and returns the typed, defaulted Job."""
    errors: list[FieldError] = []
    if not isinstance(obj, Mapping):
        raise InvalidJob([FieldError("<root>", f"must be an object, not {json_kind(obj)}")])
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = obj.get(key)
        if value is not None and value != expected:
            errors.append(
                FieldError(key, f"Unsupported value: {quote(value)}: supported values: {quote(expected)}")
            )
    meta = mapping(obj.get("metadata"))
    name = _job_name(meta, errors)
    spec = _parse_spec(obj.get("spec"), errors)
    specs = mapping(mapping(obj.get("spec")).get("replicaSpecs"))
    if name:
        _check_pod_names(name, specs, errors)
    if spec is not None and spec.discovery:
        _check_gpu_quantities(specs, errors)
        _check_discovery_size(name, specs, errors)
    if errors or spec is None:
        raise InvalidJob(errors)
    return _job(meta, name, spec, obj.get("status"))


def parse_again(obj: Mapping[str, Any], before: Mapping[str, Any], parsed: Job) -> Job | None:
    """parse_again: ``parse_job(obj)`` made from ``parsed``, the parse of ``before``, when the
    two differ only where nothing is validated (the status, the resourceVersion, annotations,
    the generation): the spec, the name, apiVersion and kind equal. None otherwise (parse
    ``obj`` whole). Every status write makes a new version of the job, and parsing its spec
    again each time was most of what a pass cost besides planning."""
    meta, old = mapping(obj.get("metadata")), mapping(before.get("metadata"))
    if (
        obj.get("spec") != before.get("spec")
        or meta.get("name") != old.get("name")
        or (obj.get("apiVersion"), obj.get("kind")) != (before.get("apiVersion"), before.get("kind"))
    ):
        return None
    status = JobStatus.from_json_again(obj.get("status"), before.get("status"), parsed.status)
    return _job(meta, parsed.name, parsed.spec, status)


def _job(meta: Mapping[str, Any], name: str, spec: JobSpec, status: object) -> Job:
    """_job: the Job of a valid ``spec``, its ``meta`` and ``status`` (JSON, or decoded)."""
    generation = meta.get("generation")
    return Job(
        namespace=str(meta.get("namespace") or "default"),
        name=name,
        uid=str(meta.get("uid") or ""),
        generation=generation if isinstance(generation, int) else 0,
        spec=spec,
        status=status if isinstance(status, JobStatus) else JobStatus.from_json(status),
        resource_version=str(meta.get("resourceVersion") or ""),
        annotations={str(k): v for k, v in mapping(meta.get("annotations")).items() if isinstance(v, str)},
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


# --- the job -----------------------------------------------------------------------------------


def _job_name(meta: Mapping[str, Any], errors: list[FieldError]) -> str:
    """_job_name checks metadata.name: its headless Service needs a DNS-1035 label."""
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append(FieldError("metadata.name", "Required value: name is required"))
        return ""
    if len(name) > MAX_NAME_LENGTH:
        errors.append(FieldError("metadata.name", f"Too long: may not be more than {MAX_NAME_LENGTH} bytes"))
    elif not is_dns1035_label(name):
        errors.append(
            FieldError(
                "metadata.name",
                f"job name {quote(name)} must be a DNS-1035 label (lower-case letters, digits and '-', "
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
    "suspend",
    "replicaSpecs",
    "progress",
)


def _parse_spec(value: object, errors: list[FieldError]) -> JobSpec | None:
    if value is None:
        errors.append(FieldError("spec", "Required value"))
        return None
    f = Fields(value, "spec", errors, _SPEC_FIELDS)
    framework = f.optional_choice("frameworkType", tuple(FrameworkType))
    priority = f.optional_choice("priority", tuple(Priority))
    ssh, discovery = _parse_plugin(f)
    names = [str(k) for k in specs] if isinstance(specs := f.get("replicaSpecs"), Mapping) else []
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
        suspend=f.boolean("suspend", DEFAULT_SUSPEND),
        progress=parse_progress(f.get("progress"), names, errors),
    )


def _job_policy(f: Fields, key: str, default: Policy) -> Policy:
    """_job_policy reads a job-level policy; Rank0 gets its own message, it is a common slip."""
    if f.get(key) == Policy.RANK0.value:
        f.error(
            key,
            'Unsupported value: "Rank0": supported values: "All", "Any", "None" '
            f"(Rank0 is allowed only in spec.replicaSpecs.<name>.{key})",
        )
        return default
    return f.choice(key, JOB_POLICIES, default)


def _parse_plugin(spec: Fields) -> tuple[bool, bool]:
    """_parse_plugin: a plugin is on when its key is present, even as ``[""]`` (CCE) or null."""
    if "plugin" not in spec.data or spec.get("plugin") is None:
        return False, False
    f = Fields(spec.get("plugin"), spec.at("plugin"), spec.errors, ("ssh", "discovery"))
    for key in ("ssh", "discovery"):
        items = f.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            f.error(key, f"must be of type array, not {json_kind(items)}")
            continue
        if len(items) > MAX_PLUGIN_ITEMS:
            f.error(key, f"Too many: {len(items)}: must have at most {MAX_PLUGIN_ITEMS} items")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                f.errors.append(
                    FieldError(f"{f.at(key)}[{i}]", f"must be of type string, not {json_kind(item)}")
                )
            elif len(item) > MAX_PLUGIN_ITEM_LENGTH:
                f.errors.append(
                    FieldError(
                        f"{f.at(key)}[{i}]", f"Too long: may not be more than {MAX_PLUGIN_ITEM_LENGTH} bytes"
                    )
                )
    return "ssh" in f.data, "discovery" in f.data


def _parse_replica_specs(spec: Fields, errors: list[FieldError]) -> tuple[ReplicaSpec, ...]:
    path = spec.at("replicaSpecs")
    value = spec.get("replicaSpecs")
    if value is None:
        errors.append(FieldError(path, "Required value"))
        return ()
    if not isinstance(value, Mapping):
        errors.append(FieldError(path, f"must be of type object, not {json_kind(value)}"))
        return ()
    if not value:
        errors.append(FieldError(path, "should have at least 1 properties: a job needs a replica spec"))
    elif len(value) > MAX_REPLICA_SPECS:
        errors.append(FieldError(path, f"should have at most {MAX_REPLICA_SPECS} properties"))
    replicas: list[ReplicaSpec] = []
    for name, body in value.items():
        name = str(name)
        if not is_dns1123_label(name):
            errors.append(
                FieldError(
                    path,
                    "replica names must be DNS-1123 labels (lower-case letters, digits and '-', at most "
                    f"{MAX_REPLICA_NAME_LENGTH} characters): they are part of pod names; not {quote(name)}",
                )
            )
        replica = parse_replica(name, body, f"{path}.{name}", errors)
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


# --- cross-field checks over the whole job -----------------------------------------------------


def _most_pods(body: object) -> int:
    """_most_pods: the most pods a raw replica spec may have (replicas or maxReplicas; 1 when
    neither is valid), as the CRD's rules read it."""
    raw = mapping(body)
    counts = [integral(raw.get("replicas", DEFAULT_REPLICAS)), integral(raw.get("maxReplicas"))]
    return max([c for c in counts if type(c) is int and 1 <= c <= MAX_REPLICAS] or [1])


def _check_discovery_size(job_name: str, specs: Mapping[str, Any], errors: list[FieldError]) -> None:
    """_check_discovery_size: plugin.discovery's ConfigMap fits, for the most pods the job may
    have (``discovery_bytes``); the twin of the CRD's rule."""
    total = sum(discovery_bytes(job_name, str(name), _most_pods(body)) for name, body in specs.items())
    if total > DISCOVERY_BUDGET:
        errors.append(
            FieldError(
                "spec.replicaSpecs", f"{DISCOVERY_TOO_BIG} (up to {total} bytes; {DISCOVERY_BUDGET} fit)"
            )
        )


def _check_pod_names(job_name: str, specs: Mapping[str, Any], errors: list[FieldError]) -> None:
    """_check_pod_names: the longest pod name of every replica must fit a DNS label. Read from
    the raw specs, as the CRD's rule does, so a replica with another mistake is checked too."""
    for name, body in specs.items():
        last = _most_pods(body) - 1
        length = pod_name_length(job_name, str(name), last)
        if length > MAX_POD_NAME_LENGTH:
            errors.append(
                FieldError(
                    "metadata.name",
                    "the job name and a replica name make pod names (<job>-<replica>-xxxxx-<index>) longer "
                    f"than {MAX_POD_NAME_LENGTH} characters: {job_name}-{name}-xxxxx-{last} has {length}; "
                    "shorten the job or replica name",
                )
            )


def _check_gpu_quantities(specs: Mapping[str, Any], errors: list[FieldError]) -> None:
    """_check_gpu_quantities: with plugin.discovery, every GPU quantity of an app container is a
    whole number written in digits, since discovery lists a pod's GPUs as its Horovod slots
    (``host:<n>``) and refuses anything else. Pod validation refuses a fraction ("1.5") too, but
    only when a pod is created, after discovery has read the template, and it takes "1000m",
    which is no slot count. Read from the raw specs, as ``_check_pod_names`` is."""
    for name, body in specs.items():
        pod = mapping(mapping(mapping(body).get("template")).get("spec"))
        for i, container in enumerate(as_list(pod.get("containers"))):
            resources = mapping(mapping(container).get("resources"))
            for kind in ("limits", "requests"):
                for resource, value in mapping(resources.get(kind)).items():
                    if not _GPU_RESOURCE.fullmatch(str(resource)) or _WHOLE.fullmatch(str(value).strip()):
                        continue
                    errors.append(
                        FieldError(
                            f"spec.replicaSpecs.{name}.template.spec.containers[{i}].resources.{kind}[{resource}]",
                            f"[GPU quantity] {quote(value)} is not a whole number of GPUs: plugin.discovery "
                            "lists a pod's GPUs as its Horovod slots",
                        )
                    )
