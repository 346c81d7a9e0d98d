"""Keeping a pod off given nodes: a required node affinity on the node's name.

Pure. The planner keeps every pod it creates off the nodes that show a fault signal
(``aitj.core.nodesignals``): the scheduler knows nothing of a ``KernelDeadlock`` condition and
would put a replacement straight back on the node its predecessor was lost on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NODE_NAME_FIELD = "metadata.name"  # the one field a nodeSelectorTerm's matchFields may name


def avoid_nodes(pod: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """avoid_nodes: ``pod`` (a rendered pod, changed in place and returned) kept off the nodes
    ``names``: ``metadata.name NotIn names`` is added to every term of its required node
    affinity (the terms are ORed, so each must exclude them), or is its one term if it has none.
    By name, not by the ``kubernetes.io/hostname`` label, which need not equal it. Nothing
    changes when ``names`` is empty."""
    if not names:
        return pod
    spec = pod.setdefault("spec", {})
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms: list[dict[str, Any]] = required.get("nodeSelectorTerms") or [{}]
    exclusion = {"key": NODE_NAME_FIELD, "operator": "NotIn", "values": list(names)}
    required["nodeSelectorTerms"] = [
        {**term, "matchFields": [*(term.get("matchFields") or []), dict(exclusion)]} for term in terms
    ]
    return pod
