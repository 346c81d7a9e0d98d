"""One bench run's cluster, clients, watches and processes, and the actions scenarios share.

The cluster is the local control plane (``aitj.devcluster``), started fresh for the run. The
operator and the floor run as processes of their own (the operator's CPU and RSS are read
from /proc). The harness's clients are the Python kubernetes client, which has no client-side
rate limit; its watches are its own (``watcher``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from aitj.controller.kubeclient import api_client
from aitj.core import api
from aitj.devcluster.cluster import LocalCluster, port_free
from aitj.tools.bench import opmetrics, procstat
from aitj.tools.bench.floor import start_floor
from aitj.tools.bench.watcher import Matches, Watcher
from aitj.tools.bench.workload import NS_LARGE, NS_OURS, job_classes, pod_classes, running, slot
from aitj.tools.demo import start_operator
from aitj.tools.listwatch import Obj

Say = Callable[[str], None]
LEASE_NAMESPACE = "default"  # F9's candidates elect on a Lease there
CANDIDATE_PORTS = range(28080, 28200)  # F9's candidates' /metrics (below the ephemeral range)
OPERATOR_PORTS = range(28200, 28300)  # the operator's /metrics: its passes, for F13


def uid(obj: Obj) -> str:
    """uid: the object's metadata.uid."""
    return str((obj.get("metadata") or {}).get("uid", ""))


@dataclass
class Session:
    """Session: what every scenario of a run uses."""

    cluster: LocalCluster
    say: Say
    api: client.ApiClient = field(init=False)
    pods: Watcher = field(init=False)
    jobs: Watcher = field(init=False)
    sampler: procstat.Sampler = field(init=False)
    operator: subprocess.Popen[bytes] | None = None
    operator_port: int = 0  # the operator's /metrics, plain HTTP on 127.0.0.1
    floor: subprocess.Popen[bytes] | None = None
    candidates: list[Candidate] = field(default_factory=list)  # F9's operators under leader election

    def __post_init__(self) -> None:
        self.api = api_client(self.cluster.kubeconfig)
        # The watches hold a connection each for the whole run: a client of their own.
        watch_api = api_client(self.cluster.kubeconfig)
        self.pods = Watcher(client.CoreV1Api(watch_api).list_pod_for_all_namespaces, pod_classes, "pods")
        custom: Any = client.CustomObjectsApi(watch_api)

        def list_jobs(**kw: Any) -> Any:
            return custom.list_namespaced_custom_object(api.GROUP, api.VERSION, NS_OURS, api.PLURAL, **kw)

        self.jobs = Watcher(list_jobs, job_classes, "jobs")
        self.sampler = procstat.Sampler(
            lambda: self.pods.count(f"{NS_OURS}/Running") + self.pods.count(f"{NS_LARGE}/Running")
        )

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> Any:
        return client.CustomObjectsApi(self.api)

    @property
    def batch(self) -> Any:
        return client.BatchV1Api(self.api)

    # ---- processes --------------------------------------------------------------------------
    def start_watches(self) -> None:
        """start_watches lists pods and jobs and keeps them current; starts the sampler."""
        self.pods.start()
        self.jobs.start()
        self.sampler.start()

    def start_operator(self) -> None:
        """start_operator runs ``aitj run`` as a process, /metrics on a free port of
        OPERATOR_PORTS, and samples it."""
        self.operator_port = next(p for p in OPERATOR_PORTS if port_free(p))
        self.operator, _log = start_operator(self.cluster, metrics_port=self.operator_port)
        self.sampler.follow(self.operator.pid)

    def stop_operator(self, timeout: float = 60) -> None:
        """stop_operator sends SIGTERM and waits (SIGKILL after ``timeout``)."""
        if self.operator is None:
            return
        self.sampler.follow(None)
        self.operator.terminate()
        try:
            self.operator.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.say(f"the operator did not stop within {timeout:.0f}s of SIGTERM: killed")
            self.operator.kill()
            self.operator.wait()
        self.operator = None

    def start_candidate(self, name: str) -> Candidate:
        """start_candidate runs ``aitj run --leader-elect`` as a process (F9), /metrics on a
        port of its own, logging to the cluster's logs folder."""
        taken = {c.port for c in self.candidates}
        port = next(p for p in CANDIDATE_PORTS if p not in taken and port_free(p))
        c = Candidate(name, port, self.cluster.logs / f"operator-{name}.log", self.cluster.kubeconfig)
        c.start()
        self.candidates.append(c)
        return c

    def stop_candidates(self) -> None:
        """stop_candidates sends each candidate SIGTERM and waits."""
        for c in self.candidates:
            c.stop()
        self.candidates.clear()

    def start_floor(self, namespace: str) -> None:
        """start_floor runs the floor client as a process."""
        self.floor = start_floor(self.cluster.kubeconfig, namespace, self.cluster.logs / "floor.log")

    def close(self) -> None:
        """close stops the operator, the candidates, the floor, the sampler and the watches."""
        self.stop_operator()
        self.stop_candidates()
        if self.floor is not None:
            self.floor.terminate()
            self.floor.wait(timeout=15)
            self.floor = None
        self.sampler.stop()
        self.pods.stop()
        self.jobs.stop()

    def operator_cpu(self) -> float:
        """operator_cpu: the operator's CPU seconds so far."""
        assert self.operator is not None, "the operator is not running"
        return procstat.cpu_seconds(self.operator.pid)

    def operator_passes(self, timeout: float = 30) -> float:
        """operator_passes: the passes the operator has made so far (its /metrics, retried
        until it answers: it serves them once started)."""
        assert self.operator is not None, "the operator is not running"
        deadline = time.monotonic() + timeout
        while True:
            try:
                return opmetrics.passes(opmetrics.scrape(self.operator_port))
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def operator_rss(self) -> int:
        """operator_rss: the operator's resident memory in bytes."""
        assert self.operator is not None, "the operator is not running"
        return procstat.rss_bytes(self.operator.pid)

    # ---- reading pods -----------------------------------------------------------------------
    def live_running(self, namespace: str) -> dict[Hashable, Obj]:
        """live_running: the namespace's Running pods not being deleted, by slot."""
        out: dict[Hashable, Obj] = {}
        for pod in self.pods.snapshot():
            s = slot(pod)
            if s is not None and s[0] == namespace and running(pod):
                out[s] = pod
        return out

    def replaced(self, victims: list[Obj]) -> Matches:
        """replaced: an expectation met when every victim's slot has a new pod (ADDED)."""
        slots = {slot(v) for v in victims}
        old = {uid(v) for v in victims}

        def match(etype: str, obj: Obj) -> Hashable | None:
            s = slot(obj)
            return s if etype == "ADDED" and s in slots and uid(obj) not in old else None

        return Matches(match, len(slots))

    def running_again(self, victims: list[Obj]) -> Matches:
        """running_again: met when every victim's slot has a new pod Running."""
        slots = {slot(v) for v in victims}
        old = {uid(v) for v in victims}

        def match(etype: str, obj: Obj) -> Hashable | None:
            s = slot(obj)
            return s if s in slots and uid(obj) not in old and running(obj) else None

        return Matches(match, len(slots))

    def settle(self, namespace: str, pods: int, timeout: float = 120) -> None:
        """settle waits until the namespace has exactly ``pods`` pods, all Running."""
        self.pods.wait_until(
            lambda w: w.count(f"{namespace}/all") == pods and w.count(f"{namespace}/Running") == pods,
            timeout,
            f"{pods} pods Running in {namespace}",
        )


@dataclass
class Candidate:
    """Candidate: one ``aitj run --leader-elect`` process of F9, killed and started again."""

    name: str
    port: int
    log: Path
    kubeconfig: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """start runs the process (a fresh log each time: ``synced`` reads it)."""
        command = [sys.executable, "-m", "aitj", "run", f"--kubeconfig={self.kubeconfig}"]
        command += [
            f"--metrics-port={self.port}",
            "--metrics-insecure",  # read over plain HTTP on 127.0.0.1
            "--leader-elect",
            f"--leader-election-namespace={LEASE_NAMESPACE}",
        ]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def kill(self) -> None:
        """kill: SIGKILL, as a crash or a lost node."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self, timeout: float = 60) -> None:
        """stop: SIGTERM (the leader releases its Lease), SIGKILL after ``timeout``."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def leader(self) -> float | None:
        """leader: the process's aitj_leader (None while /metrics does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None
        found = re.search(r"^aitj_leader ([0-9.]+)$", text, re.MULTILINE)
        return float(found.group(1)) if found else None

    def synced(self) -> bool:
        """synced: the process has listed every kind (its log says so)."""
        return self.log.exists() and b"cache synced" in self.log.read_bytes()


def timed(start: float, expectation: Matches, timeout: float) -> list[float]:
    """timed: how long after ``start`` each part of the expectation was seen; a part not seen
    within ``timeout`` counts as ``timeout`` (a lower bound, so a lost trial is not dropped)."""
    expectation.wait(max(0.0, start + timeout - time.monotonic()))
    got = [t - start for t in expectation.times]
    return got + [timeout] * (expectation.count - len(got))
