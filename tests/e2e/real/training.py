"""A training job's progress read from its launcher's log while faults are made on it
(aitj.tools.trainbench), for the Horovod seed test, make bench-real, and the MPI and torchrun
examples' tests (heals_through_faults)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from aitj.tools.trainbench.recovery import Fault, Recovery, healed, recovery
from aitj.tools.trainbench.timeline import Event, Reset, Step, parse
from tests.clusters import KubeCluster
from tests.e2e.real.forensics import FORENSICS_SECONDS, capture
from tests.e2e.real.jobs import pods_by_index
from tests.e2e.real.nodes import pod_processes
from tests.jobs import Doc, create_job, patch_job, phase
from tests.seeds import REPO
from tests.waiting import wait_for

# Some steps at the wanted width after a fault heals, so the next starts from steady training.
SETTLE_SECONDS = 3
# A training length for heals_through_faults, longer than its faults take (they are over near
# step 300 here, about 17 steps a second at full width and half that through the faults, and
# far later on a loaded machine): it ends the training on request once they are over.
OUTLASTS_FAULTS = 100_000


def _s(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.1f}s"


class Training:
    """Training: a job's launcher log, read as events, and the faults made on it."""

    def __init__(self, cluster: KubeCluster, namespace: str, job: str, launcher: str) -> None:
        self.cluster, self.namespace, self.job, self.launcher = cluster, namespace, job, launcher
        self.recoveries: list[Recovery] = []
        self.forensics: list[str] = []  # forensics.capture of each fault not healed in time
        # Where each capture is written as it is taken (forensics-N.txt), if set: a run stopped
        # by hand keeps the evidence of the stalls it saw.
        self.evidence: Path | None = None
        self._past = ""  # the logs of the launchers a whole-job restart replaced, as last read
        self._last = ""  # the current launcher's log as last read

    def log(self) -> str:
        """log: the launcher's log; where the launcher was replaced (the whole job restarted,
        the recovery watchdog's ringHung), the old one's as last read, then the new one's, so the
        recovery that took is measured, not a training that never came back."""
        read = self.cluster.kubectl("logs", "--timestamps", "-n", self.namespace, self.launcher, check=False)
        if read.returncode == 0:
            self._last = read.stdout
            return self._past + self._last
        now = pods_by_index(self.cluster, self.namespace, self.job, "launcher").get(0)
        if now is None or now.metadata.name == self.launcher:
            return self._past + self._last
        self._past, self._last, self.launcher = self._past + self._last, "", now.metadata.name
        return self.log()

    def events(self) -> list[Event]:
        return parse(self.log().splitlines())

    def fault(
        self,
        kind: str,
        width: int,
        act: Callable[[], None],
        heal_seconds: float,
        *,
        over: Callable[[], bool] | None = None,
    ) -> Recovery:
        """fault does ``act``, waits until training healed at ``width`` (recovery.healed) after
        ``act`` returned (a drain's act returns once its last eviction went through), or until
        ``over()`` when given (the end of a fault that may not disturb training at all), at most
        ``heal_seconds``, and keeps what the log says of it, timed from the start of ``act``."""
        t = time.time()
        act()
        done = time.time()

        def settled() -> bool:
            if over is not None:
                return over()
            return healed(self.events(), Fault(kind, done, width, until=done))

        what = f"training back at width {width} after a {kind}"
        try:
            wait_for(settled, min(FORENSICS_SECONDS, heal_seconds), what, interval=1)
        except AssertionError:  # a stall: what it waits on, taken while it waits
            why = f"{kind} made at {time.strftime('%H:%M:%S', time.gmtime(t))} UTC, not healed"
            self.forensics.append(capture(self.cluster, self.namespace, why))
            if self.evidence is not None:
                self.evidence.mkdir(parents=True, exist_ok=True)
                (self.evidence / f"forensics-{len(self.forensics)}.txt").write_text(self.forensics[-1])
            with contextlib.suppress(AssertionError):  # not healed in time: counted below
                wait_for(settled, heal_seconds - (time.time() - done), what, interval=1)
        time.sleep(SETTLE_SECONDS)
        got = recovery(self.events(), Fault(kind, t, width, until=time.time()))
        print(
            f"{kind}: running again after {_s(got.running_again)}, full width after {_s(got.full_width)}, "
            f"longest pause {_s(got.longest_pause)}, steps redone {got.steps_redone}, resets {got.resets}",
            flush=True,
        )
        self.recoveries.append(got)
        return got

    def delete_trainer(
        self, *, force: bool, replicas: int, off_node: str | None = None, count: int = 1
    ) -> Callable[[], None]:
        """delete_trainer: a fault that deletes ``count`` Running trainers of the ``replicas``
        the job wants, in one call, chosen at random (not one a scale-in is letting go, which
        trains no more), and not on ``off_node`` if given. Several force-deleted at once are
        replaced together, as a lost node's pods are: their replacements make one wave
        (docs/pods.md, "Workers join in waves")."""

        def act() -> None:
            pods = pods_by_index(self.cluster, self.namespace, self.job, "trainer")
            candidates = [p for i, p in pods.items() if i < replicas and p.spec.node_name != off_node]
            victims = [p.metadata.name for p in random.sample(candidates, count)]
            args = ["delete", "pod", "-n", self.namespace, *victims, "--wait=false"]
            self.cluster.kubectl(*args, *(["--force", "--grace-period=0"] if force else []))

        return act

    def kill_trainer(self, *, replicas: int) -> Callable[[], None]:
        """kill_trainer: a fault that SIGKILLs every process of one Running trainer's pod but
        its sandbox, from the machine, as the OOM killer does: the container exits with 137
        (128 + 9), which the kubelet reports and a rule may match. The pod stays; it fails."""

        def act() -> None:
            pods = pods_by_index(self.cluster, self.namespace, self.job, "trainer")
            victim = random.choice([p for i, p in pods.items() if i < replicas])
            for pid in pod_processes(victim.metadata.uid):
                with contextlib.suppress(OSError):  # gone already, or the sandbox's pause
                    if not _is_pause(pid):
                        os.kill(pid, signal.SIGKILL)

        return act

    def kill_worker_process(self, *, replicas: int) -> Callable[[], None]:
        """kill_worker_process: a fault that SIGKILLs the training's Python processes in one
        Running trainer's pod, as the OOM killer picks the largest: the pod's first process (the
        seed's trainers run sshd and a sleep) goes on, so the pod stays Running and nothing in
        the API changes."""

        def act() -> None:
            pods = pods_by_index(self.cluster, self.namespace, self.job, "trainer")
            victim = random.choice([p for i, p in pods.items() if i < replicas])
            for pid in pod_processes(victim.metadata.uid):
                with contextlib.suppress(OSError):
                    if _is_python(pid):
                        os.kill(pid, signal.SIGKILL)

        return act

    def scale_trainers(self, replicas: int) -> Callable[[], None]:
        """scale_trainers: a fault that sets the trainers' replicas."""

        def act() -> None:
            spec = {"spec": {"replicaSpecs": {"trainer": {"replicas": replicas}}}}
            patch_job(self.cluster, self.namespace, self.job, spec)

        return act

    def finish(self) -> None:
        """finish asks the training to end after its next step (train.py's ``--finish-now``
        file, made on trainer 0's disk, where a rank runs): a test's training is long enough
        for faults however slow, and ends once they are over."""
        trainer = pods_by_index(self.cluster, self.namespace, self.job, "trainer")[0]
        made = "mkdir -p /tmp/aitj-train && touch /tmp/aitj-train/finish-now"
        self.cluster.kubectl("exec", "-n", self.namespace, trainer.metadata.name, "--", "sh", "-c", made)

    def heals_from_a_loss_and_a_scale(self, *, redo_bound: int, heal_seconds: float) -> None:
        """heals_from_a_loss_and_a_scale: a force-deleted trainer, then a scale 3 to 5 to 3,
        each healed at full width with at most ``redo_bound`` steps redone per re-forming (the
        training's commit or checkpoint interval). Times are printed, not asserted."""
        for kind, width, act in (
            ("force delete", 3, self.delete_trainer(force=True, replicas=3)),
            ("scale-out 3 to 5", 5, self.scale_trainers(5)),
            ("scale-in 5 to 3", 3, self.scale_trainers(3)),
        ):
            got = self.fault(kind, width, act, heal_seconds)
            assert got.full_width is not None, self.story(f"{kind}: not back at width {width}: {got}")
            assert got.steps_redone <= redo_bound * got.resets, got

    def story(self, headline: str) -> str:
        """story: ``headline``, then what the log says in short (the launcher's own lines: the
        torchrun launcher's sessions, the MPI loop's host list; the re-formings; the last step at
        each width), then its tail: a failure's message is read from its start, and CI may show
        only a part of it."""
        text = self.log()
        said = [line for line in text.splitlines() if "launcher:" in line or "trainers changed" in line][-20:]
        events = parse(text.splitlines())
        resets = [
            f"{e.size} ranks from step {e.resume}" for e in events if isinstance(e, Reset) and e.rank == 0
        ]
        last: dict[int, int] = {}
        for e in events:
            if isinstance(e, Step) and e.rank == 0:
                last[e.size] = e.step
        return "\n".join(
            [
                headline,
                f"re-formings (rank 0): {resets[-10:]}",
                f"last step at each width: {last}",
                "the launcher's lines:",
                *said,
                "the log's tail:",
                text[-3000:],
            ]
        )


def example_job(file: str, name: str, steps: int) -> Doc:
    """example_job: manifests/examples/``file`` named ``name``, its launcher's training
    ``steps`` long (train.py's ``--steps``)."""
    doc: Doc = yaml.safe_load((REPO / "manifests" / "examples" / file).read_text())
    doc["metadata"]["name"] = name
    doc["metadata"].pop("namespace", None)
    (container,) = doc["spec"]["replicaSpecs"]["launcher"]["template"]["spec"]["containers"]
    container["command"][-1], found = re.subn(r"--steps[ =]\d+", f"--steps={steps}", container["command"][-1])
    assert found == 1, container["command"]
    return doc


def started(cluster: KubeCluster, namespace: str, doc: Doc, *, width: int, step: int) -> Training:
    """started creates the job ``doc`` and returns its Training once the launcher runs and its
    log shows a step at or past ``step`` at ``width``."""
    job = doc["metadata"]["name"]
    create_job(cluster, namespace, doc)
    launcher = wait_for(
        lambda: pods_by_index(cluster, namespace, job, "launcher").get(0), 300, "the launcher Running"
    )
    run = Training(cluster, namespace, job, launcher.metadata.name)
    wait_for(
        lambda: any(isinstance(e, Step) and e.size == width and e.step >= step for e in run.events()),
        240,
        f"training at width {width}",
    )
    return run


def heals_through_faults(
    cluster: KubeCluster, namespace: str, doc: Doc, *, checkpoint_every: int, heal_seconds: float
) -> Training:
    """heals_through_faults runs the job ``doc`` (3 trainers, 1 to 5) through a force-deleted
    trainer and a scale 3 to 5 to 3, each healed at full width with at most ``checkpoint_every``
    steps redone per re-forming, and never from step 0 again; then asks the training to finish
    (Training.finish) and waits for Succeeded. ``doc``'s training must outlast the faults
    (OUTLASTS_FAULTS steps): one that ran out of steps while a fault healed slowly would read as
    a fault never healed. Times are printed, not asserted."""
    job = doc["metadata"]["name"]
    created = time.monotonic()
    run = started(cluster, namespace, doc, width=3, step=20)
    print(f"{job}: training at width 3 {time.monotonic() - created:.1f}s after the job was created")
    run.heals_from_a_loss_and_a_scale(redo_bound=checkpoint_every, heal_seconds=heal_seconds)
    reached = max((e.step for e in run.events() if isinstance(e, Step)), default=0)
    print(f"{job}: the faults healed by step {reached}", flush=True)
    restarts = [e for e in run.events() if isinstance(e, Reset) and e.rank == 0]
    assert all(r.resume > 0 for r in restarts[1:]), f"training started again from step 0: {restarts}"
    run.finish()
    wait_for(lambda: phase(cluster, namespace, job) == "Succeeded", 300, f"{job} Succeeded", 2)
    ended = [int(m[1]) for m in re.finditer(r"finish asked for: done at step (\d+)", run.log())]
    assert ended and min(ended) >= reached, f"not ended on request after step {reached}: {ended}"
    print(f"{job}: Succeeded {time.monotonic() - created:.1f}s after the job was created", flush=True)
    return run


def _is_python(pid: int) -> bool:
    """_is_python: a process whose program is Python (a training worker, not sshd or sleep)."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return b"python" in f.read().split(b"\0", 1)[0]


def _is_pause(pid: int) -> bool:
    """_is_pause: the sandbox's process (the pause image's sleep), which holds the pod's
    network; killing it would be a sandbox fault, not a container's exit."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return b"2147483647" in f.read()


def run_chaos(args: list[str], report: Path) -> dict[str, Any]:
    """run_chaos runs ``aitj chaos`` with ``args`` (its report written to ``report``), prints its
    output, asserts it kept every invariant (exit 0) and returns the report."""
    done = subprocess.run(
        [sys.executable, "-m", "aitj", "chaos", *args, "--report", str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stdout, done.stderr[-4000:], sep="\n", flush=True)
    result: dict[str, Any] = json.loads(report.read_text())
    assert done.returncode == 0, result["violations"]
    return result
