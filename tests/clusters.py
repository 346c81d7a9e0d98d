"""Test cluster backends: an existing cluster, pytest-kind, or the local control plane.

Chosen by environment, in this order:
- ``AITJ_KUBECONFIG=/path``: use that cluster as it is (nothing is started or stopped);
- ``AITJ_TEST_BACKEND=kind``: pytest-kind's ``kind_cluster`` (needs Docker and kind);
- otherwise the local control plane (``aitj.devcluster``), started for the session as the
  cluster named ``pytest`` (``AITJ_TEST_CLUSTER`` names another, so two checkouts can test at
  once) on free ports and stopped at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from aitj.controller.kubeclient import api_client
from aitj.devcluster.cluster import ClusterConfig, LocalCluster, free_base
from aitj.devcluster.versions import run_kubectl

TEST_NODES = 4
TEST_PROFILE = "cce"


@dataclass
class KubeCluster:
    """What a test needs of a cluster, whichever backend runs it."""

    kubeconfig: Path
    local: LocalCluster | None = None
    _api: client.ApiClient | None = field(default=None, repr=False)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = run_kubectl(self.kubeconfig, *args, input=input)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc

    def new_api(self) -> client.ApiClient:
        """new_api: a client of its own for the cluster, made as the operator makes one."""
        return api_client(self.kubeconfig)

    @property
    def api(self) -> client.ApiClient:
        if self._api is None:
            self._api = self.new_api()
        return self._api

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api)


def free_port() -> int:
    """free_port is a loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_local() -> KubeCluster:
    local = LocalCluster(os.environ.get("AITJ_TEST_CLUSTER", "pytest"))
    local.down()  # a leftover from an interrupted run
    cfg = ClusterConfig(
        nodes=TEST_NODES,
        node_profile=TEST_PROFILE,
        base_port=free_base(17443),
        node_grace_seconds=16,
        node_lease_seconds=8,
    )
    local.up(cfg, say=lambda m: print(m, flush=True))
    return KubeCluster(local.kubeconfig, local)


def existing() -> KubeCluster | None:
    path = os.environ.get("AITJ_KUBECONFIG")
    return KubeCluster(Path(path)) if path else None
