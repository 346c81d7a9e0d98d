"""Running the local control plane: start, wait until healthy, stop.

Every component runs as a background process in its own session, bound to 127.0.0.1, with
its log and pid under the cluster's state folder; ``cluster.json`` there records the ports and
each component's command line, so ``down``, ``status`` and the fault API (which stops and
starts the apiserver) work from any later process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from aitj.devcluster import nodes as nodes_mod
from aitj.devcluster import pki
from aitj.devcluster.build import ensure_built
from aitj.devcluster.versions import (
    KUBERNETES_COMPONENT,
    KWOK_COMPONENT,
    etcd_binary,
    kubectl_binary,
    state_dir,
)

STAGES_DIR = Path(__file__).parent / "stages"
# Start order; stopped in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
DEFAULT_BASE_PORT = 36443
SCHEDULER_NAMES = ("default-scheduler", "volcano")


# Components started by this process, kept so they are reaped when stopped (no zombies, no
# "still running" warnings when a Popen object is collected while its daemon runs on).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class ClusterError(RuntimeError):
    """Something about the local cluster is wrong; the message says what and what to do."""


@dataclass(frozen=True)
class Ports:
    apiserver: int
    etcd: int
    etcd_peer: int
    controller_manager: int
    scheduler: int
    kwok: int

    @classmethod
    def from_base(cls, base: int) -> Ports:
        return cls(base, base + 1, base + 2, base + 3, base + 4, base + 5)

    def by_component(self) -> dict[str, int]:
        return {
            "kube-apiserver": self.apiserver,
            "etcd": self.etcd,
            "etcd (peer)": self.etcd_peer,
            "kube-controller-manager": self.controller_manager,
            "kube-scheduler": self.scheduler,
            "kwok": self.kwok,
        }


@dataclass(frozen=True)
class ClusterConfig:
    nodes: int = 3
    node_profile: str = nodes_mod.DEFAULT_PROFILE
    base_port: int = DEFAULT_BASE_PORT
    # How long kube-controller-manager waits for a silent node before marking it Unknown.
    node_grace_seconds: int = 20
    # kwok renews each node's Lease every quarter of this.
    node_lease_seconds: int = 8


class LocalCluster:
    """A named local control plane; its files live in ``versions.state_dir(name)``."""

    def __init__(self, name: str = "default") -> None:
        self.name = name
        self.dir = state_dir(name)
        self.pki = self.dir / "pki"
        self.logs = self.dir / "logs"

    # ---- paths and recorded state -------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def _record(self) -> Path:
        return self.dir / "cluster.json"

    def _pidfile(self, component: str) -> Path:
        return self.dir / "pids" / f"{component}.pid"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def recorded(self) -> dict[str, Any]:
        if not self._record.exists():
            raise ClusterError(f"cluster {self.name!r} has not been set up: run `aitj cluster up`")
        data: dict[str, Any] = json.loads(self._record.read_text())
        return data

    @property
    def ports(self) -> Ports:
        return Ports(**self.recorded()["ports"])

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    # ---- process state -----------------------------------------------------------------
    def pid(self, component: str) -> int | None:
        try:
            pid = int(self._pidfile(component).read_text())
        except (FileNotFoundError, ValueError):
            return None
        return pid if _alive(pid) else None

    def running_components(self) -> list[str]:
        return [c for c in COMPONENTS if self.pid(c) is not None]

    def is_running(self) -> bool:
        return bool(self.running_components())

    # ---- up ------------------------------------------------------------------------------
    def up(self, config: ClusterConfig = ClusterConfig(), *, say: Callable[[str], None] = print) -> Path:
        """up starts every component, creates the nodes and waits until all is healthy."""
        if self.is_running():
            raise ClusterError(
                f"cluster {self.name!r} is already running ({', '.join(self.running_components())}); "
                f"kubeconfig: {self.kubeconfig}. Run `aitj cluster down` first to start it anew."
            )
        prof = nodes_mod.profile(config.node_profile)
        if config.nodes < 0:
            raise ClusterError("--nodes must be 0 or more")
        ports = Ports.from_base(config.base_port)
        _check_ports_free(ports)
        ensure_built(say=say)
        started = time.monotonic()
        self._prepare(config, ports)
        try:
            self._start("etcd")
            self._wait(lambda: _http_ok(f"http://127.0.0.1:{ports.etcd}/health"), "etcd", 30)
            self._start("kube-apiserver")
            self._wait(lambda: self._get("/readyz") is not None, "kube-apiserver", 90)
            for component in ("kube-controller-manager", "kube-scheduler", "kwok"):
                self._start(component)
            self.create_nodes([f"kwok-node-{i}" for i in range(config.nodes)], prof.name)
            self._wait(self._healthy, "the cluster", 90)
        except BaseException:
            self.down()
            raise
        say(
            f"cluster {self.name!r} healthy in {time.monotonic() - started:.1f}s: "
            f"{config.nodes} {prof.name} node(s), apiserver {self.server}"
        )
        return self.kubeconfig

    def _prepare(self, config: ClusterConfig, ports: Ports) -> None:
        for sub in ("pki", "logs", "pids", "etcd", "config"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        # A fresh cluster each time: old etcd data would bring back old objects and node leases.
        shutil.rmtree(self.dir / "etcd" / "data", ignore_errors=True)
        for stale in [*(self.dir / "pids").iterdir(), *self.logs.iterdir()]:
            stale.unlink()
        pki.make_pki(self.pki)
        for ident in pki.IDENTITIES:
            self._write_kubeconfig(self.dir / "config" / f"{ident.file}.kubeconfig", ident.file, ports)
        self._write_kubeconfig(self.kubeconfig, pki.ADMIN.file, ports)
        sched = self.dir / "config" / "scheduler.yaml"
        sched.write_text(yaml.safe_dump(_scheduler_config(self.dir / "config" / "kube-scheduler.kubeconfig")))
        kwok_cfg = self.dir / "config" / "kwok.yaml"
        kwok_cfg.write_text(_kwok_config(config, ports))
        commands = self._commands(config, ports, sched, kwok_cfg)
        self._record.write_text(
            json.dumps({"config": asdict(config), "ports": asdict(ports), "commands": commands}, indent=2)
        )

    def _write_kubeconfig(self, path: Path, cert: str, ports: Ports) -> None:
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": f"aitj-{self.name}",
                    "cluster": {
                        "server": f"https://127.0.0.1:{ports.apiserver}",
                        "certificate-authority": str(self.pki / "ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": cert,
                    "user": {
                        "client-certificate": str(self.pki / f"{cert}.crt"),
                        "client-key": str(self.pki / f"{cert}.key"),
                    },
                }
            ],
            "contexts": [
                {
                    "name": f"aitj-{self.name}",
                    "context": {"cluster": f"aitj-{self.name}", "user": cert, "namespace": "default"},
                }
            ],
            "current-context": f"aitj-{self.name}",
        }
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)

    def _commands(
        self, config: ClusterConfig, ports: Ports, sched: Path, kwok_cfg: Path
    ) -> dict[str, list[str]]:
        p, cfg = self.pki, self.dir / "config"
        k8s = KUBERNETES_COMPONENT
        return {
            "etcd": [
                str(etcd_binary()),
                "--name=aitj",
                f"--data-dir={self.dir / 'etcd' / 'data'}",
                f"--listen-client-urls=http://127.0.0.1:{ports.etcd}",
                f"--advertise-client-urls=http://127.0.0.1:{ports.etcd}",
                f"--listen-peer-urls=http://127.0.0.1:{ports.etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{ports.etcd_peer}",
                f"--initial-cluster=aitj=http://127.0.0.1:{ports.etcd_peer}",
                "--listen-metrics-urls=",
                "--quota-backend-bytes=4294967296",
                # A throwaway dev cluster: skip fsync, it is the slowest part of etcd on small disks.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            "kube-apiserver": [
                str(k8s.binary("kube-apiserver")),
                f"--etcd-servers=http://127.0.0.1:{ports.etcd}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={ports.apiserver}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--client-ca-file={p / 'ca.crt'}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p / 'sa.pub'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                "--v=1",
            ],
            "kube-controller-manager": [
                str(k8s.binary("kube-controller-manager")),
                f"--kubeconfig={cfg / 'kube-controller-manager.kubeconfig'}",
                f"--authentication-kubeconfig={cfg / 'kube-controller-manager.kubeconfig'}",
                f"--authorization-kubeconfig={cfg / 'kube-controller-manager.kubeconfig'}",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports.controller_manager}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={p / 'sa.key'}",
                f"--root-ca-file={p / 'ca.crt'}",
                f"--cluster-signing-cert-file={p / 'ca.crt'}",
                f"--cluster-signing-key-file={p / 'ca.key'}",
                "--allocate-node-cidrs=false",
                "--node-monitor-period=1s",
                f"--node-monitor-grace-period={config.node_grace_seconds}s",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--profiling=false",
                "--v=1",
            ],
            "kube-scheduler": [
                str(k8s.binary("kube-scheduler")),
                f"--config={sched}",
                f"--authentication-kubeconfig={cfg / 'kube-scheduler.kubeconfig'}",
                f"--authorization-kubeconfig={cfg / 'kube-scheduler.kubeconfig'}",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports.scheduler}",
                "--v=1",
            ],
            "kwok": [
                str(KWOK_COMPONENT.binary("kwok")),
                f"--kubeconfig={cfg / 'kwok.kubeconfig'}",
                f"--config={kwok_cfg}",
                f"--server-address=127.0.0.1:{ports.kwok}",
            ],
        }

    def _start(self, component: str) -> None:
        argv = self.recorded()["commands"][component]
        log = self.log(component).open("a")
        log.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: {' '.join(argv)}\n")
        log.flush()
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.dir,
        )
        log.close()
        _CHILDREN[proc.pid] = proc
        self._pidfile(component).write_text(str(proc.pid))

    def start(self, component: str, *, wait: bool = True) -> None:
        """start runs one recorded component again (used by faults to restart the apiserver)."""
        if self.pid(component) is not None:
            return
        self._start(component)
        if wait and component == "kube-apiserver":
            self._wait(lambda: self._get("/readyz") is not None, "kube-apiserver", 90)

    def stop(self, component: str, *, timeout: float = 15) -> None:
        """stop ends one component: SIGTERM, then SIGKILL after timeout."""
        pid = self.pid(component)
        if pid is not None:
            _terminate(pid, timeout)
            child = _CHILDREN.pop(pid, None)
            if child is not None:
                child.wait()
        self._pidfile(component).unlink(missing_ok=True)

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for component in COMPONENTS:
                if self._pidfile(component).exists() and self.pid(component) is None:
                    raise ClusterError(
                        f"{component} exited while waiting for {what}. "
                        f"Last lines of {self.log(component)}:\n{_tail(self.log(component))}"
                    )
            if ready():
                return
            time.sleep(0.25)
        raise ClusterError(f"{what} did not become healthy within {timeout:.0f}s; logs in {self.logs}")

    def _healthy(self) -> bool:
        return not self.unhealthy()

    def unhealthy(self) -> list[str]:
        """unhealthy lists what is not ready yet (empty when the cluster is usable)."""
        problems = []
        if self._get("/readyz") is None:
            return ["kube-apiserver /readyz"]
        ports = self.ports
        for name, port in (
            ("kube-controller-manager", ports.controller_manager),
            ("kube-scheduler", ports.scheduler),
        ):
            if not _http_ok(f"https://127.0.0.1:{port}/healthz", insecure=True):
                problems.append(f"{name} /healthz")
        if self._get("/api/v1/namespaces/default/serviceaccounts/default") is None:
            problems.append("default service account (kube-controller-manager)")
        node_list = self._get("/api/v1/nodes") or {"items": []}
        want = self.recorded()["config"]["nodes"]
        ready = sum(1 for n in node_list["items"] if _node_ready(n) == "True" and not _tainted_not_ready(n))
        if ready < want:
            problems.append(f"nodes ready {ready}/{want} (kwok)")
        return problems

    # ---- nodes -----------------------------------------------------------------------------
    def create_nodes(self, names: list[str], profile: str) -> None:
        prof = nodes_mod.profile(profile)
        for name in names:
            body = nodes_mod.node_manifest(name, prof)
            self._request("POST", "/api/v1/nodes", body)

    # ---- down / status -------------------------------------------------------------------
    def down(self) -> list[str]:
        """down stops every component (reverse order) and returns what was running."""
        was = self.running_components()
        for component in reversed(COMPONENTS):
            self.stop(component)
        return was

    def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "state_dir": str(self.dir)}
        if not self._record.exists():
            info["state"] = "absent"
            return info
        info["kubeconfig"] = str(self.kubeconfig)
        info["server"] = self.server
        info["components"] = {c: self.pid(c) for c in COMPONENTS}
        if not self.is_running():
            info["state"] = "stopped"
            return info
        problems = self.unhealthy()
        info["state"] = "healthy" if not problems else "unhealthy"
        info["problems"] = problems
        node_list = self._get("/api/v1/nodes") or {"items": []}
        info["nodes"] = {n["metadata"]["name"]: _node_ready(n) for n in node_list["items"]}
        return info

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """kubectl runs the cluster's own kubectl against it."""
        proc = subprocess.run(
            [str(kubectl_binary()), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    # ---- HTTP to the apiserver -------------------------------------------------------------
    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _get(self, path: str) -> Any:
        try:
            return self._request("GET", path)
        except (ClusterError, OSError):
            return None

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.server + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, context=self._ssl(), timeout=5) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise ClusterError(f"{method} {path}: {e.code} {e.read().decode(errors='replace')[:300]}") from e
        text = raw.decode()
        return json.loads(text) if text.startswith("{") else text


def _scheduler_config(kubeconfig: Path) -> dict[str, Any]:
    # Two profiles with the default plugins: pods that ask for schedulerName "volcano" (as
    # CCE manifests do) are scheduled too. It does not gang-schedule: each pod is placed alone.
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": n} for n in SCHEDULER_NAMES],
    }


def _kwok_config(config: ClusterConfig, ports: Ports) -> str:
    options = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageAllNodes": False,
            "manageNodesWithLabelSelector": f"{nodes_mod.MANAGED_LABEL}={nodes_mod.MANAGED_VALUE}",
            "nodeLeaseDurationSeconds": config.node_lease_seconds,
            "cidr": "10.244.0.0/16",
            "nodeIP": "10.240.0.1",
            "podPlayStageParallelism": 8,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 4,
            "enablePodsOnNodeSyncStreamWatch": True,
        },
    }
    # Node status heartbeats as often as Lease renewals, so kube-controller-manager never
    # judges a node by a stale status heartbeat alone.
    heartbeat_ms = config.node_lease_seconds * 1000 // 2
    node_stages = (
        (STAGES_DIR / "node.yaml")
        .read_text()
        # kwok's jitter is the upper bound of the delay (below the duration it replaces it).
        .replace("HEARTBEAT_JITTER_MS", str(heartbeat_ms * 5 // 4))
        .replace("HEARTBEAT_MS", str(heartbeat_ms))
    )
    stages = [node_stages, (STAGES_DIR / "pod.yaml").read_text()]
    return "---\n".join([yaml.safe_dump(options), *stages])


def _node_ready(node: dict[str, Any]) -> str:
    for cond in node.get("status", {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return "None"


def _tainted_not_ready(node: dict[str, Any]) -> bool:
    return any(
        t.get("key") == "node.kubernetes.io/not-ready" for t in node.get("spec", {}).get("taints") or []
    )


def port_free(port: int) -> bool:
    """port_free says whether a server could listen on 127.0.0.1:port now. Like the Go servers,
    it may rebind a port whose old connections are in TIME_WAIT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _check_ports_free(ports: Ports) -> None:
    for component, port in ports.by_component().items():
        if not port_free(port):
            raise ClusterError(
                f"port {port} on 127.0.0.1 (for {component}) is already in use. "
                f"Stop what uses it, or choose other ports with --base-port "
                f"(the cluster uses base..base+5)."
            )


def _http_ok(url: str, *, insecure: bool = False) -> bool:
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _terminate(pid: int, timeout: float) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _tail(path: Path, lines: int = 25) -> str:
    try:
        with path.open() as f:
            return "".join(deque(f, maxlen=lines))
    except FileNotFoundError:
        return "(no log)"
