"""Stand-ins for the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule), so the
``monitoring`` overlay applies on the test cluster: same group, version, kinds and scope, a
schema that keeps every field. The real CRDs are large and belong to the Prometheus Operator's
install; what the apiserver checks here is that the overlay's objects are well-formed and land
in the right namespace, while dashboards/ and promtool check their content."""

from __future__ import annotations

import json
from typing import Any

from tests.clusters import KubeCluster
from tests.waiting import wait_for

GROUP = "monitoring.coreos.com"
KINDS = (("ServiceMonitor", "servicemonitors"), ("PrometheusRule", "prometheusrules"))


def crd(kind: str, plural: str) -> dict[str, Any]:
    """crd: a namespaced v1 CRD of ``kind`` that keeps any spec."""
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def served(cluster: KubeCluster, plural: str) -> bool:
    return cluster.kubectl("get", f"{plural}.{GROUP}", "-A", check=False).returncode == 0


def install(cluster: KubeCluster) -> None:
    """install: the stand-in CRDs applied, and served."""
    items = {"apiVersion": "v1", "kind": "List", "items": [crd(k, p) for k, p in KINDS]}
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(items))
    wait_for(lambda: all(served(cluster, plural) for _, plural in KINDS), 30, "the monitoring kinds served")
