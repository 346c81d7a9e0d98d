"""Node health signals: the node conditions and taints the operator reads as a node failure.

Pure. Kubernetes itself only says a node is not Ready; other components know more and say it
on the Node: the Node Problem Detector sets conditions such as ``KernelDeadlock=True``, a GPU
health agent its own condition, an admin the ``node.kubernetes.io/out-of-service`` taint. Which
of these mean "the pods here are lost" is the cluster admin's call, so the operator is told
(``aitj run --node-fault-condition TYPE=STATUS``, ``--node-fault-taint KEY``; the out-of-service
taint always counts). A pod on a node that shows one is nodeNotReady
(``aitj.core.policy.node_failure``), and no pod of a job is created on such a node while it
shows one (``aitj.core.render.avoid``). docs/node-health.md says it for users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from aitj.core.observed import NodeView

OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
CONDITION_STATUSES = ("True", "False", "Unknown")

# A condition type: free text to the API, in practice a CamelCase word, maybe prefixed
# (``example.com/GPUHealthy``). A taint key: a qualified name (``prefix/name``).
_CONDITION_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_TAINT_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")


@dataclass(frozen=True)
class NodeSignals:
    """NodeSignals: what makes a node faulty besides Ready: conditions as (type, status) pairs,
    and taint keys (any effect)."""

    conditions: frozenset[tuple[str, str]] = frozenset()
    taints: frozenset[str] = frozenset({OUT_OF_SERVICE_TAINT})

    @classmethod
    def parse(cls, conditions: Iterable[str] = (), taints: Iterable[str] = ()) -> NodeSignals:
        """parse: the signals of ``--node-fault-condition TYPE=STATUS`` and ``--node-fault-taint
        KEY`` options, the out-of-service taint included. Raises ValueError naming what is wrong."""
        return cls(
            frozenset(parse_condition(c) for c in conditions),
            frozenset({OUT_OF_SERVICE_TAINT, *(parse_taint(t) for t in taints)}),
        )


DEFAULT_SIGNALS = NodeSignals()  # what an operator started without options reads


def parse_condition(text: str) -> tuple[str, str]:
    """parse_condition: ``KernelDeadlock=True`` -> ("KernelDeadlock", "True")."""
    kind, sep, status = text.strip().partition("=")
    if not sep or not _CONDITION_TYPE.match(kind) or status not in CONDITION_STATUSES:
        raise ValueError(
            f"{text!r}: expected TYPE=STATUS, a node condition type and True, False or Unknown "
            "(e.g. KernelDeadlock=True)"
        )
    if kind == "Ready":
        raise ValueError(f"{text!r}: the Ready condition is always read (a node not Ready is nodeNotReady)")
    return kind, status


def parse_taint(text: str) -> str:
    """parse_taint: a taint key (``example.com/gpu-unhealthy``), checked as Kubernetes checks one."""
    key = text.strip()
    if not _TAINT_KEY.match(key):
        raise ValueError(f"{text!r}: expected a taint key, [prefix/]name (e.g. {OUT_OF_SERVICE_TAINT})")
    return key


@dataclass(frozen=True)
class NodeFault:
    """NodeFault: why a node is faulty (``signals``: each signal it shows, as people read it)
    and since when (the earliest lastTransitionTime / timeAdded given; None if none is)."""

    node: str
    signals: tuple[str, ...]
    at: datetime | None

    @property
    def description(self) -> str:
        """description: ``node n1: KernelDeadlock=True (DockerHung)``: the failure's text."""
        return f"node {self.node}: {', '.join(self.signals)}"


def node_fault(node: NodeView, signals: NodeSignals) -> NodeFault | None:
    """node_fault: the signals among ``signals`` that ``node`` shows, None if it shows none."""
    shown: list[str] = []
    times: list[datetime] = []
    for c in node.conditions:
        if (c.type, c.status) in signals.conditions:
            shown.append(f"{c.type}={c.status}" + (f" ({c.reason})" if c.reason else ""))
            times += [c.since] if c.since is not None else []
    for t in node.taints:
        if t.key in signals.taints:
            shown.append(f"taint {t.key}" + (f":{t.effect}" if t.effect else ""))
            times += [t.added] if t.added is not None else []
    if not shown:
        return None
    return NodeFault(node.name, tuple(shown), min(times) if times else None)


def faulty_nodes(nodes: Mapping[str, NodeView], signals: NodeSignals) -> tuple[str, ...]:
    """faulty_nodes: the names of the nodes that show a signal, sorted. One pass over every
    node: the planner asks only when it creates pods."""
    return tuple(
        sorted(name for name, n in nodes.items() if (n.conditions or n.taints) and node_fault(n, signals))
    )
