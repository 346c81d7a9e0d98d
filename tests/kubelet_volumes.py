"""What a container sees of its ConfigMap volumes, as the kubelet lays them out, computed
purely from the pod's spec and the ConfigMaps' data (kwok runs no kubelet, so the e2e tests
read files back this way too).

The kubelet's rules for a ``configMap`` volume: with ``items``, each item's ``key`` is written
at its ``path`` (a missing key fails the mount, unless the volume is ``optional``); without,
every key is written under its own name. A volume mount puts the volume at ``mountPath``
(``subPath`` mounts, which this project does not render, are refused here).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any


class MountFailed(AssertionError):
    """The kubelet would not mount the volume: the pod would not start."""


def volume_files(volume: Mapping[str, Any], data: Mapping[str, str] | None) -> dict[str, str]:
    """volume_files: relative path -> content of a configMap volume, given the ConfigMap's
    ``data`` (None: the ConfigMap does not exist)."""
    source = volume["configMap"]
    optional = bool(source.get("optional"))
    if data is None:
        if optional:
            return {}
        raise MountFailed(f"configmap {source['name']!r} not found")
    items = source.get("items")
    if not items:
        return dict(data)
    out: dict[str, str] = {}
    for item in items:
        if item["key"] not in data:
            if optional:
                continue
            raise MountFailed(f"configmap {source['name']!r} has no key {item['key']!r}")
        out[item["path"]] = data[item["key"]]
    return out


def container_files(
    pod: Mapping[str, Any], container: str, configmaps: Mapping[str, Mapping[str, str]]
) -> dict[str, str]:
    """container_files: absolute path -> content of every file ``container`` of ``pod`` sees
    through its configMap volumes (``configmaps``: name -> data, the pod's namespace)."""
    spec = pod["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes") or [] if "configMap" in v}
    (found,) = [c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] == container]
    out: dict[str, str] = {}
    for mount in found.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            continue
        if mount.get("subPath"):
            raise MountFailed("subPath mounts are not modelled")
        data = configmaps.get(volume["configMap"]["name"])
        for path, content in volume_files(volume, data).items():
            out[posixpath.join(mount["mountPath"], path)] = content
    return out


def container_env(
    pod: Mapping[str, Any], container: str, configmaps: Mapping[str, Mapping[str, str]]
) -> dict[str, str]:
    """container_env: the environment ``container`` of ``pod`` starts with, as the kubelet
    resolves it then: literal values, and ``configMapKeyRef`` values read from ``configmaps``
    at that moment (a missing key fails the start, unless ``optional``). ``$(VAR)`` expansion
    and other sources are not modelled."""
    spec = pod["spec"]
    (found,) = [c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] == container]
    out: dict[str, str] = {}
    for var in found.get("env") or []:
        ref = (var.get("valueFrom") or {}).get("configMapKeyRef")
        if ref is None:
            out[var["name"]] = var.get("value", "")
            continue
        data = configmaps.get(ref["name"])
        if data is None or ref["key"] not in data:
            if ref.get("optional"):
                continue
            raise MountFailed(f"env {var['name']}: configmap {ref['name']!r} key {ref['key']!r} not found")
        out[var["name"]] = data[ref["key"]]
    return out
