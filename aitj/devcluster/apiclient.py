"""Talking to the local control plane over HTTP: the admin's requests and the health checks.

The standard library only (no kubernetes client): ``cluster up`` asks these questions before
the apiserver serves anything a client would load, and many times a second while it waits.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from aitj.devcluster.config import ClusterError, Ports


class AdminClient:
    """AdminClient: requests to the apiserver at ``server`` as the cluster's admin, with the
    client certificate and CA in ``pki_dir``."""

    def __init__(self, server: str, pki_dir: Path) -> None:
        self.server = server
        self.pki = pki_dir

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def get(self, path: str) -> Any:
        """get: the decoded answer, or None if there is none (not up yet, refused, an error)."""
        try:
            return self.request("GET", path)
        except (ClusterError, OSError):
            return None

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Any:
        """request sends ``body`` as JSON (a PATCH names its kind of patch in ``content_type``);
        an HTTP error is a ClusterError with the apiserver's words."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.server + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(req, context=self._ssl(), timeout=5) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise ClusterError(f"{method} {path}: {e.code} {e.read().decode(errors='replace')[:300]}") from e
        text = raw.decode()
        return json.loads(text) if text.startswith("{") else text

    def ready(self) -> bool:
        """ready: the apiserver answers /readyz."""
        return self.get("/readyz") is not None

    def problems(self, ports: Ports, nodes: int) -> list[str]:
        """problems lists what is not ready yet (empty when the cluster is usable), ``nodes``
        being how many Ready nodes it should have."""
        if not self.ready():
            return ["kube-apiserver /readyz"]
        problems = []
        for name, port in (
            ("kube-controller-manager", ports.controller_manager),
            ("kube-scheduler", ports.scheduler),
        ):
            if not http_ok(f"https://127.0.0.1:{port}/healthz", insecure=True):
                problems.append(f"{name} /healthz")
        if self.get("/api/v1/namespaces/default/serviceaccounts/default") is None:
            problems.append("default service account (kube-controller-manager)")
        ready = sum(1 for n in self.nodes() if node_ready(n) == "True" and not tainted_not_ready(n))
        if ready < nodes:
            problems.append(f"nodes ready {ready}/{nodes} (kwok)")
        return problems

    def nodes(self) -> list[dict[str, Any]]:
        """nodes: the Node objects, none if they cannot be listed."""
        items: list[dict[str, Any]] = (self.get("/api/v1/nodes") or {"items": []})["items"]
        return items


def http_ok(url: str, *, insecure: bool = False) -> bool:
    """http_ok: ``url`` answers 200 (``insecure``: without checking its certificate)."""
    ctx = None
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def node_ready(node: dict[str, Any]) -> str:
    """node_ready: the status of the node's Ready condition ("None" when it has none)."""
    for cond in node.get("status", {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return "None"


def tainted_not_ready(node: dict[str, Any]) -> bool:
    """tainted_not_ready: the node still has the not-ready taint it registered with."""
    return any(
        t.get("key") == "node.kubernetes.io/not-ready" for t in node.get("spec", {}).get("taints") or []
    )
