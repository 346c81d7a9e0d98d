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
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from aitj.controller.kubeclient import api_client
from aitj.core import api
from aitj.tools.bench import procstat
from aitj.tools.bench.workload import running

NAMESPACE = "perf"


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

    def __init__(self, kubeconfig: str, log: Path, port: int = 18089, pythonpath: str = "") -> None:
        self.port, self.log = port, log
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"PYTHONPATH": pythonpath} if pythonpath else {})}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aitj",
                "run",
                f"--kubeconfig={kubeconfig}",
                f"--metrics-port={port}",
                "--metrics-insecure",
            ],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            env=env,
            cwd=pythonpath or None,  # python -m puts the working directory first on the path
        )

    def rss_mb(self) -> float:
        """rss_mb: resident memory, from /proc."""
        return procstat.rss_bytes(self.proc.pid) / 2**20

    def cpu_s(self) -> float:
        """cpu_s: user+system CPU seconds so far, from /proc."""
        return procstat.cpu_seconds(self.proc.pid)

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
    have = {j["metadata"]["name"] for j in jobs(api_c)}
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
                [i for i in range(n) if f"job-{i:05d}" not in have],
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
        t_pods = wait("pods Running", lambda: sum(map(running, pods(api_c))) >= total, 1800, 5)
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


def restart(
    api_c: client.ApiClient, kubeconfig: str, log_dir: Path, victims: int, code: str, limit: float
) -> None:
    """restart: stop the operator, delete pods while it is down, start it (from ``code``, a
    source tree, when given), time the recovery (giving up after ``limit`` seconds)."""
    op = Operator(kubeconfig, log_dir / "restart-1.log")
    total = sum(j["spec"]["replicaSpecs"]["trainer"]["replicas"] for j in jobs(api_c))
    wait("every pod Running", lambda: sum(map(running, pods(api_c))) == total, 900, 5)
    wait("jobs Running", lambda: all_jobs_running(api_c), 900, 5)
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
    before = restart_counts(api_c)
    names = {p["metadata"]["name"] for p in everyone}
    version = core.list_namespaced_pod(NAMESPACE, limit=1).metadata.resource_version
    fresh: list[float] = []
    started = time.monotonic()

    def watch_new_pods() -> None:
        w: Any = watch.Watch()  # type: ignore[no-untyped-call]
        for event in w.stream(
            core.list_namespaced_pod, NAMESPACE, resource_version=version, timeout_seconds=int(limit)
        ):
            if event["type"] == "ADDED" and event["object"].metadata.name not in names:
                fresh.append(time.monotonic() - started)
                if len(fresh) >= len(chosen):
                    return

    watcher = threading.Thread(target=watch_new_pods, daemon=True)
    watcher.start()
    op = Operator(kubeconfig, log_dir / "restart-2.log", pythonpath=code)
    try:
        counted = current = None
        while time.monotonic() - started < limit and (counted is None or current is None):
            time.sleep(1)
            now = jobs(api_c)
            counts = {
                j["metadata"]["name"]: j.get("status", {}).get("RestartCount", {}).get("trainer", 0)
                for j in now
            }
            if counted is None and all(counts[job] > before[job] for job in chosen):
                counted = time.monotonic() - started
            if counted is not None and all(j.get("status", {}).get("phase") == "Running" for j in now):
                current = time.monotonic() - started
        last = fresh[-1] if len(fresh) == len(chosen) else None
        print(f"restart with {len(everyone)} pods, {len(chosen)} force-deleted while down:")
        print(f"  first replacement {fresh[0] if fresh else None}s, all replaced {last}s ({len(fresh)} seen)")
        print(f"  every victim's restart counted {counted}s, every job Running as well {current}s")
        print(f"RSS {op.rss_mb():.0f} MB, CPU {op.cpu_s():.1f}s")
        if current is not None:
            idle(op)
    finally:
        seconds, tracebacks = op.stop()
        print(f"SIGTERM: exited in {seconds:.1f}s, tracebacks {tracebacks}")


def restart_counts(api_c: client.ApiClient) -> dict[str, int]:
    """restart_counts: each job's RestartCount.trainer."""
    return {
        j["metadata"]["name"]: j.get("status", {}).get("RestartCount", {}).get("trainer", 0)
        for j in jobs(api_c)
    }


def list_both(api_c: client.ApiClient, rounds: int = 3) -> None:
    """list_both: every pod, paginated, into PodViews: with the official client (what the
    informers use) and with aiohttp on an event loop (what kopf uses); seconds and CPU each."""
    import asyncio
    import ssl

    import aiohttp

    from aitj.core.observed import PodView

    cfg = api_c.configuration
    path = f"{cfg.host}/api/v1/pods"

    def with_client() -> int:
        return len([PodView.from_dict(p) for p in raw(api_c, "/api/v1/pods")])

    async def with_aiohttp() -> int:
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        context.load_cert_chain(cfg.cert_file, cfg.key_file)
        views, token = [], ""
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
            while True:
                params = {"limit": "500", **({"continue": token} if token else {})}
                async with session.get(path, params=params) as response:
                    page = json.loads(await response.read())
                views += [PodView.from_dict(p) for p in page["items"]]
                token = page["metadata"].get("continue") or ""
                if not token:
                    return len(views)

    for name, fn in (("client", with_client), ("aiohttp", lambda: asyncio.run(with_aiohttp()))):
        for _ in range(rounds):
            cpu, started = time.process_time(), time.monotonic()
            n = fn()
            print(
                f"{name}: {n} pods listed into views in {time.monotonic() - started:.2f}s, "
                f"CPU {time.process_time() - cpu:.2f}s"
            )


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
    r.add_argument("--code", default="", help="run the restarted operator from this source tree")
    r.add_argument("--limit", type=float, default=300)
    sub.add_parser("teardown")
    sub.add_parser("list")
    args = parser.parse_args()
    api_c = api_client(Path(args.kubeconfig))
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    if args.cmd == "populate":
        populate(api_c, args.jobs, args.replicas)
    elif args.cmd == "bringup":
        bringup(api_c, args.kubeconfig, logs)
    elif args.cmd == "restart":
        restart(api_c, args.kubeconfig, logs, args.victims, args.code, args.limit)
    elif args.cmd == "list":
        list_both(api_c)
    else:
        client.CoreV1Api(api_c).delete_namespace(NAMESPACE, _preload_content=False)


if __name__ == "__main__":
    main()
