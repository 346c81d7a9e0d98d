"""Leader election on the real control plane: two ``aitj run --leader-elect`` processes on one
Lease. Exactly one acts; a SIGKILLed leader is replaced by the standby, which replaces a pod
force-deleted at the kill exactly once; a SIGTERMed leader releases the Lease; a leader that
finds the Lease taken from it exits, and one cut off from the apiserver (a TCP proxy that stops
passing bytes, so its calls hang) exits before the standby takes over.

Both operators watch only the test's namespace, and the session's operator is stopped for the
module: a third operator acting on the same jobs would make "exactly one acts" meaningless.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from aitj.controller.leader import EXIT_LEASE_LOST
from aitj.core import api
from aitj.devcluster import faults
from tests.clusters import KubeCluster, free_port
from tests.jobs import create_job, events_for, get_job, job_pods, live, seed_variant, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "le-job"


@pytest.fixture(scope="module", autouse=True)
def session_operator_stopped(operator: OperatorProcess) -> Iterator[None]:
    """session_operator_stopped: no third operator while these tests run."""
    operator.stop()
    yield
    operator.start()


@pytest.fixture
def pair(cluster: KubeCluster, crd: None, namespace: str, tmp_path: Path) -> Iterator[list[OperatorProcess]]:
    """pair: two candidates on the Lease ``aitj-<random>`` of the test's namespace; stopped
    afterwards."""
    lease = f"aitj-{uuid.uuid4().hex[:6]}"
    procs = [candidate(cluster, namespace, tmp_path / name, lease) for name in "ab"]
    for p in procs:
        p.start()
    try:
        yield procs
    finally:
        for p in procs:
            print(f"---- {p.log_dir.name} ----\n{p.logs()[-4000:]}")
            p.stop()


def candidate(cluster: KubeCluster, namespace: str, log_dir: Path, lease: str, *more: str) -> OperatorProcess:
    """candidate: an operator process electing on ``lease`` (the last argument) in ``namespace``."""
    args = [f"--namespace={namespace}", "--leader-elect", f"--leader-election-namespace={namespace}", *more]
    return OperatorProcess(cluster.kubeconfig, log_dir, free_port(), [*args, f"--leader-election-id={lease}"])


def lease_name(p: OperatorProcess) -> str:
    return p.args[-1].partition("=")[2]


def leader_gauge(p: OperatorProcess) -> float | None:
    """leader_gauge: the process's aitj_leader, None while /metrics does not answer."""
    try:
        text = p.metrics()
    except OSError:
        return None
    found = re.search(r"^aitj_leader ([0-9.]+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def identity(p: OperatorProcess) -> str:
    assert p.proc is not None
    return f"{socket.gethostname()}_{p.proc.pid}"


def holder(cluster: KubeCluster, namespace: str, name: str) -> str:
    lease: Any = client.CoordinationV1Api(cluster.api).read_namespaced_lease(name, namespace)
    return str(lease.spec.holder_identity or "")


def roles(procs: list[OperatorProcess]) -> tuple[OperatorProcess, OperatorProcess] | None:
    """roles: (leader, standby) once one exports aitj_leader 1 and the other 0."""
    gauges = [leader_gauge(p) for p in procs]
    if sorted(g for g in gauges if g is not None) != [0.0, 1.0] or None in gauges:
        return None
    first, second = procs if gauges[0] == 1.0 else procs[::-1]
    return first, second


def trainers_by_index(cluster: KubeCluster, namespace: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for p in live(job_pods(cluster, namespace, NAME, "trainer")):
        out.setdefault(int(p.metadata.labels[api.LABEL_INDEX]), []).append(p.metadata.name)
    return out


def test_exactly_one_of_two_candidates_leads_and_acts_and_the_lease_names_it(
    cluster: KubeCluster, namespace: str, pair: list[OperatorProcess]
) -> None:
    leader, standby = wait_for(lambda: roles(pair), 90, "one aitj_leader 1 and one 0")
    assert holder(cluster, namespace, lease_name(leader)) == identity(leader)
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running", timeout=90)
    assert "pod created" in leader.logs()
    # The standby listed and watched the same objects, and sent nothing.
    assert "cache synced" in standby.logs()
    assert "pod created" not in standby.logs() and "leading" not in standby.logs()
    assert roles(pair) == (leader, standby)
    # controller-runtime's gauge says the same, for the Lease by name.
    for p, held in ((leader, 1), (standby, 0)):
        assert f'leader_election_master_status{{name="{lease_name(p)}"}} {held}.0' in p.metrics()


def test_after_the_leaders_sigkill_the_standby_replaces_a_pod_deleted_at_the_kill_exactly_once(
    cluster: KubeCluster, namespace: str, pair: list[OperatorProcess]
) -> None:
    leader, standby = wait_for(lambda: roles(pair), 90, "one aitj_leader 1 and one 0")
    create_job(cluster, namespace, seed_variant(NAME))
    wait_phase(cluster, namespace, NAME, "Running", timeout=90)
    before = trainers_by_index(cluster, namespace)
    assert sorted(before) == [0, 1, 2]

    leader.kill()
    faults.force_delete(cluster.api, namespace, before[0][0])

    wait_for(lambda: leader_gauge(standby) == 1.0, 60, "the standby leading")
    assert holder(cluster, namespace, lease_name(standby)) == identity(standby)
    after = wait_for(
        lambda: (m := trainers_by_index(cluster, namespace)).get(0, before[0]) != before[0] and m,
        60,
        "trainer 0 replaced",
    )
    wait_phase(cluster, namespace, NAME, "Running", timeout=60)
    wait_for(
        lambda: get_job(cluster, namespace, NAME)["status"]["RestartCount"]["trainer"] == 1, 30, "counted"
    )
    # One pod per index, the others untouched; one restart counted, recorded and announced.
    after = trainers_by_index(cluster, namespace)
    assert {i: len(names) for i, names in after.items()} == {0: 1, 1: 1, 2: 1}
    assert after[1] == before[1] and after[2] == before[2]
    status = get_job(cluster, namespace, NAME)["status"]
    assert status["RestartCount"]["trainer"] == 1
    assert len(status.get("restarts") or []) == 1
    events = [e for e in events_for(cluster, namespace, NAME) if before[0][0] in (e.message or "")]
    assert len(events) == 1 and (events[0].count or 1) == 1
    assert standby.logs().count("pod created") == 1


def test_a_leader_stopped_with_sigterm_releases_the_lease_and_the_standby_takes_it_at_once(
    cluster: KubeCluster, namespace: str, tmp_path: Path
) -> None:
    # A lease of 120 s: the standby leading well within it can only come from the release.
    lease = f"aitj-{uuid.uuid4().hex[:6]}"
    long = ("--leader-elect-lease-duration=120",)
    procs = [candidate(cluster, namespace, tmp_path / name, lease, *long) for name in "ab"]
    try:
        for p in procs:
            p.start()
        leader, standby = wait_for(lambda: roles(procs), 90, "one aitj_leader 1 and one 0")
        leader.stop()
        assert "Lease released" in leader.logs()
        wait_for(lambda: leader_gauge(standby) == 1.0, 30, "the standby leading after the release")
        assert holder(cluster, namespace, lease) == identity(standby)
    finally:
        for p in procs:
            print(f"---- {p.log_dir.name} ----\n{p.logs()[-4000:]}")
            p.stop()


def test_a_leader_that_finds_the_lease_taken_from_it_stops_acting_and_exits(
    cluster: KubeCluster, namespace: str, tmp_path: Path
) -> None:
    lease = f"aitj-{uuid.uuid4().hex[:6]}"
    only = candidate(cluster, namespace, tmp_path / "a", lease)
    only.start()
    try:
        wait_for(lambda: leader_gauge(only) == 1.0, 90, "the only candidate leading")
        coordination = client.CoordinationV1Api(cluster.api)
        body: Any = coordination.read_namespaced_lease(lease, namespace)
        body.spec.holder_identity = "someone-else"
        coordination.replace_namespaced_lease(lease, namespace, body)
        assert only.proc is not None
        assert only.proc.wait(timeout=30) == EXIT_LEASE_LOST
        assert "leader election lost" in only.logs()
    finally:
        only.proc = None if only.proc is not None and only.proc.poll() is not None else only.proc
        only.stop()


class Partition:
    """Partition: a TCP proxy in front of the apiserver that can stop passing bytes
    (``cut``): every call through it then hangs, as behind a network partition, instead of
    failing fast. The real apiserver answers everything that does get through."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.cut = threading.Event()
        self.closed = threading.Event()
        self.sockets: list[socket.socket] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return  # closed
            self.sockets.append(conn)
            threading.Thread(target=self._connect, args=(conn,), daemon=True).start()

    def _connect(self, conn: socket.socket) -> None:
        while self.cut.is_set() and not self.closed.is_set():  # behind the partition: never answered
            time.sleep(0.05)
        if self.closed.is_set():
            return
        up = socket.create_connection(self.upstream)
        self.sockets.append(up)
        for src, dst in ((conn, up), (up, conn)):
            threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while not self.closed.is_set():
                if self.cut.is_set():  # leave the bytes in the kernel's buffers
                    time.sleep(0.05)
                    continue
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def kubeconfig(self, original: Path, into: Path) -> Path:
        """kubeconfig: ``original`` with its server address pointed at the proxy."""
        host, port = self.upstream
        into.write_text(
            original.read_text().replace(f"https://{host}:{port}", f"https://127.0.0.1:{self.port}")
        )
        return into

    def close(self) -> None:
        """close stops accepting and closes every connection (shut down first: that wakes a
        thread blocked reading it)."""
        self.closed.set()
        self.server.close()
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def test_a_leader_cut_off_from_the_apiserver_exits_before_the_standby_takes_the_lease(
    cluster: KubeCluster, namespace: str, tmp_path: Path
) -> None:
    server = str(cluster.api.configuration.host)  # https://127.0.0.1:PORT
    host, _, port = server.removeprefix("https://").partition(":")
    partition = Partition((host, int(port)))
    lease = f"aitj-{uuid.uuid4().hex[:6]}"
    cut_off = candidate(cluster, namespace, tmp_path / "a", lease)
    cut_off.kubeconfig = partition.kubeconfig(cluster.kubeconfig, tmp_path / "through-proxy.kubeconfig")
    standby = candidate(cluster, namespace, tmp_path / "b", lease)
    try:
        cut_off.start()
        wait_for(lambda: leader_gauge(cut_off) == 1.0, 90, "the first candidate leading")
        standby.start()
        wait_for(
            lambda: leader_gauge(standby) == 0.0 and "cache synced" in standby.logs(), 90, "a warm standby"
        )
        partition.cut.set()
        assert cut_off.proc is not None
        exited = led = None
        deadline = time.monotonic() + 60
        while (exited is None or led is None) and time.monotonic() < deadline:
            if exited is None and cut_off.proc.poll() is not None:
                exited = time.monotonic()
            if led is None and leader_gauge(standby) == 1.0:
                led = time.monotonic()
            time.sleep(0.02)
        assert exited is not None and led is not None, (exited, led)
        # The order is the point, not the speed: the old leader was gone before the new one led.
        assert exited < led
        assert cut_off.proc.returncode == EXIT_LEASE_LOST
        assert "leader election lost" in cut_off.logs()
        assert holder(cluster, namespace, lease) == identity(standby)
    finally:
        partition.cut.clear()
        for p in (cut_off, standby):
            print(f"---- {p.log_dir.name} ----\n{p.logs()[-4000:]}")
            if p.proc is not None and p.proc.poll() is not None:
                p.proc = None
            p.stop()
        partition.close()
