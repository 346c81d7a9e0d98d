"""The pod template of a replica spec: its shape, and the checks only the model makes (MODEL_ONLY_CHECKS).

Pure. Part of ``parse_job`` (aitj.core.api.validation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aitj.core.api.names import is_dns1123_label
from aitj.core.api.reader import FieldError, Fields, json_kind, quote

# The checks parse_job makes that the apiserver does not (docs/api.md explains each). Every
# FieldError from them carries one of these tags at the start of its message, so a caller (and
# the end-to-end oracle) can tell a model-only refusal from one admission also makes.
MODEL_ONLY_CHECKS = {
    "[duplicate container name]": "no init container has the name of a container",
    "[unknown volume]": "every volumeMount names a volume of the pod",
    "[container name]": "container names are DNS-1123 labels",
    "[GPU quantity]": "with plugin.discovery, GPU quantities are whole numbers written in digits",
    "[stepPattern]": "spec.progress.stepPattern is a regular expression Python's re compiles",
}


def parse_template(replica: Fields) -> dict[str, Any]:
    """parse_template checks the template's shape; the apiserver validates the full PodTemplateSpec.

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
        replica.error("template", f"must be of type object, not {json_kind(value)}")
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
    """_check_containers: container names, unique across both lists; volume mounts name volumes."""
    seen: dict[str, str] = {}  # container name -> the list it is in
    volumes = {v.get("name") for v in _objects(pod.get("volumes"))}
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(_objects(pod.get(kind))):
            where = f"{path}.{kind}[{i}]"
            cname = c.get("name")
            if not isinstance(cname, str):
                errors.append(FieldError(f"{where}.name", "Required value"))
                continue
            if not is_dns1123_label(cname):
                errors.append(
                    FieldError(f"{where}.name", f"[container name] {quote(cname)} must be a DNS-1123 label")
                )
            if seen.get(cname) == kind:  # the apiserver refuses this one too: name is the list's key
                errors.append(FieldError(where, f'Duplicate value: {{"name":{quote(cname)}}}'))
            elif cname in seen:
                errors.append(
                    FieldError(
                        f"{where}.name",
                        f"[duplicate container name] {quote(cname)} is both an init container "
                        "and a container",
                    )
                )
            seen[cname] = kind
            for j, mount in enumerate(_objects(c.get("volumeMounts"))):
                if mount.get("name") not in volumes:
                    errors.append(
                        FieldError(
                            f"{where}.volumeMounts[{j}].name",
                            f"[unknown volume] {quote(mount.get('name'))} is not a volume "
                            "of the pod (spec.volumes)",
                        )
                    )


def _objects(value: object) -> list[Mapping[str, Any]]:
    """_objects keeps the mappings of a list, tolerating null and junk the apiserver refuses anyway."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]
