"""Running the local control plane: start, wait until healthy, stop.

Every component runs as a background process in its own session, bound to 127.0.0.1, with
its log and pid under the cluster's state folder; ``cluster.json`` there records the ports and
each component's command line, so ``down``, ``status`` and the fault API (which stops and
starts the apiserver) work from any later process.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from aitj.core.wire import format_time
from aitj.devcluster import nodes as nodes_mod
from aitj.devcluster import pki
from aitj.devcluster.apiclient import AdminClient, http_ok, node_ready
from aitj.devcluster.build import ensure_built, tail
from aitj.devcluster.config import (
    COMPONENTS,
    DEFAULT_BASE_PORT,
    EPHEMERAL_PORTS_START,
    ClusterConfig,
    ClusterError,
    Ports,
    audit_log_file,
    write_files,
)
from aitj.devcluster.realnodes import lifecycle as realnodes
from aitj.devcluster.versions import KUBERNETES, run_kubectl, state_dir

# The names importers know this module by; they are defined in ``config``.
__all__ = [
    "DEFAULT_BASE_PORT",
    "ClusterConfig",
    "ClusterError",
    "LocalCluster",
    "Ports",
    "free_base",
    "port_free",
]

# Components started by this process, kept so they are reaped when stopped (no zombies, no
# "still running" warnings when a Popen object is collected while its daemon runs on).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
_DEFAULT_CONFIG = ClusterConfig()


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
        return self.dir / "pids" / f"{_file_name(component)}.pid"

    def log(self, component: str) -> Path:
        return self.logs / f"{_file_name(component)}.log"

    @property
    def audit_logs(self) -> list[Path]:
        """audit_logs: the apiserver's audit log files, oldest first (rotated ones, then the current)."""
        current = audit_log_file(self.dir)
        return [*sorted(current.parent.glob(f"{current.stem}-*{current.suffix}")), current]

    def recorded(self) -> dict[str, Any]:
        """recorded: ``cluster.json`` (config, ports, commands); a ClusterError if never set up."""
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

    @property
    def apiserver(self) -> AdminClient:
        """apiserver: the recorded apiserver, as the cluster's admin."""
        return AdminClient(self.server, self.pki)

    # ---- process state -----------------------------------------------------------------
    def pid(self, component: str) -> int | None:
        """pid: the component's process id if it is alive, else None."""
        try:
            pid = int(self._pidfile(component).read_text())
        except (FileNotFoundError, ValueError):
            return None
        return pid if _alive(pid) else None

    def components(self) -> list[str]:
        """components: every component of the cluster in start order: the control plane's,
        then (with real nodes) theirs, as ``cluster.json`` records them."""
        try:
            return list(self.recorded()["commands"])
        except ClusterError:
            return list(COMPONENTS)

    def running_components(self) -> list[str]:
        return [c for c in self.components() if self.pid(c) is not None]

    def is_running(self) -> bool:
        return bool(self.running_components())

    # ---- up ------------------------------------------------------------------------------
    def up(self, config: ClusterConfig = _DEFAULT_CONFIG, *, say: Callable[[str], None] = print) -> Path:
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
        images = realnodes.prepare(config, say=say) if config.real_nodes else None
        started = time.monotonic()
        self._prepare(config, ports)
        try:
            self._start("etcd")
            self._wait(lambda: http_ok(f"http://127.0.0.1:{ports.etcd}/health"), "etcd", 30)
            self._start("kube-apiserver")
            self._wait(lambda: self.apiserver.ready(), "kube-apiserver", 90)
            for component in ("kube-controller-manager", "kube-scheduler", "kwok"):
                self._start(component)
            self.create_nodes([f"kwok-node-{i}" for i in range(config.nodes)], prof.name)
            self._wait(self._healthy, "the cluster", 90)
            if images is not None:
                realnodes.up(
                    self, config, ports, images, runs=lambda n: LocalCluster(n).is_running(), say=say
                )
        except BaseException:
            self.down()
            raise
        real = f" and {config.real_nodes} real node(s)" if config.real_nodes else ""
        say(
            f"cluster {self.name!r} (Kubernetes {KUBERNETES}) healthy in {time.monotonic() - started:.1f}s: "
            f"{config.nodes} {prof.name} node(s){real}, apiserver {self.server}"
        )
        return self.kubeconfig

    def record_commands(self, commands: dict[str, list[str]]) -> None:
        """record_commands adds components to ``cluster.json``, after the recorded ones (the
        real nodes', known once the control plane runs)."""
        record = self.recorded()
        record["commands"] |= commands
        self._record.write_text(json.dumps(record, indent=2))

    def start_component(self, component: str) -> None:
        """start_component starts one recorded component (no wait: see ``wait_for``)."""
        self._start(component)

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        """wait_for waits until ``ready()``; a ClusterError, with the log's tail, if a started
        component exits first, or at the timeout."""
        self._wait(ready, what, timeout)

    def _prepare(self, config: ClusterConfig, ports: Ports) -> None:
        for sub in ("pki", "logs", "pids", "etcd", "config"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        # A fresh cluster each time: old etcd data would bring back old objects and node leases.
        shutil.rmtree(self.dir / "etcd" / "data", ignore_errors=True)
        for stale in [*(self.dir / "pids").iterdir(), *self.logs.iterdir()]:
            stale.unlink()
        pki.make_pki(self.pki)
        commands = write_files(self.name, self.dir, config, ports)
        self._record.write_text(
            json.dumps(
                {
                    "kubernetes": KUBERNETES,
                    "config": asdict(config),
                    "ports": asdict(ports),
                    "commands": commands,
                },
                indent=2,
            )
        )

    def _start(self, component: str) -> None:
        argv = self.recorded()["commands"][component]
        log = self.log(component).open("a")
        log.write(f"\n==== {format_time(dt.datetime.now(dt.UTC))} starting: {' '.join(argv)}\n")
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
            self._wait(lambda: self.apiserver.ready(), "kube-apiserver", 90)

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
            for component in self.components():
                if self._pidfile(component).exists() and self.pid(component) is None:
                    raise ClusterError(
                        f"{component} exited while waiting for {what}. "
                        f"Last lines of {self.log(component)}:\n{tail(self.log(component), 25)}"
                    )
            if ready():
                return
            time.sleep(0.25)
        raise ClusterError(f"{what} did not become healthy within {timeout:.0f}s; logs in {self.logs}")

    def _healthy(self) -> bool:
        return not self.unhealthy()

    def unhealthy(self) -> list[str]:
        """unhealthy lists what is not ready yet (empty when the cluster is usable)."""
        if not self._record.exists():  # never set up: nothing answers
            return ["kube-apiserver /readyz"]
        return self.apiserver.problems(self.ports, self.recorded()["config"]["nodes"])

    # ---- nodes -----------------------------------------------------------------------------
    def create_nodes(self, names: list[str], profile: str) -> None:
        """create_nodes registers kwok-managed nodes of the node profile ``profile``."""
        prof = nodes_mod.profile(profile)
        for name in names:
            body = nodes_mod.node_manifest(name, prof)
            self.apiserver.request("POST", "/api/v1/nodes", body)

    # ---- down / status -------------------------------------------------------------------
    def down(self) -> list[str]:
        """down stops every component (reverse order) and returns what was running."""
        was = self.running_components()
        for component in reversed(self.components()):
            self.stop(component)
        count = realnodes.recorded_nodes(self)
        if count:
            realnodes.down(self, count)
        return was

    def status(self) -> dict[str, Any]:
        """status: state (absent, stopped, healthy, unhealthy), components' pids, nodes' Ready,
        problems; what ``aitj cluster status`` shows."""
        info: dict[str, Any] = {"name": self.name, "state_dir": str(self.dir)}
        if not self._record.exists():
            info["state"] = "absent"
            return info
        info["kubeconfig"] = str(self.kubeconfig)
        info["server"] = self.server
        info["components"] = {c: self.pid(c) for c in self.components()}
        if not self.is_running():
            info["state"] = "stopped"
            return info
        problems = self.unhealthy()
        info["state"] = "healthy" if not problems else "unhealthy"
        info["problems"] = problems
        info["nodes"] = {n["metadata"]["name"]: node_ready(n) for n in self.apiserver.nodes()}
        return info

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """kubectl runs the cluster's own kubectl against it."""
        proc = run_kubectl(self.kubeconfig, *args, input=input)
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc


def _file_name(component: str) -> str:
    # A real node's components are "kubelet/real-node-0": one file each, in the same folder.
    return component.replace("/", "-")


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


def free_base(start: int) -> int:
    """free_base: the first base port from ``start`` (in steps of 10) whose ports are all free,
    below Linux's ephemeral range (EPHEMERAL_PORTS_START): a port in that range may be taken by
    any outgoing connection (the apiserver's to etcd, say) between this check and the bind of
    the component that was given it."""
    for base in range(start, EPHEMERAL_PORTS_START - 10, 10):
        if all(port_free(p) for p in Ports.from_base(base).by_component().values()):
            return base
    raise ClusterError(f"no free ports for a cluster between {start} and {EPHEMERAL_PORTS_START}")


def _check_ports_free(ports: Ports) -> None:
    for component, port in ports.by_component().items():
        if not port_free(port):
            raise ClusterError(
                f"port {port} on 127.0.0.1 (for {component}) is already in use. "
                f"Stop what uses it, or choose other ports with --base-port "
                f"(the cluster uses base..base+6)."
            )


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
