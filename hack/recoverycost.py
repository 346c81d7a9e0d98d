#!/usr/bin/env python3
"""The operator's CPU per recovery, by thread (issue 26, F6), on a local control plane.

Usage (from a worktree, so that the operator started is that worktree's code; the nodes post
their status as make bench's do):
    aitj dev cluster up --name mine --nodes 40 --node-profile cpu --node-status-seconds 300
    PYTHONPATH=$PWD .venv/bin/python hack/recoverycost.py --cluster mine
    PYTHONPATH=$PWD .venv/bin/python hack/recoverycost.py --cluster mine --jobs 1 --recoveries 300

How it measures. It starts ``aitj run`` against the cluster (``aitj.tools.demo.start_operator``:
``python -m aitj run`` with this process's environment, so ``PYTHONPATH`` decides whose code
runs; the path is printed), creates ``--jobs`` jobs of ``--trainers`` trainers (the bench's
job, ``aitj.tools.bench.workload``: restarted on a force delete), waits until every pod runs
and 8 s more for the bring-up's tail, then force-deletes ``--recoveries`` trainers one at a
time, round-robin over the jobs, each time waiting for the victim to be marked deleted and its
replacement to be Running before the next (as the bench's F1 and F12 do; ``--settle``: for the
victim to be gone too, its finalizer released, the last call of the recovery's pass). Its own
watch of the namespace's pods counts the pod events and dates each replacement's ADDED event
(latency: from the delete call to that event; the create, not the Running).

Where a recovery's time goes: the operator runs with ``AITJ_LOG_LEVEL=debug`` (unless the
variable is set: ``info`` to time the operator without its debug lines), whose "pass
timed" lines (``aitj.controller.passtrace``) stamp each pass; each trial is split, from the pass
that created its replacement, into the delete to the operator reading its event (the apiserver
and the watch), the wait for the job's pass in flight (``busy``), the rest of the wait (its
pace, the loop), the snapshot and plan, the hand-off to a pass thread, the calls to the create
answered, and that to the harness's ADDED event; quantiles of each and the slowest trials.

The operator's CPU is read from ``/proc/<pid>/task/<tid>/stat`` (user + system ticks, per
thread) before the first delete and 2.5 s after the last replacement runs (the last status
write and its echo), so it holds the recoveries and nothing of the bring-up, nor the scrapes of
its /metrics (read outside the window, as the bench's are: a scrape walks every pod). Passes are
the operator's ``aitj_reconcile_seconds_count`` (passes that reached the executor; F13 divides
by these), and, as "started", ``workqueue_work_duration_seconds_count`` (every pass, those
held or sending nothing too). ``--record FILE``: ``py-spy record`` (raw collapsed stacks, by
thread, non-blocking) over the same window, for where the time goes (it costs the operator
CPU: not for figures). Non-blocking, a sample is where a thread is, running or not (the event
loop's select is a fifth of its samples); with ``--gil`` only the thread holding the GIL is
sampled, which is closer to where the CPU of Python goes; ``--rate``: samples a second (100 by
default, few for a window of seconds). Thread names:
from ``py-spy dump`` when py-spy is found (``--py-spy``, $PATH, /tmp/pyspy/bin), else (or with
``--no-py-spy``) from the line the operator logs on SIGUSR2 (``aitj.controller.runner``), else
the thread's id; a pool's threads (``pass_0``, ``pass_1``, ...) are added up (``pass_*``). The
process's total less its live threads' is shown as the threads that ended meanwhile (and the
rounding of per-thread ticks: a few ms over a short run).

Figures move about 10 % from run to run on a shared machine: compare two versions by
alternating runs, two or more each. The jobs are deleted at the end (the operator still
running, so it lets their pods go) and the cluster is left as it was.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client, watch

import aitj
from aitj.controller.kubeclient import api_client
from aitj.core import api as A
from aitj.devcluster.cluster import LocalCluster
from aitj.tools.bench import opmetrics, procstat
from aitj.tools.bench.workload import NS_OURS, training_job
from aitj.tools.demo import install_crd, start_operator

TICK = procstat.TICKS


def thread_cpu(pid: int) -> dict[str, float]:
    """thread_cpu: CPU seconds (user + system) of each live thread of ``pid``, by thread id."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = procstat.parse_stat(Path(f"/proc/{pid}/task/{tid}/stat").read_text())
        except OSError:  # the thread ended meanwhile
            continue
    return out


def process_cpu(pid: int) -> tuple[float, float]:
    """process_cpu: user and system CPU seconds of ``pid`` (its threads, live and ended)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def find_py_spy(given: str | None) -> str | None:
    """find_py_spy: the py-spy executable to use, if any."""
    for candidate in (given, shutil.which("py-spy"), "/tmp/pyspy/bin/py-spy"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def names_by_py_spy(py_spy: str, pid: int) -> dict[str, str]:
    """names_by_py_spy: thread id -> name, from ``py-spy dump`` (its ``Thread 0x.. (idle): "name"``)."""
    dump = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, check=False)
    names = {}
    for line in dump.stdout.splitlines():
        if line.startswith("Thread "):
            parts = line.split()
            quoted = re.search(r'"([^"]*)"', line)
            names[str(int(parts[1], 0))] = quoted.group(1) if quoted else parts[-1]
    return names


def names_by_signal(pid: int, log_path: Path) -> dict[str, str]:
    """names_by_signal: thread id -> name, from the line the operator logs on SIGUSR2."""
    size = log_path.stat().st_size
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        time.sleep(0.2)
        with log_path.open("rb") as f:
            f.seek(size)
            tail = f.read().decode(errors="replace")
        found = [line for line in tail.splitlines() if "thread names" in line]
        if found:
            return dict(re.findall(r"['\"]?(\d+)['\"]?: ?['\"]([^'\"]*)['\"]", found[-1]))
    return {}


def thread_names(pid: int, log_path: Path, py_spy: str | None) -> tuple[dict[str, str], str]:
    """thread_names: thread id -> name, and where the names came from."""
    if py_spy is not None:
        names = names_by_py_spy(py_spy, pid)
        if names:
            return names, "py-spy"
    names = names_by_signal(pid, log_path)
    return (names, "the operator's SIGUSR2 dump") if names else ({}, "none: thread ids")


def start_record(
    py_spy: str | None, pid: int, path: str | None, gil: bool = False, rate: int = 100
) -> subprocess.Popen[bytes] | None:
    """start_record: ``py-spy record`` of ``pid`` into ``path`` (collapsed stacks, by thread),
    ``rate`` samples a second, until ``stop_record``; None without a path. ``gil``: only the
    thread holding the GIL is sampled (``--gil``)."""
    if path is None:
        return None
    if py_spy is None:
        raise SystemExit("--record needs py-spy")
    command = [py_spy, "record", "--pid", str(pid), "--format", "raw", "--threads", "--nonblocking"]
    command += ["--rate", str(rate)]
    if gil:
        command.append("--gil")
    recorder = subprocess.Popen([*command, "--output", path], stdout=subprocess.DEVNULL)
    time.sleep(1)  # py-spy attaches
    return recorder


def stop_record(recorder: subprocess.Popen[bytes] | None) -> None:
    """stop_record: py-spy writes its file on SIGINT."""
    if recorder is not None:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(60)


def group(name: str) -> str:
    """group: a pool's threads under one name (``pass_3`` -> ``pass_*``, ``list-pods`` kept)."""
    return re.sub(r"_\d+$", "_*", name)


def free_port() -> int:
    """free_port: a TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PodWatch:
    """PodWatch: the namespace's pods as their watch events tell (a thread of its own)."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self.core = core
        self.state: dict[str, tuple[str, str | None, Any]] = {}  # name -> (type, phase, deletion)
        self.added: dict[str, float] = {}  # name -> when its ADDED event came
        self.events = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:  # a watch that expired (410: a bring-up of thousands on a busy machine) starts again
            with contextlib.suppress(client.ApiException):
                self._watch()

    def _watch(self) -> None:
        stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
            self.core.list_namespaced_pod, NS_OURS, _request_timeout=3600
        )
        for event in stream:
            pod = event["object"]
            self.events += 1
            self.state[pod.metadata.name] = (event["type"], pod.status.phase, pod.metadata.deletion_timestamp)
            if event["type"] == "ADDED":
                self.added.setdefault(pod.metadata.name, time.time())

    def running(self, prefix: str) -> list[str]:
        """running: the pods of this run that run and are not being deleted, by name."""
        return sorted(
            name
            for name, (kind, phase, deleting) in list(self.state.items())
            if name.startswith(prefix) and kind != "DELETED" and phase == "Running" and deleting is None
        )


def recover(
    core: client.CoreV1Api, pods: PodWatch, prefix: str, shape: tuple[int, int], n: int, settle: bool = False
) -> list[tuple[float, float]]:
    """recover: ``n`` force deletes one at a time, round-robin over the jobs (``shape``: jobs,
    trainers each), a different trainer each round; when each delete was sent and when its
    replacement's ADDED event came (wall clock, as the operator's "pass timed" lines)."""
    jobs, trainers = shape
    total = jobs * trainers
    latencies = []
    for i in range(n):
        running = pods.running(prefix)  # sorted: each job's trainers together
        victim = running[(i * trainers + (i // jobs) % trainers) % len(running)]
        before = set(pods.state)
        started = time.time()
        core.delete_namespaced_pod(victim, NS_OURS, body=client.V1DeleteOptions(grace_period_seconds=0))
        deadline = time.monotonic() + 60
        while True:
            new = [name for name in list(pods.state) if name not in before and name.startswith(prefix)]
            now_running = pods.running(prefix)
            gone = not settle or pods.state.get(victim, ("",))[0] == "DELETED"  # released: the pass ended
            if new and victim not in now_running and len(now_running) == total and gone:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"recovery {i}: {victim} not replaced within 60 s")
            time.sleep(0.002)
        latencies.append((started, pods.added[new[0]]))
    return latencies


def pass_lines(log_path: Path, since: float) -> list[dict[str, str]]:
    """pass_lines: the operator's "pass timed" lines (``aitj run --log-level debug``,
    ``aitj.controller.passtrace``: every pass that reached the executor) begun at ``since`` or
    later, in order."""
    out = []
    for line in log_path.read_text(errors="replace").splitlines():
        if "pass timed" in line:
            fields = dict(re.findall(r"(\w+)=(\S+)", line))
            if float(fields.get("started", 0)) >= since:
                out.append(fields)
    return sorted(out, key=lambda p: float(p["started"]))


def trial_stages(deleted: float, added: float, passes: list[dict[str, str]]) -> dict[str, float] | None:
    """trial_stages: one recovery's ms, from the pass that created its replacement (the first
    whose create was answered after the delete): the delete to its event read by the operator
    (the apiserver and the watch: the first kick of the pass read after the delete), then
    waiting for the job's pass in flight before it (``busy``), then for the rest of the start
    (the pace, the loop), the snapshot and plan, the hand-off to a pass thread, the calls to
    the create answered, and that to the harness's ADDED event."""
    i = next((i for i, p in enumerate(passes) if int(p["pods"]) and float(p["created"]) >= deleted), None)
    if i is None:
        return None
    p, f = passes[i], {k: float(v) for k, v in passes[i].items() if re.fullmatch(r"[-\d.]+", v)}
    read = min((r for r in map(float, p["reads"].split(",")) if r >= deleted), default=f["read"])
    prev = next((q for q in reversed(passes[:i]) if q["job"] == p["job"]), None)  # the job's pass before
    before = float(prev["ended"]) if prev is not None else 0.0
    busy = max(0.0, min(before, f["started"]) - read)
    ms = {"watch": read - deleted, "busy": busy, "start": f["started"] - read - busy}
    ms = {k: 1000 * v for k, v in ms.items()}
    ms |= {"plan": f["plan_ms"], "to_thread": f["to_thread_ms"], "create": f["create_ms"]}
    ms["added"] = 1000 * (added - f["created"])
    ms["total"] = 1000 * (added - deleted)
    ms["plan_cpu"] = f["plan_cpu_ms"]
    ms["paced"] = float(p["paced"] == "True")
    ms["gc2"] = float(p["gcs"].split("/")[-1])
    ms["after_status"] = float(prev is not None and prev["status"] == "True" and before > read)
    return ms


def decompose(trials: list[tuple[float, float]], passes: list[dict[str, str]]) -> None:
    """decompose: each trial's stages (``trial_stages``); quantiles of each, the slowest."""
    rows = [r for deleted, added in trials if (r := trial_stages(deleted, added, passes)) is not None]
    if not rows:
        print("no 'pass timed' lines (the operator's code has none, or its log level is not debug)")
        return
    rows.sort(key=lambda r: r["total"])

    def q(values: list[float], f: float) -> float:
        values = sorted(values)
        return values[min(len(values) - 1, int(f * len(values)))]

    print(f"stages of {len(rows)} recoveries, ms: p50 / p90 / p99 / mean (each stage on its own)")
    for name in ("watch", "busy", "start", "plan", "to_thread", "create", "added", "total", "plan_cpu"):
        vals = [r[name] for r in rows]
        mean = sum(vals) / len(vals)
        print(f"  {name:10} {q(vals, 0.5):7.2f} {q(vals, 0.9):7.2f} {q(vals, 0.99):7.2f} {mean:7.2f}")
    for name in ("paced", "gc2", "after_status"):
        print(f"  {name}: {sum(r[name] for r in rows):.0f} of {len(rows)}")
    print("slowest 5 %, and the median:")
    for r in [*rows[-max(1, len(rows) // 20) :], rows[len(rows) // 2]]:
        print("  " + " ".join(f"{k} {v:.1f}" for k, v in r.items()))


def cleanup(custom: client.CustomObjectsApi, pods: PodWatch, names: list[str], prefix: str) -> None:
    """cleanup: delete the run's jobs and wait (a while) for their pods to go."""
    for name in names:
        with contextlib.suppress(client.ApiException):  # gone already
            custom.delete_namespaced_custom_object(A.GROUP, A.VERSION, NS_OURS, A.PLURAL, name)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if not any(n.startswith(prefix) and k != "DELETED" for n, (k, _p, _d) in list(pods.state.items())):
            return
        time.sleep(0.5)


def all_passes(metrics_text: str) -> float:
    """all_passes: every pass started so far, those that sent nothing or were held too (the
    count of ``workqueue_work_duration_seconds``; 0 when /metrics has none)."""
    name = "workqueue_work_duration_seconds_count"
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics_text.splitlines() if line.startswith(name))


def report(
    agg: dict[str, float],
    cpu: float,
    user_sys: tuple[float, float],
    n: int,
    counts: tuple[float, float, int],
) -> None:
    """report: print the figures."""
    passes_made, started, events = counts
    print("operator CPU per recovery, ms, by thread:")
    for name, seconds in sorted(agg.items(), key=lambda kv: -kv[1]):
        if seconds > 0:
            print(f"  {name:32} {1000 * seconds / n:7.2f}")
    print(
        f"{n} recoveries: operator CPU {1000 * cpu / n:.2f} ms per recovery "
        f"(user {1000 * user_sys[0] / n:.2f}, system {1000 * user_sys[1] / n:.2f}); "
        f"passes {passes_made / n:.2f} (started {started / n:.2f}), pod events {events / n:.2f} "
        f"per recovery; CPU per pass {1000 * cpu / max(1.0, passes_made):.2f} ms; "
        f"{1000 * cpu / max(1, events):.2f} CPU-s per 1,000 pod events"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--cluster", required=True, help="the local cluster's name (aitj dev cluster up --name)"
    )
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--trainers", type=int, default=8, help="trainers per job")
    parser.add_argument("--recoveries", type=int, default=100)
    parser.add_argument("--py-spy", default=None, help="py-spy executable (for thread names)")
    parser.add_argument("--no-py-spy", action="store_true", help="names from the operator's SIGUSR2 dump")
    parser.add_argument("--record", default=None, help="py-spy record's collapsed stacks of the window here")
    parser.add_argument("--gil", action="store_true", help="--record: only the thread holding the GIL")
    parser.add_argument("--rate", type=int, default=100, help="--record: samples a second")
    parser.add_argument(
        "--settle",
        action="store_true",
        help="before the next delete, wait for the victim to be gone too (its finalizer released: the "
        "last step of the recovery's pass), so that no delete meets the job's last recovery pass in flight",
    )
    args = parser.parse_args()

    cluster = LocalCluster(args.cluster)
    install_crd(cluster)
    apic = api_client(cluster.kubeconfig)
    core, custom = client.CoreV1Api(apic), client.CustomObjectsApi(apic)
    with contextlib.suppress(client.ApiException):  # there already
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS_OURS)))
    print(f"operator code: {Path(aitj.__file__).parent} (PYTHONPATH={os.environ.get('PYTHONPATH', '')})")
    os.environ.setdefault("AITJ_LOG_LEVEL", "debug")  # "pass timed" lines (start_operator passes the env)
    port = free_port()
    operator, log_path = start_operator(cluster, metrics_port=port)
    prefix = f"rc{os.getpid()}-"
    names = [f"{prefix}{j}" for j in range(args.jobs)]
    pods = PodWatch(core)
    try:
        for name in names:
            body = training_job(name)
            trainer = body["spec"]["replicaSpecs"]["trainer"]
            trainer["replicas"] = trainer["maxReplicas"] = args.trainers
            custom.create_namespaced_custom_object(A.GROUP, A.VERSION, NS_OURS, A.PLURAL, body)
        total = args.jobs * args.trainers
        started = time.monotonic()
        while len(pods.running(prefix)) < total:
            if time.monotonic() - started > 900 or operator.poll() is not None:
                raise SystemExit(f"bring-up: {len(pods.running(prefix))} of {total} running")
            time.sleep(0.2)
        time.sleep(8)  # the bring-up's last status writes and their echoes
        py_spy = None if args.no_py_spy else find_py_spy(args.py_spy)
        # The scrapes are outside the window (a scrape walks every pod of every job: tens of ms
        # at 4,096), as the bench's are (aitj.tools.bench.large).
        # attached before the window
        recorder = start_record(py_spy, operator.pid, args.record, args.gil, args.rate)
        text0 = opmetrics.scrape(port)
        cpu0, user_sys0 = thread_cpu(operator.pid), process_cpu(operator.pid)
        events0 = pods.events
        trials = recover(core, pods, prefix, (args.jobs, args.trainers), args.recoveries, args.settle)
        latencies = [added - deleted for deleted, added in trials]
        time.sleep(2.5)  # the last status write and its echo
        cpu1, user_sys1 = thread_cpu(operator.pid), process_cpu(operator.pid)
        stop_record(recorder)
        text1 = opmetrics.scrape(port)
        counts = (
            opmetrics.passes(text1) - opmetrics.passes(text0),
            all_passes(text1) - all_passes(text0),
            pods.events - events0,
        )
        tid_names, source = thread_names(operator.pid, log_path, py_spy)
        agg: collections.defaultdict[str, float] = collections.defaultdict(float)
        for tid, seconds in cpu1.items():
            agg[group(tid_names.get(tid, f"tid {tid}"))] += seconds - cpu0.get(tid, 0.0)
        user_sys = (user_sys1[0] - user_sys0[0], user_sys1[1] - user_sys0[1])
        cpu = sum(user_sys)
        agg["(threads that ended)"] = cpu - sum(agg.values())  # the process's figure holds them
        print(f"jobs {args.jobs} x {args.trainers} trainers; thread names: {source}")
        report(agg, cpu, user_sys, args.recoveries, counts)
        latencies.sort()
        n = len(latencies)
        print(
            f"replacement created: p50 {1000 * latencies[n // 2]:.1f} ms, "
            f"p90 {1000 * latencies[min(n - 1, int(n * 0.9))]:.1f} ms, "
            f"p99 {1000 * latencies[min(n - 1, int(n * 0.99))]:.1f} ms"
        )
        decompose(trials, pass_lines(log_path, trials[0][0]))
    finally:
        cleanup(custom, pods, names, prefix)
        operator.terminate()
        try:
            operator.wait(30)
        except subprocess.TimeoutExpired:
            operator.kill()


if __name__ == "__main__":
    main()
