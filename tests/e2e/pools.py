"""Nodes of a test's own: a pool reachable through a label no other node has, so a test can pin
its pods to nodes it then breaks, cordons or drains without touching other tests' pods. The
``pool`` fixture (tests/e2e/conftest.py) deletes the nodes afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from aitj.devcluster.nodes import node_manifest, profile
from tests.clusters import KubeCluster
from tests.jobs import Doc, set_path
from tests.waiting import wait_for

POOL_LABEL = "test.aitj.dev/pool"


class Pool:
    """Nodes of a test's own, reachable through a label no other node has."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.cluster = cluster
        self.value = uuid.uuid4().hex[:8]
        self.nodes: list[str] = []

    def add(self, labelled: bool = True) -> str:
        name = f"ft-{uuid.uuid4().hex[:6]}"
        body = node_manifest(name, profile("cce"))
        if labelled:
            body["metadata"]["labels"][POOL_LABEL] = self.value
        self.cluster.core.create_node(body)
        self.nodes.append(name)
        wait_for(lambda: self.cluster.core.read_node(name).status.conditions, 30, f"node {name} initialised")
        return name

    def add_ready(self) -> str:
        """add_ready adds a pool node that pods can use only once it is Ready: a kwok node starts
        without a Ready condition and without the not-ready taint a kubelet registers with, so a
        pod bound to it at once would look like one on a node that is not Ready."""
        node = self.add(labelled=False)

        def ready() -> bool:
            conditions = self.cluster.core.read_node(node).status.conditions or []
            return any(c.type == "Ready" and c.status == "True" for c in conditions)

        wait_for(ready, 30, f"node {node} Ready")
        self.label(node, on=True)
        return node

    def label(self, node: str, on: bool) -> None:
        self.cluster.core.patch_node(node, {"metadata": {"labels": {POOL_LABEL: self.value if on else None}}})

    def pin(self) -> Callable[[Doc], None]:
        return set_path("spec.replicaSpecs.trainer.template.spec.nodeSelector", {POOL_LABEL: self.value})
