"""ValidatingAdmissionPolicies the end-to-end tests put in front of the operator's status writes:
a real apiserver refusing them, for tests of what the operator does then."""

from __future__ import annotations

import json
from typing import Any

from aitj.core import api
from tests.clusters import KubeCluster


def status_refusal(name: str, namespace: str, expression: str, message: str) -> list[dict[str, Any]]:
    """status_refusal: a policy ``name`` that refuses the status writes of the AITrainingJobs of
    ``namespace`` for which the CEL ``expression`` is false, saying ``message``, and its binding
    (deleting the binding lifts it)."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [api.GROUP],
                        "apiVersions": ["*"],
                        "operations": ["UPDATE"],
                        "resources": [f"{api.PLURAL}/status"],
                    }
                ]
            },
            "validations": [{"expression": expression, "message": message}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    return [policy, binding]


def apply(cluster: KubeCluster, documents: list[dict[str, Any]]) -> None:
    """apply: kubectl apply the documents."""
    cluster.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(d) for d in documents))
