"""The scenarios: each strikes the cluster through the API and times, on the harness's own
watch, what follows. Every latency starts just before the harness's API call (monotonic
clock) and ends when its watch sees the result; a trial whose result is not seen within its
timeout counts as the timeout.

Trials run one after another, each waiting for the struck slot to run again before the next,
so a trial meets the previous one's status writes at most, not its recovery.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from aitj.controller.kubeclient import release
from aitj.core import api
from aitj.devcluster.faults import force_delete, node_not_ready, node_ready, pod_exit
from aitj.tools.bench import peer
from aitj.tools.bench.floor import create_sequentially
from aitj.tools.bench.session import Candidate, Session, timed, uid
from aitj.tools.bench.watcher import CountReaches, Matches
from aitj.tools.bench.workload import (
    BURST,
    EXIT_CODE,
    NS_FLOOR,
    NS_OURS,
    NS_PEER,
    TRAINERS,
    running,
    training_job,
)
from aitj.tools.listwatch import Obj

Strike = Callable[[Session, Obj], None]


def strike_delete(s: Session, pod: Obj) -> None:
    """strike_delete force-deletes the pod (grace period 0)."""
    meta = pod["metadata"]
    force_delete(s.api, meta["namespace"], meta["name"])


def strike_exit(s: Session, pod: Obj) -> None:
    """strike_exit makes the pod's container exit with the code a rule restarts on."""
    meta = pod["metadata"]
    pod_exit(s.api, meta["namespace"], meta["name"], EXIT_CODE)


def replacement_trials(
    s: Session,
    namespace: str,
    order: list[Hashable],
    strike: Strike,
    n: int,
    timeout: float = 30,
    running: list[float] | None = None,
) -> list[float]:
    """replacement_trials strikes ``n`` pods, one at a time, taking slots in ``order`` (round
    robin, skipping a slot not Running now): each trial's latency is the strike's call to the
    replacement's creation seen on the watch; to it Running, appended to ``running`` if given
    (scheduled and started: what a gang could hold back)."""
    out: list[float] = []
    for i in range(n):
        live = s.live_running(namespace)
        victim = next(
            (live[k] for j in range(len(order)) if (k := order[(i + j) % len(order)]) in live), None
        )
        if victim is None:
            raise RuntimeError(f"no Running pod to strike in {namespace}")
        created = s.pods.expect(s.replaced([victim]))
        again = s.pods.expect(s.running_again([victim]))
        start = time.monotonic()
        strike(s, victim)
        out += timed(start, created, timeout)
        if running is not None:
            running += timed(start, again, timeout)
        again.wait(timeout)
        s.pods.forget(created)
        s.pods.forget(again)
    return out


def ours_order(names: list[str]) -> list[Hashable]:
    """ours_order: the slots F1 and F2 strike, index by index across the general jobs, so
    consecutive trials strike different jobs."""
    general = [n for n in names if n.startswith("job-")]
    return [(NS_OURS, job, "trainer", str(i)) for i in range(TRAINERS) for job in general]


def node_trials(
    s: Session, nodes: list[str], rounds: int, *, together: bool, timeout: float = 60
) -> list[float]:
    """node_trials takes nodes NotReady (one per round, or all ``together``) and times the
    call to the last of their pods' replacements seen; then the nodes come back Ready and the
    replacements run before the next round."""
    out: list[float] = []
    for r in range(rounds):
        chosen = nodes if together else [nodes[r % len(nodes)]]
        victims = [
            p for p in s.live_running(NS_OURS).values() if (p.get("spec") or {}).get("nodeName") in chosen
        ]
        created = s.pods.expect(s.replaced(victims))
        again = s.pods.expect(s.running_again(victims))
        start = time.monotonic()
        _each(chosen, lambda node: node_not_ready(s.api, node))
        out.append(max(timed(start, created, timeout)))
        _each(chosen, lambda node: node_ready(s.api, node))
        if not again.wait(timeout):
            s.say(f"F3: the replacements on {', '.join(chosen)} did not all run within {timeout:.0f}s")
        s.pods.forget(created)
        s.pods.forget(again)
    return out


def _each(items: list[str], call: Callable[[str], None]) -> None:
    """_each calls ``call`` on every item at once, one thread each (a fault on 10 nodes at once)."""
    threads = [threading.Thread(target=call, args=(i,)) for i in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def scale_trials(
    s: Session, job: str, to: int, rounds: int, timeout: float = 120
) -> tuple[list[float], list[float]]:
    """scale_trials scales ``job`` from 8 trainers to ``to`` and back, ``rounds`` times; each
    round's (first new pod created, all new pods created) after the patch's call."""
    first: list[float] = []
    every: list[float] = []
    for _ in range(rounds):
        old = {uid(p) for p in _job_pods(s, job)}

        def match(etype: str, obj: Obj, old: set[str] = old) -> Hashable | None:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            new = etype == "ADDED" and labels.get(api.LABEL_JOB) == job and uid(obj) not in old
            return uid(obj) if new else None

        created = s.pods.expect(Matches(match, to - TRAINERS))
        start = time.monotonic()
        _set_replicas(s, job, to)
        times = timed(start, created, timeout)
        s.pods.forget(created)
        first.append(times[0])
        every.append(max(times))
        _wait_job_pods(s, job, to, timeout)
        _set_replicas(s, job, TRAINERS)
        _wait_job_pods(s, job, TRAINERS, timeout)
    return first, every


def _job_pods(s: Session, job: str) -> list[Obj]:
    return [
        p
        for p in s.pods.snapshot()
        if ((p.get("metadata") or {}).get("labels") or {}).get(api.LABEL_JOB) == job
        and p["metadata"].get("namespace") == NS_OURS
    ]


def _set_replicas(s: Session, job: str, replicas: int) -> None:
    patch = {"spec": {"replicaSpecs": {"trainer": {"replicas": replicas}}}}
    s.custom.patch_namespaced_custom_object(api.GROUP, api.VERSION, NS_OURS, api.PLURAL, job, patch)


def _wait_job_pods(s: Session, job: str, count: int, timeout: float) -> None:
    """_wait_job_pods waits until the job has exactly ``count`` pods, all Running, and its
    phase is Running again (the scale finished)."""

    def done(_w: Any) -> bool:
        pods = _job_pods(s, job)
        jobs = [j for j in s.jobs.snapshot() if j["metadata"]["name"] == job]
        phase = ((jobs[0].get("status") or {}).get("phase")) if jobs else None
        return len(pods) == count and all(running(p) for p in pods) and phase == "Running"

    s.pods.wait_until(done, timeout, f"job {job} at {count} Running trainers")


def floor_burst_trials(s: Session, count: int, rounds: int, timeout: float = 120) -> list[float]:
    """floor_burst_trials: the floor client's time for ``count`` sequential creates, from the
    first call to the last pod seen created, ``rounds`` times."""
    out: list[float] = []
    for r in range(rounds):
        label = f"b{r}"

        def match(etype: str, obj: Obj, label: str = label) -> Hashable | None:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            return uid(obj) if etype == "ADDED" and labels.get(BURST) == label else None

        created = s.pods.expect(Matches(match, count))
        start = time.monotonic()
        create_sequentially(s.core, NS_FLOOR, label, count)
        out.append(max(timed(start, created, timeout)))
        s.pods.forget(created)
        s.core.delete_collection_namespaced_pod(
            NS_FLOOR, label_selector=f"{BURST}={label}", grace_period_seconds=0
        )
    return out


def bring_up(
    s: Session, namespace: str, create: Callable[[], None], pods: int, timeout: float
) -> tuple[float | None, float]:
    """bring_up runs ``create`` and times it until ``pods`` pods of the namespace are Running;
    returns (seconds or None on timeout, the monotonic time it ended)."""
    ready = s.pods.expect(CountReaches(f"{namespace}/Running", pods))
    start = time.monotonic()
    create()
    if not ready.wait(timeout):
        s.pods.forget(ready)
        return None, time.monotonic()
    return ready.times[0] - start, ready.times[0]


def create_jobs(s: Session, names: list[str], f4_to: int, *, gang: bool = False) -> None:
    """create_jobs creates the bench's AITrainingJobs, one call after another (``gang``: on
    the gang-scheduling profile, in NS_GANG)."""
    for name in names:
        body = training_job(name, f4_to, gang=gang)
        release(
            s.custom.create_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                body["metadata"]["namespace"],
                api.PLURAL,
                body,
                _preload_content=False,
            )
        )


def peer_trials(s: Session, n: int, timeout: float = 120) -> list[float]:
    """peer_trials: P1. ``n`` one-pod Indexed Jobs, then one force delete in each, all sent
    in a row (the Job controller's 10 s backoff would make one at a time take n x 10 s); each
    timed from its own delete call to its replacement seen. The Jobs stay (``peer_teardown``)."""
    names = [f"p1-{i:04d}" for i in range(n)]
    peer.create_jobs(s.batch, names, 1)
    s.settle(NS_PEER, n)
    victims = list(s.live_running(NS_PEER).values())
    pending = [(s.pods.expect(s.replaced([v])), v) for v in victims]
    starts = []
    for _exp, victim in pending:
        starts.append(time.monotonic())
        strike_delete(s, victim)
    out: list[float] = []
    for (exp, _victim), start in zip(pending, starts, strict=True):
        out += timed(start, exp, timeout)
        s.pods.forget(exp)
    return out


def peer_teardown(s: Session, timeout: float = 180) -> None:
    """peer_teardown deletes the peer's Jobs and waits until their pods are gone."""
    peer.delete_jobs(s.batch)
    s.pods.wait_until(lambda w: w.count(f"{NS_PEER}/all") == 0, timeout, "the Job controller's pods gone")


def idle(s: Session, seconds: float) -> tuple[float, float]:
    """idle: the operator's CPU over ``seconds`` of nothing happening, as % of a core, and its
    RSS in MB at the end."""
    cpu, start = s.operator_cpu(), time.monotonic()
    time.sleep(seconds)
    used, wall = s.operator_cpu() - cpu, time.monotonic() - start
    return 100 * used / wall, s.operator_rss() / 1e6


def restart(s: Session, names: list[str], timeout: float) -> tuple[float | None, float | None]:
    """restart: F8. The operator gets SIGTERM; while it is down every job's spec changes (its
    generation moves on, so its status is no longer current) and a trainer is force-deleted;
    then it starts. Returns the start call to the replacement seen created, and to every
    job's status current again (observedGeneration = generation); None for a timeout."""
    s.stop_operator()
    patch = {"spec": {"replicaSpecs": {"trainer": {"restartTimeLimit": 61}}}}
    for name in names:
        s.custom.patch_namespaced_custom_object(api.GROUP, api.VERSION, NS_OURS, api.PLURAL, name, patch)
    s.jobs.wait_until(lambda w: w.count("current") == 0, 60, "every job's spec changed")
    live = s.live_running(NS_OURS)
    victim = next(p for k, p in live.items() if str(k[1]).startswith("job-"))  # type: ignore[index]
    created = s.pods.expect(s.replaced([victim]))
    current = s.jobs.expect(CountReaches("current", len(names)))
    strike_delete(s, victim)
    start = time.monotonic()
    s.start_operator()
    first = created.times[0] - start if created.wait(timeout) else None
    status = current.times[0] - start if current.wait(max(0.0, start + timeout - time.monotonic())) else None
    s.pods.forget(created)
    s.jobs.forget(current)
    return first, status


def leader_takeover(s: Session, kills: int, timeout: float) -> tuple[list[float], list[float]]:
    """leader_takeover: F9. The operator is replaced by two candidates under leader election
    (``aitj run --leader-elect``); ``kills`` times, once the standby's cache is synced, the
    leader gets SIGKILL and right after it a trainer is force-deleted. Returns, per kill, the
    kill to the replacement seen created and the kill to ``aitj_leader`` 1 on the standby
    (polled every 20 ms); the killed one starts again as the next standby."""
    s.stop_operator()
    pair = [s.start_candidate("a"), s.start_candidate("b")]
    to_pod: list[float] = []
    to_gauge: list[float] = []
    for _ in range(kills):
        leader, standby = _roles(s, pair, timeout)
        live = s.live_running(NS_OURS)
        victim = next(p for k, p in live.items() if str(k[1]).startswith("job-"))  # type: ignore[index]
        created = s.pods.expect(s.replaced([victim]))
        again = s.pods.expect(s.running_again([victim]))
        start = time.monotonic()
        leader.kill()
        strike_delete(s, victim)
        deadline = start + timeout
        while standby.leader() != 1.0 and time.monotonic() < deadline:
            time.sleep(0.02)
        to_gauge.append(time.monotonic() - start)
        to_pod += timed(start, created, timeout)
        leader.start()
        again.wait(timeout)
        s.pods.forget(created)
        s.pods.forget(again)
    s.stop_candidates()
    return to_pod, to_gauge


def _roles(s: Session, pair: list[Candidate], timeout: float) -> tuple[Candidate, Candidate]:
    """_roles waits until one candidate leads and the other stands by with its cache synced;
    returns (leader, standby)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gauges = [c.leader() for c in pair]
        if sorted(g for g in gauges if g is not None) == [0.0, 1.0]:
            leader, standby = pair if gauges[0] == 1.0 else pair[::-1]
            if standby.synced():
                return leader, standby
        time.sleep(0.2)
    raise TimeoutError(f"F9: no leader with a synced standby within {timeout:.0f}s")
