"""Keeping a pod off given nodes: a required node affinity term, ANDed into the template's.

Pure. ``render_pod`` applies both, from its ``Placement``; two ways to name a node:
- by its name (``avoid_names``, ``metadata.name NotIn``): the nodes that show a fault signal
  (``aitj.core.nodesignals``): the scheduler knows nothing of a ``KernelDeadlock`` condition
  and would put a replacement straight back on the node its predecessor was lost on;
- by its ``kubernetes.io/hostname`` label (``exclude_nodes``): the nodes a rule's
  ``excludeNodeSeconds`` keeps a replacement off, as the API documents it.
The scheduler ORs a required affinity's nodeSelectorTerms, so the exclusion is ANDed into every
one of them (none dropped); without terms it is the only one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NODE_NAME_FIELD = "metadata.name"  # the one field a nodeSelectorTerm's matchFields may name
HOSTNAME_LABEL = "kubernetes.io/hostname"


def avoid_nodes(pod: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """avoid_nodes: ``pod`` (a rendered pod, changed in place and returned) kept off the nodes
    ``names`` by name (``avoid_names``)."""
    if names:
        avoid_names(pod.setdefault("spec", {}), names)
    return pod


def avoid_names(spec: dict[str, Any], names: Sequence[str]) -> None:
    """avoid_names keeps the pod of ``spec`` off the nodes ``names`` by name (``matchFields``).
    By name, not by the ``kubernetes.io/hostname`` label, which need not equal it. Nothing
    changes when ``names`` is empty."""
    if names:
        _and_into_terms(spec, "matchFields", NODE_NAME_FIELD, names)


def exclude_nodes(spec: dict[str, Any], nodes: Sequence[str]) -> None:
    """exclude_nodes keeps the pod of ``spec`` off ``nodes``: a required
    ``kubernetes.io/hostname NotIn`` expression (``matchExpressions``), nodes sorted, once each."""
    if nodes:
        _and_into_terms(spec, "matchExpressions", HOSTNAME_LABEL, sorted(set(nodes)))


def _and_into_terms(spec: dict[str, Any], kind: str, key: str, values: Sequence[str]) -> None:
    """_and_into_terms: ``key NotIn values`` added to the ``kind`` list of every nodeSelectorTerm
    of ``spec``'s required node affinity (new term dicts: a template's are never changed)."""
    exclusion = {"key": key, "operator": "NotIn", "values": list(values)}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms: list[dict[str, Any]] = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {**term, kind: [*(term.get(kind) or []), dict(exclusion)]} for term in terms
    ]
