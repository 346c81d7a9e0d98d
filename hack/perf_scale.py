"""perf_scale: the operator at scale on a running cluster, measured (figures, not assertions).

    python hack/perf_scale.py --kubeconfig K populate --jobs 1250 --replicas 8
    python hack/perf_scale.py --kubeconfig K bringup       # jobs created, operator started: all Running
    python hack/perf_scale.py --kubeconfig K restart --victims 50
    python hack/perf_scale.py --kubeconfig K teardown

``populate`` creates the namespace and the jobs (one replica, ``--replicas`` trainers, no
plugins, pods that run forever on kwok); ``bringup`` starts the operator and times every pod
Running and every job Running, with passes, stale passes, CPU and RSS; ``restart`` starts the
operator, waits for all jobs Running, SIGTERMs it (counting tracebacks), force-deletes one pod
in each of ``--victims`` jobs while it is down, starts it again and times the first
replacement, every victim's replacement and every victim job's status counting the restart.
RSS and CPU are read from /proc. Uses the official client without rate limits.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client

from aitj.controller.kubeclient import api_client
from aitj.core import api

NAMESPACE = "perf"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def job_manifest(name: str, replicas: int) -> dict[str, Any]:
    """job_manifest: a job of ``replicas`` trainers, each pod running forever."""
    return {
        "apiVersion": f"{api.GROUP}/{api.VERSION}",
        "kind": api.KIND,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "faultTolerant": True,
            "replicaSpecs": {
                "trainer": {
                    "replicas": replicas,
                    "restartPolicy": "OnNodeFailWithExitCode",
                    "restartScope": "Pod",
                    "faultTolerantPolicy": [
                        {
                            "exceptionalEvent": "nodeNotReady,PodForceDeleted",
                            "restartPolicy": "OnNodeFail",
                            "restartScope": "Pod",
                        }
                    ],
                    "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                }
            },
        },
    }


def raw(api_c: client.ApiClient, path: str, **query: str) -> Iterator[dict[str, Any]]:
    """raw: every item of a collection, paginated, as plain JSON."""
    token = ""
    while True:
        params = [("limit", "500"), *query.items()] + ([("continue", token)] if token else [])
        method, url, headers, body, post = api_c.param_serialize(
            "GET",
            path,
            query_params=params,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        page = json.loads(api_c.call_api(method, url, headers, body, post).response.data)
        yield from page.get("items") or ()
        token = page.get("metadata", {}).get("continue") or ""
        if not token:
            return


def pods(api_c: client.ApiClient) -> list[dict[str, Any]]:
    """pods: the namespace's pods."""
    return list(raw(api_c, f"/api/v1/namespaces/{NAMESPACE}/pods"))


def jobs(api_c: client.ApiClient) -> list[dict[str, Any]]:
    """jobs: the namespace's AITrainingJobs."""
    return list(raw(api_c, f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{NAMESPACE}/{api.PLURAL}"))


def running(pod: dict[str, Any]) -> bool:
    """running: Running and not being deleted."""
    return pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def wait(what: str, probe: Callable[[], bool], timeout: float, every: float = 1.0) -> float:
    """wait: seconds until ``probe`` holds (raises after ``timeout``)."""
    started = time.monotonic()
    while not probe():
        if time.monotonic() - started > timeout:
            raise TimeoutError(what)
        time.sleep(every)
    return time.monotonic() - started


class Operator:
    """Operator: ``aitj run`` as a process, with its log, /metrics and /proc figures."""

    def __init__(self, kubeconfig: str, log: Path, port: int = 18089) -> None:
        self.port, self.log = port, log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aitj", "run", f"--kubeconfig={kubeconfig}", f"--metrics-port={port}"],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def rss_mb(self) -> float:
        """rss_mb: resident memory, from /proc."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]

    def cpu_s(self) -> float:
        """cpu_s: user+system CPU seconds so far, from /proc."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def metric(self, name: str) -> float:
        """metric: the sum of a metric's samples on /metrics."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))

    def stop(self) -> tuple[float, int]:
        """stop: SIGTERM; seconds to exit and tracebacks in the log."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        return time.monotonic() - started, self.log.read_text(errors="replace").count("Traceback")


def populate(api_c: client.ApiClient, n: int, replicas: int) -> None:
    """populate creates the namespace and ``n`` jobs, 32 at a time."""
    core: Any = client.CoreV1Api(api_c)
    custom: Any = client.CustomObjectsApi(api_c)
    try:
        core.create_namespace({"metadata": {"name": NAMESPACE}}, _preload_content=False)
    except client.ApiException as e:
        if e.status != 409:
            raise
    started = time.monotonic()
    with ThreadPoolExecutor(32) as pool:
        list(
            pool.map(
                lambda i: custom.create_namespaced_custom_object(
                    api.GROUP,
                    api.VERSION,
                    NAMESPACE,
                    api.PLURAL,
                    job_manifest(f"job-{i:05d}", replicas),
                    _preload_content=False,
                ),
                range(n),
            )
        )
    print(f"{n} jobs created in {time.monotonic() - started:.1f}s")


def all_jobs_running(api_c: client.ApiClient) -> bool:
    """all_jobs_running: every job's status says Running."""
    return all(j.get("status", {}).get("phase") == "Running" for j in jobs(api_c))


def bringup(api_c: client.ApiClient, kubeconfig: str, log_dir: Path) -> None:
    """bringup: the operator creates every pod; times pods Running and jobs Running."""
    total = sum(j["spec"]["replicaSpecs"]["trainer"]["replicas"] for j in jobs(api_c))
    op = Operator(kubeconfig, log_dir / "bringup.log")
    try:
        t_pods = wait("pods Running", lambda: sum(map(running, pods(api_c))) >= total, 900, 2)
        print(f"bring-up: {total} pods Running after {t_pods:.1f}s")
        t_jobs = wait("jobs Running", lambda: all_jobs_running(api_c), 300, 1)
        print(f"bring-up: every job Running {t_jobs:.1f}s after the last pod ran")
        passes = op.metric("aitj_reconcile_seconds_count")
        stale = op.metric('aitj_reconcile_errors_total{stage="stale"}')
        print(f"passes {passes:.0f}, stale {stale:.0f} ({100 * stale / max(passes, 1):.1f} %)")
        print(
            f"operator CPU {op.cpu_s():.1f}s ({1000 * op.cpu_s() / total:.2f} ms per pod), "
            f"RSS {op.rss_mb():.0f} MB"
        )
        idle(op)
    finally:
        seconds, tracebacks = op.stop()
        print(f"SIGTERM: exited in {seconds:.1f}s, tracebacks in the log: {tracebacks}")


def idle(op: Operator, seconds: float = 30.0) -> None:
    """idle: the operator's CPU over ``seconds`` with nothing changing, in % of a core."""
    before = op.cpu_s()
    time.sleep(seconds)
    print(f"idle CPU {100 * (op.cpu_s() - before) / seconds:.2f} % of a core, RSS {op.rss_mb():.0f} MB")


def restart(api_c: client.ApiClient, kubeconfig: str, log_dir: Path, victims: int) -> None:
    """restart: stop the operator, delete pods while it is down, start it, time the recovery."""
    op = Operator(kubeconfig, log_dir / "restart-1.log")
    wait("jobs Running", lambda: all_jobs_running(api_c), 600, 2)
    print(f"before the restart: RSS {op.rss_mb():.0f} MB")
    seconds, tracebacks = op.stop()
    print(f"SIGTERM at rest: exited in {seconds:.1f}s, tracebacks {tracebacks}")
    everyone = pods(api_c)
    chosen: dict[str, dict[str, Any]] = {}
    for pod in everyone:
        chosen.setdefault(pod["metadata"]["labels"][api.LABEL_JOB], pod)
        if len(chosen) == victims:
            break
    core: Any = client.CoreV1Api(api_c)
    for pod in chosen.values():
        core.delete_namespaced_pod(
            pod["metadata"]["name"], NAMESPACE, grace_period_seconds=0, _preload_content=False
        )
    gone = {p["metadata"]["name"] for p in chosen.values()}
    before = {
        j["metadata"]["name"]: j.get("status", {}).get("RestartCount", {}).get("trainer", 0)
        for j in jobs(api_c)
    }
    started = time.monotonic()
    op = Operator(kubeconfig, log_dir / "restart-2.log")
    names = {p["metadata"]["name"] for p in everyone}
    first = replaced = None
    while replaced is None and time.monotonic() - started < 300:
        now = pods(api_c)
        fresh = [p for p in now if p["metadata"]["name"] not in names]
        if fresh and first is None:
            first = time.monotonic() - started
        if len(fresh) >= len(gone):
            replaced = time.monotonic() - started
        time.sleep(0.2)
    print(
        f"restart with {len(everyone)} pods: first replacement {first}s, all {len(gone)} replaced {replaced}s"
    )

    def counted() -> bool:
        now = {
            j["metadata"]["name"]: j.get("status", {}).get("RestartCount", {}).get("trainer", 0)
            for j in jobs(api_c)
        }
        return all(now[job] > before[job] for job in chosen)

    wait("restarts counted", counted, 300, 0.5)
    print(f"every victim job's status counts its restart {time.monotonic() - started:.1f}s after the start")
    wait("jobs Running", lambda: all_jobs_running(api_c), 300, 1)
    print(f"every job Running {time.monotonic() - started:.1f}s after the start; RSS {op.rss_mb():.0f} MB")
    idle(op)
    seconds, tracebacks = op.stop()
    print(f"SIGTERM: exited in {seconds:.1f}s, tracebacks {tracebacks}")


def main() -> None:
    """main: the command line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--logs", default="/tmp/perf-scale")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("populate")
    p.add_argument("--jobs", type=int, default=1250)
    p.add_argument("--replicas", type=int, default=8)
    sub.add_parser("bringup")
    r = sub.add_parser("restart")
    r.add_argument("--victims", type=int, default=50)
    sub.add_parser("teardown")
    args = parser.parse_args()
    api_c = api_client(Path(args.kubeconfig))
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    if args.cmd == "populate":
        populate(api_c, args.jobs, args.replicas)
    elif args.cmd == "bringup":
        bringup(api_c, args.kubeconfig, logs)
    elif args.cmd == "restart":
        restart(api_c, args.kubeconfig, logs, args.victims)
    else:
        client.CoreV1Api(api_c).delete_namespace(NAMESPACE, _preload_content=False)


if __name__ == "__main__":
    main()
