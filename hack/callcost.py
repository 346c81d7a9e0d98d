#!/usr/bin/env python3
"""What an API call and a watch event cost the operator's process, by HTTP client (issue 26):
the current design (urllib3 in threads) against an asyncio client on the event loop.

Usage (a local control plane of your own; the kubeconfig of ``aitj dev cluster up``):
    PYTHONPATH=$PWD .venv/bin/python hack/callcost.py --kubeconfig ~/.local/state/aitj/clusters/X/kubeconfig
    PYTHONPATH=$PWD:/path/to/httpx .venv/bin/python hack/callcost.py ...   # adds httpx, if importable

Calls: each round is the four calls of one recovery's pass, with the bodies the planner makes for
a force-deleted trainer of a job of 8 (tests/unit/builders.py's seed job: the replacement pod's
create, carrying the tracking finalizer; the strategic-merge PATCH that releases the finalizer;
the restart Event; the job's status as the executor writes it, a JSON patch testing the job's
resourceVersion, on a real AITrainingJob of the CRD in crds/). The finalizer is released from
the pod just created, not from a terminating one (the client's work is the same), and the pods
carry a scheduling gate so the scheduler and kwok leave them alone. Every answer is read, and
the pod and job answers are decoded with orjson, as the executor does (``answers.body_of``).
Rounds run one after the other, as recoveries one at a time; connections are warm (a few rounds
first, not measured). The ways:

- ``wire``: today's path: the loop hands the round to a pass thread (``run_in_executor`` on a
  ThreadPoolExecutor of 16, as the reconciler does) and awaits it; the thread makes the calls
  with ``aitj.controller.executor.wire.Wire`` (urllib3 on the official client's pool).
- ``aiohttp``: the calls awaited on the loop itself, an aiohttp session with the same TLS
  (the kubeconfig's CA, client certificate and key, or its token), same headers, same bodies.
- ``httpx``: the same with httpx's AsyncClient (only when httpx is importable).

Measured over the rounds of a run: the process's CPU (``time.process_time``; its user and
system split from ``getrusage``, the kernel's same counters as /proc/self/stat at microseconds),
per call and per round; the CPU of each call alone (``time.thread_time`` around it, in the
thread that makes it: on the loop only that task runs), so what the round costs beyond its calls
(the hand-offs) shows; and the wall time of each call and round (p50, p99).

Watches: the pod watch of a namespace of its own, while a separate process (this script's
``generate`` command, sequential calls) creates, patches and deletes pods, each event read and
handed to a sink on the loop as the cache gets it (a ``Change`` with the pod's ``Item`` and
``PodView``, made by the operator's own ``cache.PODS`` kind). The ways:

- ``thread``: the operator's ``aitj.controller.informer.Informer``: a urllib3 stream in its
  thread, orjson, the view, ``call_soon_threadsafe`` to the loop (one per burst);
- ``aiohttp``: the response's ``content.readline()`` on the loop, orjson, the view, the sink
  called directly;
- ``httpx``: ``aiter_lines()`` on the loop (when importable).

CPU per event: the process's CPU from the go given to the generator to the last pod's DELETED,
over the events received (the generator's CPU is its own process's).

Hand-offs alone (``--handoffs``): the CPU of a ``run_in_executor`` round trip and of a
``call_soon_threadsafe`` post, no HTTP, one every 2 ms (``handoffs``). Every way runs
``--repeats`` times, the ways alternating within each repeat; a table per kind at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import copy
import dataclasses
import importlib.util
import resource
import ssl
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes import client

from aitj.controller import cache
from aitj.controller.executor.events import event_body
from aitj.controller.executor.wire import JSON_PATCH, STRATEGIC_PATCH, Wire, encode
from aitj.controller.informer import JSON, Action, Change, Informer, Item, Sync, watch_action
from aitj.controller.kubeclient import api_client
from aitj.core import api
from aitj.core.api import LABEL_INDEX
from aitj.core.observed import TRACKING_FINALIZER
from tests.unit.builders import KeptViews, Pod, node, seed_job, trainer

ROOT = Path(__file__).resolve().parent.parent
CALLS = ("create", "release", "event", "status")
IMAGE = "registry.aitj.local/aitj/train:1"
GATE = {"name": "aitj.example/callcost-hold"}  # keeps the pods off the scheduler and kwok


# ---- what a recovery sends ---------------------------------------------------------------------
@dataclass
class Recovery:
    """Recovery: the bodies of one recovery's pass (planner-made) and the job they are for."""

    namespace: str
    job: str
    uid: str
    version: str
    pod: dict[str, Any]
    event: Any
    status: dict[str, Any]

    def pod_body(self, name: str) -> dict[str, Any]:
        """pod_body: the replacement pod, named ``name``, owned by the job, gated."""
        body = copy.deepcopy(self.pod)
        meta = body["metadata"]
        meta.update(name=name, namespace=self.namespace)
        meta.pop("generateName", None)
        for ref in meta.get("ownerReferences") or ():
            ref.update(name=self.job, uid=self.uid)
        assert TRACKING_FINALIZER in meta.get("finalizers", ()), "the planner's pod has no finalizer"
        body["spec"]["schedulingGates"] = [GATE]
        for c in body["spec"].get("containers", []) + body["spec"].get("initContainers", []):
            c["image"] = c.get("image") or IMAGE  # the seed's template names none
        return body

    def event_body(self) -> dict[str, Any]:
        """event_body: the restart Event, named afresh (a restart's own name is posted once)."""
        return event_body(self, _unnamed(self.event), "2026-11-26T18:00:00Z")

    @property
    def name(self) -> str:  # the Target protocol of event_body
        return self.job

    @property
    def resource_version(self) -> str:
        return self.version


def _unnamed(event: Any) -> Any:
    return dataclasses.replace(event, name=None)


def planned_recovery() -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """planned_recovery: the replacement's body, the restart Event and the status the planner
    makes when trainer 3 of a running job of 8 is force-deleted."""
    nodes = [node(f"node-{i}") for i in range(8)]
    job = seed_job(trainer(replicas=8, max_replicas=8, min_replicas=1), discovery=True, ssh=True)
    cluster = KeptViews(job, [Pod("trainer", i).running(1, f"node-{i}") for i in range(8)], nodes)
    for t in range(10, 14):
        cluster.step(float(t))
    victim = next(p for p in cluster.pods.values() if p.raw["metadata"]["labels"][LABEL_INDEX] == "3")
    victim.deleted(20, 0)
    plan = cluster.plan(20.1)
    assert len(plan.creates) == 1 and plan.release and plan.restart_events and plan.status
    pod = orjson.loads(encode(plan.creates[0].body))
    return pod, plan.restart_events[0], orjson.loads(encode(plan.status.to_json()))


def prepare(apic: client.ApiClient, namespace: str) -> Recovery:
    """prepare: the namespace, the CRD and a job in it (made once, kept); the recovery's bodies."""
    wire = Wire(apic)
    _ensure(
        wire, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    crd = yaml.safe_load((ROOT / "crds/aitrainingjobs.yaml").read_text())
    _ensure(wire, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    jobs = f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{namespace}/{api.PLURAL}"
    job = yaml.safe_load((ROOT / "manifests/examples/torchrun.yaml").read_text())
    job["metadata"] = {"name": "callcost", "namespace": namespace}
    for _ in range(50):  # the CRD is served a moment after it is created
        with contextlib.suppress(Exception):
            _ensure(wire, jobs, job)
            break
        time.sleep(0.2)
    got = orjson.loads(wire.send("GET", f"{jobs}/callcost").data)
    pod, event, status = planned_recovery()
    meta = got["metadata"]
    return Recovery(namespace, "callcost", meta["uid"], meta["resourceVersion"], pod, event, status)


def _ensure(wire: Wire, path: str, body: dict[str, Any]) -> None:
    """_ensure: POST ``body`` unless it exists (409)."""
    try:
        wire.send("POST", path, body)
    except client.ApiException as e:
        if e.status != 409:
            raise


def clear_pods(apic: client.ApiClient, namespace: str) -> None:
    """clear_pods: every pod of the namespace deleted (they hold no finalizer by then)."""
    Wire(apic).send("DELETE", f"/api/v1/namespaces/{namespace}/pods", {"gracePeriodSeconds": 0})


# ---- the calls, each way -----------------------------------------------------------------------
@dataclass
class Tally:
    """Tally: what one run measured."""

    rounds: int = 0
    cpu: float = 0.0
    user: float = 0.0
    system: float = 0.0
    walls: list[float] = field(default_factory=list)
    call_cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CALLS, 0.0))
    call_wall: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})


def _paths(r: Recovery, pod: str) -> dict[str, str]:
    ns, jobs = r.namespace, f"/apis/{api.GROUP}/{api.VERSION}/namespaces/{r.namespace}/{api.PLURAL}"
    return {
        "create": f"/api/v1/namespaces/{ns}/pods",
        "release": f"/api/v1/namespaces/{ns}/pods/{pod}",
        "event": f"/api/v1/namespaces/{ns}/events",
        "status": f"{jobs}/{r.job}/status",
    }


RELEASE = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}


def _status_patch(r: Recovery) -> list[dict[str, Any]]:
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": r.version},
        {"op": "add", "path": "/status", "value": r.status},
    ]


def _kept(r: Recovery, call: str, data: bytes) -> None:
    """_kept: the answer decoded as the executor does; the job's new version kept."""
    if call == "event":
        return
    body = orjson.loads(data)
    if call == "status":
        r.version = body["metadata"]["resourceVersion"]


def wire_round(wire: Wire, r: Recovery, pod: str, t: Tally) -> None:
    """wire_round: the four calls in a pass thread, through Wire."""
    sends: dict[str, Callable[[], Any]] = {
        "create": lambda: wire.create_pod(r.namespace, r.pod_body(pod)),
        "release": lambda: wire.patch_pod(pod, r.namespace, RELEASE),
        "event": lambda: wire.create_event(r.namespace, r.event_body()),
        "status": lambda: wire.patch_job_status(r.namespace, r.job, _status_patch(r), JSON_PATCH),
    }
    for call in CALLS:
        c0, w0 = time.thread_time(), time.perf_counter()
        _kept(r, call, sends[call]().data)
        t.call_cpu[call] += time.thread_time() - c0
        t.call_wall[call].append(time.perf_counter() - w0)


Send = Callable[[str, str, bytes, str], Awaitable[bytes]]


async def async_round(send: Send, r: Recovery, pod: str, t: Tally) -> None:
    """async_round: the four calls awaited on the loop (``send``: method, path, body, type)."""
    paths = _paths(r, pod)
    for call in CALLS:
        c0, w0 = time.thread_time(), time.perf_counter()
        if call == "create":
            data = await send("POST", paths[call], encode(r.pod_body(pod)), JSON)
        elif call == "release":
            data = await send("PATCH", paths[call], encode(RELEASE), STRATEGIC_PATCH)
        elif call == "event":
            data = await send("POST", paths[call], encode(r.event_body()), JSON)
        else:
            data = await send("PATCH", paths[call], encode(_status_patch(r)), JSON_PATCH)
        _kept(r, call, data)
        t.call_cpu[call] += time.thread_time() - c0
        t.call_wall[call].append(time.perf_counter() - w0)


def tls(apic: client.ApiClient) -> tuple[ssl.SSLContext, dict[str, str]]:
    """tls: an SSL context and headers with the official client's credentials (its CA, client
    certificate and key, or its token) and its default headers."""
    cfg = apic.configuration
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    headers = {**apic.default_headers, "Accept": JSON}
    token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
    if token:
        headers["Authorization"] = token
    return ctx, headers


@contextlib.asynccontextmanager
async def aiohttp_send(apic: client.ApiClient) -> Any:
    """aiohttp_send: a ``Send`` over one aiohttp session (its connections kept)."""
    import aiohttp

    ctx, headers = tls(apic)
    host = apic.configuration.host.rstrip("/")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=32)) as session:

        async def send(method: str, path: str, body: bytes, ctype: str) -> bytes:
            h = {**headers, "Content-Type": ctype}
            async with session.request(method, host + path, data=body, headers=h) as answer:
                data = await answer.read()
                if answer.status >= 400:
                    raise RuntimeError(f"{method} {path}: {answer.status} {data[:300]!r}")
                return data

        yield send, session, host, headers


@contextlib.asynccontextmanager
async def httpx_send(apic: client.ApiClient) -> Any:
    """httpx_send: a ``Send`` over one httpx AsyncClient."""
    httpx = importlib.import_module("httpx")  # optional (the hack extra): typed as Any here

    ctx, headers = tls(apic)
    host = apic.configuration.host.rstrip("/")
    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(verify=ctx, limits=limits, timeout=60.0) as session:

        async def send(method: str, path: str, body: bytes, ctype: str) -> bytes:
            h = {**headers, "Content-Type": ctype}
            answer = await session.request(method, host + path, content=body, headers=h)
            if answer.status_code >= 400:
                raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.content[:300]!r}")
            return bytes(answer.content)

        yield send, session, host, headers


def _cpu() -> tuple[float, float, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return time.process_time(), u.ru_utime, u.ru_stime


async def run_calls(way: str, apic: client.ApiClient, r: Recovery, rounds: int, tag: str) -> Tally:
    """run_calls: ``rounds`` recoveries' calls one after the other, ``way``, after 5 warm ones."""
    t, warm = Tally(), Tally()
    loop = asyncio.get_running_loop()
    if way == "wire":
        wire, pool = Wire(apic), concurrent.futures.ThreadPoolExecutor(16, thread_name_prefix="pass")

        async def one(pod: str, into: Tally) -> None:
            await loop.run_in_executor(pool, wire_round, wire, r, pod, into)

        await _rounds(one, t, warm, rounds, f"cc-{tag}")
        pool.shutdown()
        return t
    opener = aiohttp_send if way == "aiohttp" else httpx_send
    async with opener(apic) as (send, *_):

        async def one(pod: str, into: Tally) -> None:
            await async_round(send, r, pod, into)

        await _rounds(one, t, warm, rounds, f"cc-{tag}")
    return t


async def _rounds(
    one: Callable[[str, Tally], Awaitable[None]], t: Tally, warm: Tally, n: int, prefix: str
) -> None:
    for i in range(5):
        await one(f"{prefix}-w{i}", warm)
    c0, u0, s0 = _cpu()
    for i in range(n):
        w0 = time.perf_counter()
        await one(f"{prefix}-{i}", t)
        t.walls.append(time.perf_counter() - w0)
    c1, u1, s1 = _cpu()
    t.rounds, t.cpu, t.user, t.system = n, c1 - c0, u1 - u0, s1 - s0


# ---- watches -----------------------------------------------------------------------------------
@dataclass
class Seen:
    """Seen: a watch run's sink: the events handed to the loop, and when the last pod went."""

    expect: set[str]
    done: asyncio.Event
    events: int = 0
    hops: int = 0

    def sink(self, _kind: Any, batch: list[Any]) -> None:
        self.hops += 1
        for delta in batch:
            if isinstance(delta, Sync):
                continue
            self.events += 1
            if delta.type == "DELETED":
                self.expect.discard(delta.item.name)
        if not self.expect:
            self.done.set()


async def run_watch(way: str, apic: client.ApiClient, args: argparse.Namespace, tag: str) -> dict[str, float]:
    """run_watch: the namespace's pod events read ``way`` while the generator makes them."""
    ns = args.namespace + "-watch"
    names = {f"w-{tag}-{i}" for i in range(args.pods)}
    seen = Seen(set(names), asyncio.Event())
    gen = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--kubeconfig",
            str(args.kubeconfig),
            "--namespace",
            ns,
            "generate",
            "--pods",
            str(args.pods),
            "--tag",
            tag,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert gen.stdout is not None and gen.stdin is not None
    assert gen.stdout.readline().strip() == "ready", "the generator did not start"

    async def measured() -> tuple[float, float, float]:
        await asyncio.sleep(0.5)  # the watch is open
        c0 = _cpu()
        gen.stdin.write("go\n")  # type: ignore[union-attr]
        gen.stdin.flush()  # type: ignore[union-attr]
        await asyncio.wait_for(seen.done.wait(), 300)
        c1 = _cpu()
        return c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2]

    if way == "thread":
        informer = Informer(apic, cache.PODS, ns, seen.sink)
        informer.start(asyncio.get_running_loop())
        await asyncio.sleep(0.5)
        cpu = await measured()
        informer.stop()
    else:
        reader = asyncio.create_task(_async_watch(way, apic, ns, seen))
        cpu = await measured()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    gen.wait(60)
    n = max(seen.events, 1)
    return {
        "events": seen.events,
        "hops": seen.hops,
        "cpu": cpu[0] / n,
        "user": cpu[1] / n,
        "system": cpu[2] / n,
    }


async def _async_watch(way: str, apic: client.ApiClient, ns: str, seen: Seen) -> None:
    """_async_watch: list, then watch from the listing's version on the loop, every event
    decoded, its view made and handed to the sink as the informer does."""
    opener = aiohttp_send if way == "aiohttp" else httpx_send
    path = f"/api/v1/namespaces/{ns}/pods?labelSelector={cache.JOB_SELECTOR}"
    async with opener(apic) as (_send, session, host, headers):
        if way == "aiohttp":
            async with session.get(host + path, headers=headers) as listing:
                version = orjson.loads(await listing.read())["metadata"]["resourceVersion"]
            url = f"{host}{path}&{WATCH}&resourceVersion={version}"
            async with session.get(url, headers=headers, timeout=None) as answer:
                while line := await answer.content.readline():
                    _event(line, seen)
        else:
            listing = await session.get(host + path, headers=headers)
            version = orjson.loads(listing.content)["metadata"]["resourceVersion"]
            url = f"{host}{path}&{WATCH}&resourceVersion={version}"
            async with session.stream("GET", url, headers=headers, timeout=None) as answer:
                async for text in answer.aiter_lines():
                    _event(text.encode(), seen)


WATCH = "watch=true&allowWatchBookmarks=true&timeoutSeconds=300"


def _event(line: bytes, seen: Seen) -> None:
    if not line.strip():
        return
    event = orjson.loads(line)
    action, _at = watch_action(event)
    if action is Action.APPLY:
        obj = event["object"]
        seen.sink(cache.PODS, [Change(str(event["type"]), Item.of(obj, cache.PODS.convert(obj)))])


def generate(apic: client.ApiClient, namespace: str, pods: int, tag: str) -> None:
    """generate (the separate process): on "go", ``pods`` pods created, annotated and deleted,
    one call after the other."""
    wire = Wire(apic)
    _ensure(
        wire, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    pod = planned_recovery()[0]
    r = Recovery(namespace, "callcost", "00000000-0000-0000-0000-000000000000", "", pod, None, {})
    bodies = []
    for i in range(pods):
        body = r.pod_body(f"w-{tag}-{i}")
        body["metadata"].pop("ownerReferences", None)  # no job here: the collector would delete them
        body["metadata"]["finalizers"] = []
        bodies.append(body)
    print("ready", flush=True)
    sys.stdin.readline()
    for b in bodies:
        wire.create_pod(namespace, b)
    for b in bodies:
        wire.patch_pod(b["metadata"]["name"], namespace, {"metadata": {"annotations": {"callcost": "1"}}})
    for b in bodies:
        wire.send("DELETE", f"/api/v1/namespaces/{namespace}/pods/{b['metadata']['name']}")


# ---- the hand-offs alone ---------------------------------------------------------------------------
GAP = 0.002  # seconds between two hand-offs: the threads and the loop go idle between, as between calls


async def handoffs(n: int) -> dict[str, float]:
    """handoffs: the process's CPU (ms) of each hand-off alone, no HTTP, one every ``GAP``
    seconds, less the CPU of the loop waking itself every ``GAP`` seconds (``timed``: as the
    loop wakes for an answer on its own socket): ``executor``, one ``await run_in_executor``
    of a call that does nothing (loop to a pass thread and back); ``posted``, an event a thread
    posts with ``call_soon_threadsafe`` to the idle loop after sleeping ``GAP`` (as an informer
    thread wakes for its socket)."""
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(16, thread_name_prefix="pass")
    await loop.run_in_executor(pool, int)
    done, count = asyncio.Event(), [0]

    def seen() -> None:
        count[0] += 1
        if count[0] == n:
            done.set()

    c0 = time.process_time()
    for _ in range(n):
        await asyncio.sleep(GAP)
        seen()
    timed = (time.process_time() - c0) / n
    c0 = time.process_time()
    for _ in range(n):
        await asyncio.sleep(GAP)
        await loop.run_in_executor(pool, int)
    executor = (time.process_time() - c0) / n - timed
    pool.shutdown()

    def post() -> None:
        for _ in range(n):
            time.sleep(GAP)
            loop.call_soon_threadsafe(seen)

    count[0] = 0
    done.clear()
    c0 = time.process_time()
    thread = threading.Thread(target=post, name="informer-x")
    thread.start()
    await done.wait()
    posted = (time.process_time() - c0) / n - timed
    thread.join()
    return {"executor": executor * 1e3, "posted": posted * 1e3, "timed": timed * 1e3}


def handoff_table(runs: list[dict[str, float]]) -> None:
    print(f"\n## Hand-offs alone, one every {GAP * 1e3:g} ms (ms of process CPU each)")
    print("| run | the loop waking itself (subtracted) | run_in_executor and back | call_soon_threadsafe |")
    print("|---|---|---|---|")
    for k, h in enumerate(runs):
        print(f"| {k + 1} | {h['timed']:.3f} | {h['executor']:.3f} | {h['posted']:.3f} |")


# ---- the report ------------------------------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def call_table(results: dict[str, list[Tally]]) -> None:
    """call_table: per way, each run's figures (ms), then each call's CPU and wall (all runs)."""
    print("\n## Calls (ms; a round = the 4 calls of one recovery)")
    print(
        "| way | run | CPU/round | CPU/call | user/sys per round | calls' own CPU | beyond the calls | "
        "wall/round p50 | p99 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for way, tallies in results.items():
        for k, t in enumerate(tallies):
            per, own = t.cpu / t.rounds * 1e3, sum(t.call_cpu.values()) / t.rounds * 1e3
            print(
                f"| {way} | {k + 1} | {per:.2f} | {per / 4:.2f} | {t.user / t.rounds * 1e3:.2f}/"
                f"{t.system / t.rounds * 1e3:.2f} | {own:.2f} | {per - own:.2f} | "
                f"{statistics.median(t.walls) * 1e3:.1f} | {_pct(t.walls, 0.99) * 1e3:.1f} |"
            )
    print("\n| way | " + " | ".join(f"{c} CPU / p50 / p99" for c in CALLS) + " |")
    print("|---|" + "---|" * len(CALLS))
    for way, tallies in results.items():
        n = sum(t.rounds for t in tallies)
        cells = []
        for c in CALLS:
            walls = [w for t in tallies for w in t.call_wall[c][5:]] or [0.0]
            cpu = sum(t.call_cpu[c] for t in tallies) / n * 1e3
            cells.append(f"{cpu:.2f} / {statistics.median(walls) * 1e3:.1f} / {_pct(walls, 0.99) * 1e3:.1f}")
        print(f"| {way} | " + " | ".join(cells) + " |")


def watch_table(results: dict[str, list[dict[str, float]]]) -> None:
    print("\n## Watch events (ms of process CPU per event)")
    print("| way | run | events | hand-offs to the loop | CPU/event | user/sys |")
    print("|---|---|---|---|---|---|")
    for way, runs in results.items():
        for k, w in enumerate(runs):
            print(
                f"| {way} | {k + 1} | {w['events']:.0f} | {w['hops']:.0f} | {w['cpu'] * 1e3:.3f} | "
                f"{w['user'] * 1e3:.3f}/{w['system'] * 1e3:.3f} |"
            )


async def main_async(args: argparse.Namespace) -> None:
    apic = api_client(args.kubeconfig)
    recovery = prepare(apic, args.namespace)
    ways = ["wire", "aiohttp"] + (["httpx"] if importlib.util.find_spec("httpx") else [])
    calls: dict[str, list[Tally]] = {w: [] for w in ways}
    watches: dict[str, list[dict[str, float]]] = {w: [] for w in ["thread", *ways[1:]]}
    hops: list[dict[str, float]] = []
    for rep in range(args.repeats):
        if args.handoffs:
            hops.append(await handoffs(args.handoffs))
        if args.rounds:
            for way in ways:
                calls[way].append(await run_calls(way, apic, recovery, args.rounds, f"{way}-{rep}"))
                clear_pods(apic, args.namespace)
                print(
                    f"calls {way} run {rep + 1}: {calls[way][-1].cpu / args.rounds * 1e3:.2f} ms CPU/round",
                    flush=True,
                )
        if args.pods:
            for way in watches:
                watches[way].append(await run_watch(way, apic, args, f"{way}-{rep}"))
                print(
                    f"watch {way} run {rep + 1}: {watches[way][-1]['cpu'] * 1e3:.3f} ms CPU/event", flush=True
                )
    if args.handoffs:
        handoff_table(hops)
    if args.rounds:
        call_table(calls)
    if args.pods:
        watch_table(watches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", default="callcost", help="made if missing (and NAME-watch)")
    parser.add_argument("--rounds", type=int, default=200, help="recoveries' calls per run (0: none)")
    parser.add_argument("--pods", type=int, default=100, help="pods the watch generator cycles (0: no watch)")
    parser.add_argument("--handoffs", type=int, default=1000, help="hand-offs timed alone per run (0: none)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each way, alternating")
    sub = parser.add_subparsers(dest="command")
    gen = sub.add_parser("generate", help="(internal) the watch runs' event maker")
    gen.add_argument("--pods", type=int, dest="gen_pods", required=True)
    gen.add_argument("--tag", required=True)
    args = parser.parse_args()
    if args.command == "generate":
        generate(api_client(args.kubeconfig), args.namespace, args.gen_pods, args.tag)
        return
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
