"""Node faults on the real nodes, for make bench-real: a kubelet stopped, a node NotReady with
its kubelet alive (its containerd down), a drain. Each is made on OTHER_NODE, which must hold a
trainer and never the launcher: the launcher is pinned to LAUNCHER_NODE (pin_launcher), since
its log, which times everything, is read through its node's kubelet.

A stopped kubelet or runtime leaves the node's containers running: the operator replaces their
pods elsewhere while the old processes go on beside the replacements, two pods for one index
(issue 25, item 4). What training sees of them is kept as notes; the node coming back is
measured as a fault of its own ("kubelet back", "containerd back").
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from aitj.core import api
from aitj.devcluster import faults as dev
from aitj.tools.trainbench.timeline import ring, runtime_time
from tests.e2e.real import nodes
from tests.e2e.real.jobs import pods_by_index
from tests.e2e.real.training import Training
from tests.jobs import Doc, job_pods, live

LAUNCHER_NODE = "real-node-0"
OTHER_NODE = "real-node-1"
WIDTH = 3
# How long the end of a node fault (the node Ready again, its old pods gone from the API) is
# watched: the operator force-deletes an old pod restartTimeLimit (60 s) after deleting it.
AFTERMATH_SECONDS = 120
DRAIN_RETRY_SECONDS = 5  # kubectl drain's wait before it asks again for a refused eviction


def pin_launcher(doc: Doc) -> None:
    """pin_launcher: the launcher runs on LAUNCHER_NODE (a nodeSelector on its hostname)."""
    spec = doc["spec"]["replicaSpecs"]["launcher"]["template"]["spec"]
    spec["nodeSelector"] = {"kubernetes.io/hostname": LAUNCHER_NODE}


def spread_trainers(doc: Doc) -> None:
    """spread_trainers: the scheduler prefers to spread the trainers over the nodes, as over a
    real cluster's many: without it they pile on the node without the launcher, the emptier."""
    name = doc["metadata"]["name"]
    selector = {"matchLabels": {api.LABEL_JOB: name, api.LABEL_REPLICA: "trainer"}}
    spread = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": selector,
    }
    doc["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]["topologySpreadConstraints"] = [spread]


def wanted(fault: str, only: tuple[str, ...]) -> bool:
    """wanted: ``fault`` is one to make: its name contains one of the words of ``only``, or
    ``only`` is empty (make bench-real ONLY=)."""
    return not only or any(word in fault for word in only)


class NodeFaults:
    """NodeFaults: the node faults made on ``run``'s OTHER_NODE; ``notes`` gathers what the
    training saw of the old containers."""

    def __init__(self, run: Training, heal_seconds: float) -> None:
        self.run, self.heal_seconds = run, heal_seconds
        self.cluster = run.cluster
        self.notes: list[str] = []

    def all(self, only: tuple[str, ...] = ()) -> tuple[Callable[[], None], ...]:
        """all: the node faults whose name contains one of ``only`` (every one without)."""
        faults = {
            "kubelet stopped": self.kubelet_stopped,
            "node NotReady (containerd down)": self.runtime_down,
            "drain": self.drain,
        }
        return tuple(make for name, make in faults.items() if wanted(name, only))

    def kubelet_stopped(self) -> None:
        """The node's kubelet frozen (SIGSTOP) until training is back at full width, then let go."""
        self._lost_and_back(
            "kubelet stopped",
            "kubelet back",
            lambda: nodes.stop_kubelet(self.cluster, OTHER_NODE),
            lambda: nodes.continue_kubelet(self.cluster, OTHER_NODE),
        )

    def runtime_down(self) -> None:
        """The node's containerd ended, its kubelet alive, until training is back at full
        width; then containerd started again."""
        self._lost_and_back(
            "node NotReady (containerd down)",
            "containerd back",
            lambda: nodes.stop_containerd(self.cluster, OTHER_NODE),
            lambda: nodes.start_containerd(self.cluster, OTHER_NODE),
        )

    def _lost_and_back(
        self, kind: str, back: str, lose: Callable[[], None], restore: Callable[[], None]
    ) -> None:
        """_lost_and_back: OTHER_NODE lost by ``lose`` until training healed, what training saw
        of its old pods noted; then ``restore``, measured as a fault of its own ("<back> (old
        pods end)") until the node is Ready and the old pods are gone."""
        old = self._place()
        self.run.fault(kind, WIDTH, lose, self.heal_seconds)
        self._seen(kind, old)
        self.run.fault(
            f"{back} (old pods end)", WIDTH, restore, AFTERMATH_SECONDS, over=lambda: self._ended(old)
        )
        self._ended_note(back, old)

    def drain(self) -> None:
        """The node cordoned and the job's pods on it evicted, as kubectl drain does, until
        training is back at full width; then uncordoned."""
        old = self._place()
        self.run.fault("drain", WIDTH, self._drain, self.heal_seconds)
        self._seen("drain", old)
        nodes.cordon(self.cluster, OTHER_NODE, on=False)

    def _drain(self) -> None:
        nodes.cordon(self.cluster, OTHER_NODE, on=True)
        while left := self._job_pods_there():
            for pod in left:
                try:
                    dev.evict(self.cluster.api, self.run.namespace, pod.metadata.name)
                except ApiException as e:
                    if e.status != 429:  # 429: the disruption budget refuses it for now
                        raise
            if self._job_pods_there():
                time.sleep(DRAIN_RETRY_SECONDS)

    def _job_pods_there(self) -> list[Any]:
        pods = live(job_pods(self.cluster, self.run.namespace, self.run.job))
        return [p for p in pods if p.spec.node_name == OTHER_NODE]

    def _trainers_there(self) -> list[Any]:
        pods = pods_by_index(self.cluster, self.run.namespace, self.run.job, "trainer")
        return [p for i, p in pods.items() if i < WIDTH and p.spec.node_name == OTHER_NODE]

    def _place(self) -> list[Any]:
        """_place: the trainers on OTHER_NODE, once there is one: while none is, a trainer
        elsewhere is force-deleted (measured as the force delete it is) and its replacement
        scheduled, which the spread sends to OTHER_NODE."""
        for _ in range(3):
            if there := self._trainers_there():
                return there
            move = self.run.delete_trainer(force=True, replicas=WIDTH, off_node=OTHER_NODE)
            self.run.fault("force delete", WIDTH, move, self.heal_seconds)
        there = self._trainers_there()
        assert there, f"no trainer was scheduled on {OTHER_NODE}"
        return there

    def _ended(self, old: list[Any]) -> bool:
        """_ended: the node is Ready again and the old pods are gone from the API (the operator
        force-deletes them restartTimeLimit after deleting them). Their containers may run on:
        the kubelet, back, stops them with the pod's grace period (the seed's 300 s), whose
        SIGTERM the trainers' shell ignores; the notes say what is left of them."""
        names = {p.metadata.name for p in job_pods(self.cluster, self.run.namespace, self.run.job)}
        return not names & {p.metadata.name for p in old} and nodes.is_ready(self.cluster, OTHER_NODE)

    def _seen(self, kind: str, old: list[Any]) -> None:
        """_seen notes, once training healed after ``kind``: the old pods, whether their
        processes still run, which hosts the ranks' latest steps came from, and Horovod's
        blacklist lines since the fault."""
        fault = self.run.recoveries[-1].fault
        hosts = ring(self.run.events(), fault.t)
        names = [p.metadata.name for p in old]
        running = {p.metadata.name: _commands(p) for p in old}
        log = [line for line in self.run.log().splitlines() if _after(line, fault.t)]
        blacklist = [line[:200] for line in log if re.search("blacklist", line, re.IGNORECASE)]
        note = (
            f"{kind} at {time.strftime('%H:%M:%S', time.gmtime(fault.t))}: old pods {names} "
            f"(processes on the machine: {running}); the ring: {hosts}; "
            f"old pods in the ring: {sorted(set(names) & set(hosts))}; blacklist lines: {blacklist[:4]}"
        )
        print(note, flush=True)
        self.notes.append(note)

    def _ended_note(self, kind: str, old: list[Any]) -> None:
        got = self.run.recoveries[-1]
        left = {p.metadata.name: _commands(p) for p in old}
        note = (
            f"{kind}: old pods' processes left {left}; resets {got.resets}, longest pause {got.longest_pause}"
        )
        print(note, flush=True)
        self.notes.append(note)


def _after(line: str, t: float) -> bool:
    try:
        return runtime_time(line.split(" ", 1)[0]) >= t
    except ValueError:
        return False


def _commands(pod: Any) -> list[str]:
    """_commands: the names of the processes the pod still has on the machine."""
    names = []
    for pid in nodes.pod_processes(pod.metadata.uid):
        with contextlib.suppress(OSError):
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return sorted(names)
