"""A minimal stand-in for Volcano's PodGroup CRD (``scheduling.volcano.sh/v1beta1``), written by
hand from Volcano's documented API: the group, version, kind, plural and scope, and the spec
fields the operator writes (``minMember``, ``minResources``, ``queue``, ``priorityClassName``)
with their types, so the apiserver checks what the operator sends. The real CRD belongs to
Volcano's install and carries much more (status, network topology, sub-groups); no Volcano
scheduler runs here, so pods that name ``schedulerName: volcano`` stay Pending.

Installed by tests/e2e/test_volcano.py only; the default test cluster has no Volcano, which is
what "nothing changes without a gang scheduler" is tested against.
"""

from __future__ import annotations

import json
from typing import Any

from aitj.core.render import volcano
from tests.clusters import KubeCluster
from tests.waiting import wait_for

NAME = f"{volcano.PODGROUP_PLURAL}.{volcano.PODGROUP_GROUP}"


def podgroup_crd() -> dict[str, Any]:
    """podgroup_crd: the namespaced PodGroup kind with a typed spec and a free-form status."""
    quantity: dict[str, Any] = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    spec = {
        "type": "object",
        "properties": {
            "minMember": {"type": "integer", "format": "int32", "minimum": 0},
            "minTaskMember": {
                "type": "object",
                "additionalProperties": {"type": "integer", "format": "int32"},
            },
            "queue": {"type": "string", "maxLength": 253},
            "priorityClassName": {"type": "string", "maxLength": 253},
            "minResources": {"type": "object", "additionalProperties": quantity},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": volcano.PODGROUP_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": volcano.PODGROUP_KIND,
                "plural": volcano.PODGROUP_PLURAL,
                "singular": "podgroup",
                "listKind": "PodGroupList",
                "shortNames": ["pg"],
            },
            "versions": [
                {
                    "name": volcano.PODGROUP_VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def served(cluster: KubeCluster) -> bool:
    return cluster.kubectl("get", NAME, "-A", check=False).returncode == 0


def install(cluster: KubeCluster) -> None:
    """install: the PodGroup CRD applied, and served."""
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(podgroup_crd()))
    wait_for(lambda: served(cluster), 30, "Volcano's PodGroup served")


def uninstall(cluster: KubeCluster) -> None:
    """uninstall: the CRD deleted (its PodGroups with it), and no longer served."""
    cluster.kubectl("delete", "crd", NAME, "--ignore-not-found", "--wait=true")
    wait_for(lambda: not served(cluster), 60, "Volcano's PodGroup no longer served")
