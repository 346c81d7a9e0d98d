"""The reconciler's glue, with a recording executor: passes are serialised per job, kicks during
a pass coalesce into one more pass, each way a pass can end is handled as documented, and what
the reconciler hands the planner (owned objects, settings, key pairs only when needed) and the
executor (the lifecycle Plans) is what the pure core decided. The executor itself is tested
with a fake client (test_executor.py) and against the real apiserver (tests/e2e)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime as dt
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from prometheus_client import REGISTRY

from aitj.controller.cache import Snapshot
from aitj.controller.executor import (
    GangRefused,
    NamespaceTerminating,
    PodRefused,
    Sent,
    StaleJob,
    StepFailed,
    Stop,
    Target,
    only_status,
)
from aitj.controller.reconciler import PACED_PLAN_SECONDS, ErrorStage, JobKey, Reconciler, Sources
from aitj.controller.retries import retry_after, retry_delay
from aitj.controller.written import Seen, Written
from aitj.core import naming
from aitj.core.api import Job, JobStatus, Phase, RestartScope
from aitj.core.naming import object_proof
from aitj.core.observed import TRACKING_FINALIZER, PodView
from aitj.core.planner.failed_pass import Report
from aitj.core.planner.lifecycle import PodRefusal
from aitj.core.planner.memo import Memo
from aitj.core.planner.types import (
    Event,
    ObjectKind,
    ObjectRef,
    ObjectState,
    Owned,
    Plan,
    PodCreate,
    RestartRecord,
    Settings,
    SshKeys,
)
from aitj.core.policy import Failure, FailureKind
from tests.seeds import seed_job
from tests.unit.builders import as_json

KEY: JobKey = ("default", "test-horovod-elastic")
NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
KEYS = SshKeys("private", "public")
SECRET = ObjectRef(ObjectKind.SECRET, naming.ssh_secret_name(KEY[1]))
KEY_OF_JOB = "0" * 32  # body()'s status.ownership.key
# The job's own: its controller, and the proof of its key.
HAS_SECRET: Owned = {
    SECRET: ObjectState(
        uid="s-1", controller="uid-1", proof=object_proof(KEY_OF_JOB, SECRET.kind, SECRET.name)
    )
}


def body(**meta: Any) -> dict[str, Any]:
    """body: the seed job, its key stored (status.ownership), as after its first pass."""
    doc = seed_job()
    doc["metadata"].update({"uid": "uid-1", "resourceVersion": "7", **meta})
    doc["status"] = {"ownership": {"key": KEY_OF_JOB}}
    return doc


NOTHING = Plan()
WRITE = Plan(status=JobStatus(phase=Phase.RUNNING))  # a Plan with something to send
POD = PodView(name="p-0", namespace="default", job=KEY[1], finalizers=(TRACKING_FINALIZER,))
OTHER = PodView(name="p-1", namespace="default", job=KEY[1])
GOING = PodView(name="p-2", namespace="default", job=KEY[1], finalizers=(TRACKING_FINALIZER,), deleted_at=NOW)


class Recorder:
    """Recorder is an executor that records what it is given; its passes stop with ``fails``,
    one per call, and it can block on demand."""

    def __init__(self, *fails: Stop) -> None:
        self.executed: list[tuple[Target, Plan]] = []
        self.reports: list[Report] = []
        self.fails = list(fails)
        self.gate: threading.Event | None = None

    def execute(self, target: Target, plan: Plan) -> Sent:
        if self.gate is not None:
            self.gate.wait(5)
        self.executed.append((target, plan))
        sent = Sent(status_written=plan.status is not None and not self.fails)
        sent.written.gone_pods.append(f"answer-{len(self.executed)}")
        if self.fails:
            sent.stopped = self.fails.pop(0)
        return sent

    def report(self, target: Target, report: Report) -> Written:
        self.reports.append(report)
        return Written()

    @property
    def plans(self) -> list[Plan]:
        return [p for _, p in self.executed]


class Planner:
    """Planner records the calls the reconciler makes to ``plan``; each takes ``takes`` seconds
    of CPU."""

    def __init__(self, plan: Plan = WRITE, takes: float = 0.0) -> None:
        self.plan = plan
        self.takes = takes
        self.calls: list[dict[str, Any]] = []
        self.jobs: list[Job] = []

    def __call__(self, job: Job, pods: Sequence[PodView], nodes: Any, now: dt.datetime, **given: Any) -> Plan:
        self.calls.append(given)
        self.jobs.append(job)
        started = time.thread_time()
        while time.thread_time() - started < self.takes:
            pass
        return self.plan


def reconciler(
    executor: Recorder,
    doc: dict[str, Any] | None,
    pods: Sequence[PodView] = (),
    plan: Plan = WRITE,
    owned: Owned = HAS_SECRET,
    exists: bool = False,
    written: list[tuple[JobKey, Written]] | None = None,
    status_interval: float = 0.0,
    plan_takes: float = 0.0,
) -> tuple[Reconciler, Planner, list[str]]:
    planner = Planner(plan, plan_takes)
    made: list[str] = []

    def keygen(name: str) -> SshKeys:
        made.append(name)
        return KEYS

    r = Reconciler(
        executor,
        lambda key: Snapshot(doc, list(pods), {}, owned),
        job_exists=lambda namespace, name: exists,
        settings=Settings({"high": "top"}),
        written=lambda key, w: (written if written is not None else []).append((key, w)),
        sources=Sources(clock=lambda: NOW, planner=planner, keygen=keygen),
        status_interval=status_interval,
    )
    return r, planner, made


def test_a_kick_plans_the_job_once_and_hands_the_plan_to_the_executor() -> None:
    rec = Recorder()
    r, planner, made = reconciler(rec, body())
    asyncio.run(r.kick(KEY))
    assert len(planner.calls) == 1
    assert [t.resource_version for t, _ in rec.executed] == ["7"]  # the job's version goes with it
    assert isinstance(planner.calls[0].pop("memo"), Memo)  # the job's, kept between its passes
    assert planner.calls[0] == {
        "owned": HAS_SECRET,
        "keys": None,
        "settings": Settings({"high": "top"}),
    }
    assert made == []


def test_a_job_without_its_key_gets_a_fresh_random_one_and_no_ssh_key_pair_yet() -> None:
    """The pass that stores the key makes nothing (aitj.core.planner.ownership): no plan, no
    ssh key pair; the next pass, with the key stored, makes them."""
    doc = body()
    del doc["status"]
    rec = Recorder()
    r, planner, made = reconciler(rec, doc, owned={})
    asyncio.run(r.kick(KEY))
    asyncio.run(r.kick(KEY))  # the cache still has the job without it: another fresh key
    keys = [p.status.ownership.key for p in rec.plans if p.status is not None and p.status.ownership]
    assert len(keys) == 2 and all(k and re.fullmatch("[0-9a-f]{32}", k) for k in keys) and keys[0] != keys[1]
    assert rec.plans[0] == Plan(status=rec.plans[0].status, requeue_after=0.0)  # the key, and nothing else
    assert planner.calls == [] and made == []


def test_the_pass_that_writes_the_key_is_followed_by_one_that_plans_without_another_event() -> None:
    """The key pass's status write kicks nothing (its version is already in the cache): the
    job is planned again at once, from the version with the key."""
    bare = body()
    del bare["status"]
    versions = [bare, body()]  # the cache: before the key pass's write, and after it
    rec = Recorder()
    planner = Planner(NOTHING)
    r = Reconciler(
        rec,
        lambda key: Snapshot(versions[min(len(rec.executed), 1)], [], {}, HAS_SECRET),
        job_exists=lambda namespace, name: True,
        sources=Sources(clock=lambda: NOW, planner=planner),
    )

    async def run() -> None:
        await r.kick(KEY)
        await asyncio.sleep(0.2)

    asyncio.run(run())
    assert len(planner.calls) == 1 and planner.jobs[0].name_key == KEY_OF_JOB


def test_the_passes_of_a_job_share_its_memo() -> None:
    r, planner, _ = reconciler(Recorder(), body())
    asyncio.run(r.kick(KEY))
    asyncio.run(r.kick(KEY))
    assert len(planner.calls) == 2 and planner.calls[0]["memo"] is planner.calls[1]["memo"]


def test_a_missing_ssh_secret_gets_a_fresh_key_pair_passed_to_the_planner() -> None:
    r, planner, made = reconciler(Recorder(), body(), owned={})
    asyncio.run(r.kick(KEY))
    assert made == [KEY[1]] and planner.calls[0]["keys"] == KEYS


def test_kicks_during_a_pass_coalesce_into_one_more_pass() -> None:
    rec = Recorder()
    rec.gate = threading.Event()
    r, planner, _ = reconciler(rec, body())

    async def burst() -> None:
        first = asyncio.ensure_future(r.kick(KEY))
        await asyncio.sleep(0.05)  # the first pass is now blocked in the executor
        await asyncio.gather(*(r.kick(KEY) for _ in range(5)))
        rec.gate.set()  # type: ignore[union-attr]
        await first

    asyncio.run(burst())
    assert len(planner.calls) == 2


def test_spawns_for_a_job_already_kicked_or_in_a_pass_make_no_task_and_coalesce() -> None:
    """A burst of events for a job whose kick is on its way, then more while its pass runs:
    one Task, and one more pass for everything that came during the first."""
    rec = Recorder()
    rec.gate = threading.Event()
    r, planner, _ = reconciler(rec, body())

    async def burst() -> tuple[int, int]:
        for _ in range(3):
            r.spawn(KEY)  # the first makes the Task; it has not started yet
        on_its_way = len(r._tasks)
        await asyncio.sleep(0.05)  # the first pass is now blocked in the executor
        for _ in range(5):
            r.spawn(KEY)
        during = len(r._tasks)
        rec.gate.set()  # type: ignore[union-attr]
        await asyncio.gather(*r._tasks)
        return on_its_way, during

    assert asyncio.run(burst()) == (1, 1)
    assert len(planner.calls) == 2


def test_a_spawn_after_the_pass_ended_makes_a_pass_of_its_own() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, body())

    async def run() -> None:
        r.spawn(KEY)
        await asyncio.gather(*r._tasks)
        r.spawn(KEY)
        await asyncio.gather(*r._tasks)

    asyncio.run(run())
    assert len(planner.calls) == 2 and r.queue.depth() == 0


# What a recovery's pass writes: the replacement created (q at 20), the victim released (p, gone
# once released: force-deleted) and the job's status (7 -> 8).
REPLACEMENT = {"kind": "Pod", "metadata": {"name": "q", "uid": "uid-q", "resourceVersion": "20"}}
RELEASED = {
    "kind": "Pod",
    "metadata": {"name": "p", "uid": "uid-p", "resourceVersion": "21", "deletionTimestamp": "x"},
}
STATUS_WRITTEN = {"metadata": {"name": KEY[1], "uid": "uid-1", "resourceVersion": "8"}}


class Writing(Recorder):
    """Writing: a Recorder whose every pass's calls return what a recovery's pass writes."""

    def execute(self, target: Target, plan: Plan) -> Sent:
        sent = super().execute(target, plan)
        sent.written.pods += [REPLACEMENT, RELEASED]
        sent.written.jobs.append(STATUS_WRITTEN)
        return sent


@pytest.mark.parametrize(
    ("kicks", "passes"),
    [
        pytest.param([(Seen("uid-q", "20"),)], 2, id="the replacement's ADDED: its own echo"),
        pytest.param(
            [(Seen("uid-q", "20"),), (Seen("uid-p", "22", deleted=True),), (Seen("uid-1", "8"),)],
            2,
            id="every echo of a recovery",
        ),
        pytest.param([(Seen("uid-q", "23"),)], 2, id="the replacement changed since it was made: news"),
        pytest.param([(Seen("uid-r", "24", deleted=True),)], 2, id="another pod deleted: news"),
        pytest.param(
            [(Seen("uid-q", "20"), Seen("uid-1", "9"))], 2, id="an echo and the job changed by someone"
        ),
        pytest.param([(Seen("uid-q", "20"),), None], 2, id="an echo and a kick of any other kind (a node)"),
        pytest.param([None], 2, id="a kick without events (a timer, the resync)"),
    ],
)
def test_every_event_during_a_pass_makes_one_more_pass_its_own_echoes_too(
    kicks: list[tuple[Seen, ...] | None], passes: int
) -> None:
    """The events that come while a pass runs mark it for one more pass, the echoes of its own
    writes too (Reconciler._settle says why)."""
    rec = Writing()
    rec.gate = threading.Event()
    r, planner, _ = reconciler(rec, body())

    async def run() -> None:
        first = asyncio.ensure_future(r.kick(KEY))
        await asyncio.sleep(0.05)  # the pass is now blocked in the executor
        for seen in kicks:
            r.spawn(KEY, seen)
        rec.gate.set()  # type: ignore[union-attr]
        await first

    asyncio.run(run())
    assert len(planner.calls) == passes
    assert r._jobs[KEY].seen == []  # nothing carried past the pass


def test_an_event_during_a_pass_whose_calls_returned_none_of_it_makes_one_more_pass() -> None:
    """The same event, during a pass whose calls returned something else: news."""
    rec = Recorder()  # its calls return a pod found gone, nothing the event could echo
    rec.gate = threading.Event()
    r, planner, _ = reconciler(rec, body())

    async def run() -> None:
        first = asyncio.ensure_future(r.kick(KEY))
        await asyncio.sleep(0.05)
        r.spawn(KEY, (Seen("uid-q", "20"),))
        rec.gate.set()  # type: ignore[union-attr]
        await first

    asyncio.run(run())
    assert len(planner.calls) == 2


@pytest.mark.parametrize(("takes", "paced"), [(0.0, False), (10 * PACED_PLAN_SECONDS, True)])
def test_a_kick_after_a_long_plan_waits_twice_as_long(takes: float, paced: bool) -> None:
    """A job whose plan took PACED_PLAN_SECONDS or more (thousands of pods) is planned again
    no sooner than twice that long after; a job of quick plans is planned again at once."""
    rec = Recorder()
    r, planner, _ = reconciler(rec, body(), plan_takes=takes)
    counted = REGISTRY.get_sample_value("aitj_paced_passes_total") or 0.0

    async def run() -> list[int]:
        await r.kick(KEY)
        ended = time.monotonic()
        await r.kick(KEY)  # a pod event right after the pass
        await r.kick(KEY)  # and another: paced, both wait for the same pass
        seen = [len(planner.calls)]
        await asyncio.sleep(max(0.0, ended + 3 * takes - time.monotonic()))
        seen.append(len(planner.calls))
        return seen

    assert asyncio.run(run()) == ([1, 2] if paced else [3, 3])
    # The pass that waited is counted once, however many kicks waited with it.
    assert (REGISTRY.get_sample_value("aitj_paced_passes_total") or 0.0) - counted == (1 if paced else 0)
    assert r._jobs[KEY].tracing.paced is paced


def test_a_job_gone_from_the_cache_is_forgotten_without_planning() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, None, [POD, OTHER])
    asyncio.run(r.kick(KEY))
    assert planner.calls == [] and rec.executed == [] and KEY not in r._jobs


def test_the_pods_being_deleted_of_a_job_that_is_gone_are_released() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, None, [POD, OTHER, GOING])
    asyncio.run(r.kick(KEY))
    assert planner.calls == [] and rec.plans == [Plan(release=("p-2",))]


def test_a_job_the_cache_lost_but_the_api_server_still_has_keeps_its_pods() -> None:
    rec = Recorder()
    r, _, _ = reconciler(rec, None, [GOING], exists=True)
    asyncio.run(r.kick(KEY))
    assert rec.executed == []


def test_a_job_being_deleted_is_not_planned_and_its_tracked_pods_are_released() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, body(deletionTimestamp="2026-11-22T00:00:00Z"), [POD, OTHER])
    asyncio.run(r.kick(KEY))
    assert planner.calls == []
    assert rec.plans == [Plan(release=("p-0",))]  # only the pod that carries the finalizer


def test_a_spec_only_the_model_refuses_fails_the_job_instead_of_planning() -> None:
    doc = body()
    doc["spec"]["replicaSpecs"]["trainer"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["name"] = (
        "nope"
    )
    rec = Recorder()
    r, planner, _ = reconciler(rec, doc)
    asyncio.run(r.kick(KEY))
    assert planner.calls == []
    [(target, plan)] = rec.executed
    assert (target.name, target.uid, target.resource_version) == (KEY[1], "uid-1", "7")
    assert plan.status is not None and as_json(plan.status)["phase"] == "Failed"
    assert [e.reason for e in plan.events] == ["InvalidSpec"] and "volumeMounts[0].name" in plan.events[
        0
    ].message


def test_a_terminating_namespace_releases_every_tracked_pod_in_the_next_pass() -> None:
    rec = Recorder(NamespaceTerminating("default"))
    r, planner, _ = reconciler(rec, body(), [POD, OTHER])
    asyncio.run(r.kick(KEY))
    assert rec.plans == [WRITE, Plan(release=("p-0",))]
    assert len(planner.calls) == 1  # the release is lifecycle's, not the planner's
    assert not r._jobs[KEY].terminating  # told once; a later pass plans as usual


def refused(code: int) -> PodRefused:
    """refused: a pod create the apiserver refused with ``code``."""
    said = PodRefusal(
        "p-9", "trainer", code, "spec.containers[0].image: Required value", ("spec.containers[0].image",)
    )
    return PodRefused(f"creating pod p-9: {code}", said)


def test_a_pod_refused_for_good_fails_the_job_in_the_next_pass() -> None:
    rec = Recorder(refused(422))
    r, planner, _ = reconciler(rec, body())

    async def run() -> None:
        await r.kick(KEY)
        await r.close()

    asyncio.run(run())
    assert len(planner.calls) == 1 and len(rec.plans) == 2
    failed = rec.plans[1]
    assert failed.status is not None and failed.status.phase is Phase.FAILED
    assert [e.reason for e in failed.events] == ["InvalidSpec"]
    assert "spec.replicaSpecs.trainer.template.spec.containers[0].image" in failed.events[0].message
    assert r._jobs[KEY].refused is None and r._jobs[KEY].failures == 0


def test_a_pod_refusal_a_retry_may_get_past_backs_off() -> None:
    rec = Recorder(refused(403))  # a quota, say
    r, planner, _ = reconciler(rec, body())

    async def run() -> None:
        await r.kick(KEY)
        state = r._jobs[KEY]
        assert state.failures == 1 and state.refused is None
        await r.close()

    asyncio.run(run())
    assert len(planner.calls) == 1 and rec.plans == [WRITE]


@pytest.mark.parametrize(
    ("error", "delay"),
    [
        pytest.param(StaleJob("changed"), 0.5, id="a stale snapshot is planned again in half a second"),
        pytest.param(GangRefused("PodGroup rejected"), 0.5, id="so is a gang whose Workload is going"),
        pytest.param(StepFailed("boom"), 1.0, id="a failed step is retried after a second"),
    ],
)
def test_a_pass_that_fails_is_requeued(error: Stop, delay: float) -> None:
    rec = Recorder(error)
    r, planner, _ = reconciler(rec, body())

    async def run() -> float:
        await r.kick(KEY)
        timer = r._jobs[KEY].timer
        assert timer is not None
        due = timer.when() - asyncio.get_running_loop().time()
        timer.cancel()
        return due

    due = asyncio.run(run())
    assert delay - 0.1 < due <= delay
    assert len(planner.calls) == 1


@pytest.mark.parametrize(
    ("failures", "server", "delay"),
    [
        pytest.param(1, None, 1.0, id="the first failure waits a second"),
        pytest.param(2, None, 2.0, id="each failure in a row doubles the wait"),
        pytest.param(4, None, 8.0, id="the fourth waits eight seconds"),
        pytest.param(9, None, 30.0, id="the wait is at most thirty seconds"),
        pytest.param(10_000, None, 30.0, id="however many failures there were"),
        pytest.param(1, 5.0, 5.0, id="a longer Retry-After from the server is honoured"),
        pytest.param(4, 5.0, 8.0, id="a shorter Retry-After does not cut the backoff"),
    ],
)
def test_a_job_s_retry_waits_longer_with_each_failure_in_a_row(
    failures: int, server: float | None, delay: float
) -> None:
    assert retry_delay(failures, server) == delay


def test_the_retry_after_of_a_throttled_call_is_read_from_the_error_behind_the_failed_step() -> None:
    throttled = ApiException(status=429, reason="Too Many Requests")
    throttled.headers = {"Retry-After": "3"}
    try:
        raise StepFailed("creating pod p: 429") from throttled
    except StepFailed as e:
        assert retry_after(e) == 3.0
    assert retry_after(throttled) == 3.0
    assert retry_after(StepFailed("no answer")) is None


def test_kicks_during_the_backoff_wait_for_it_and_a_pass_that_succeeds_ends_it() -> None:
    rec = Recorder(StepFailed("boom"), StepFailed("boom"))
    r, planner, _ = reconciler(rec, body())

    async def run() -> list[float]:
        loop = asyncio.get_running_loop()
        await r.kick(KEY)  # fails: retried in 1 s
        await r.kick(KEY)  # a watch event meanwhile: waits too
        await r.kick(KEY)
        assert len(planner.calls) == 1
        state = r._jobs[KEY]
        waits = [state.retry_at - loop.time()]
        state.retry_at = 0.0  # the wait is over
        await r.kick(KEY)  # fails again: 2 s
        waits.append(state.retry_at - loop.time())
        state.retry_at = 0.0
        await r.kick(KEY)  # succeeds
        assert (state.failures, state.retry_at) == (0, 0.0)
        if state.timer is not None:
            state.timer.cancel()
        return waits

    waits = asyncio.run(run())
    assert len(planner.calls) == 3
    assert 0.9 < waits[0] <= 1.0 and 1.9 < waits[1] <= 2.0


def test_the_plan_s_requeue_after_schedules_the_next_pass() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, body(), plan=Plan(requeue_after=0.05))

    async def run() -> None:
        await r.kick(KEY)
        await asyncio.sleep(0.2)

    asyncio.run(run())
    assert len(planner.calls) >= 2


def test_the_error_stage_metric_labels_keep_their_values() -> None:
    assert [s.value for s in ErrorStage] == ["stale", "execute"]


@pytest.mark.parametrize(
    "fails", [pytest.param((), id="a pass that ends well"), pytest.param((StaleJob("x"),), id="a stale one")]
)
def test_what_the_calls_returned_goes_to_the_cache_however_the_pass_ends(
    fails: tuple[Stop, ...],
) -> None:
    seen: list[tuple[JobKey, Written]] = []
    r, _, _ = reconciler(Recorder(*fails), body(), written=seen)

    async def run() -> None:
        await r.kick(KEY)
        await r.close()

    asyncio.run(run())
    assert [(key, w.gone_pods) for key, w in seen] == [(KEY, ["answer-1"])]


def test_close_lets_the_pass_in_flight_finish_and_takes_no_more_kicks() -> None:
    rec = Recorder()
    rec.gate = threading.Event()
    r, planner, _ = reconciler(rec, body(), plan=dataclasses.replace(WRITE, requeue_after=0.01))

    async def run() -> None:
        r.spawn(KEY)
        await asyncio.sleep(0.05)  # the pass is blocked in the executor
        closing = asyncio.ensure_future(r.close(timeout=5))
        await asyncio.sleep(0.01)
        r.spawn(KEY)  # a kick while closing
        await r.kick(("default", "other"))
        rec.gate.set()  # type: ignore[union-attr]
        await closing

    asyncio.run(run())
    assert len(planner.calls) == 1 and len(rec.executed) == 1
    assert all(state.timer is None for state in r._jobs.values())  # the plan's requeue was not kept


def test_close_abandons_a_pass_that_does_not_end_in_time() -> None:
    rec = Recorder()
    rec.gate = threading.Event()
    r, _, _ = reconciler(rec, body())

    async def run() -> None:
        r.spawn(KEY)
        await asyncio.sleep(0.05)
        await r.close(timeout=0.05)

    asyncio.run(run())
    rec.gate.set()  # the thread finishes its call; nothing waits for it
    assert r.closing


def test_a_plan_that_sends_nothing_takes_no_thread() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, body(), plan=NOTHING)
    asyncio.run(r.kick(KEY))
    assert len(planner.calls) == 1 and rec.executed == []


FAILURE = Failure(FailureKind.POD_FAILED, "it failed", at=NOW)
RESTART = RestartRecord("trainer", 0, 0, "p-0", FAILURE, "exitCodes 1", RestartScope.POD, NOW)
CREATE = Plan(creates=(PodCreate("p-9", "trainer", 0, 0, {}),), status=JobStatus(phase=Phase.RUNNING))


def test_a_status_write_soon_after_another_waits_for_the_interval_and_is_planned_again() -> None:
    rec = Recorder()
    r, planner, _ = reconciler(rec, body(), status_interval=0.3)

    async def run() -> list[int]:
        seen = []
        await r.kick(KEY)  # the first write goes at once
        seen.append(len(rec.executed))
        await r.kick(KEY)  # pod events within the interval: planned, held back
        await r.kick(KEY)
        seen.append(len(rec.executed))
        await asyncio.sleep(0.45)  # the interval is over: planned again, written
        seen.append(len(rec.executed))
        return seen

    assert asyncio.run(run()) == [1, 1, 2]
    assert len(planner.calls) == 4  # the held passes were planned, and one more at the end


def test_a_plan_that_creates_is_never_held_back() -> None:
    rec = Recorder()
    r, _, _ = reconciler(rec, body(), plan=CREATE, status_interval=60)

    async def run() -> None:
        for _ in range(3):
            await r.kick(KEY)

    asyncio.run(run())
    assert len(rec.executed) == 3


@pytest.mark.parametrize(
    ("plan", "held"),
    [
        (WRITE, True),
        (CREATE, False),
        (NOTHING, False),
        (dataclasses.replace(WRITE, events=(Event("Normal", "Running", "all running"),)), False),
        (
            dataclasses.replace(
                WRITE,
                restarts=(RESTART,),
            ),
            False,
        ),
        (dataclasses.replace(WRITE, requeue_after=5.0), True),
    ],
    ids=[
        "status alone",
        "with a create",
        "nothing",
        "with an Event",
        "recording a restart",
        "with a wake-up",
    ],
)
def test_only_a_plan_that_writes_the_status_and_nothing_else_may_wait(plan: Plan, held: bool) -> None:
    assert only_status(plan) is held


def test_a_job_s_spec_is_parsed_once_and_kept_while_only_its_status_changes() -> None:
    first = body()
    written = copy.deepcopy(first)  # a status write: the spec parsed before
    written["metadata"]["resourceVersion"] = "8"
    written["status"] = {"phase": "Running", "ownership": first["status"]["ownership"]}
    edited = copy.deepcopy(written)  # a spec edit: parsed again
    edited["metadata"]["resourceVersion"] = "9"
    edited["spec"]["replicaSpecs"]["trainer"]["replicas"] = 4
    versions = [first, written, edited]  # the cache's bodies: a new one per version
    planner = Planner(NOTHING)
    r = Reconciler(
        Recorder(),
        lambda key: Snapshot(versions[min(len(planner.jobs), 2)], [], {}, HAS_SECRET),
        job_exists=lambda namespace, name: True,
        sources=Sources(clock=lambda: NOW, planner=planner),
    )

    async def run() -> None:
        for _ in versions:
            await r.kick(KEY)

    asyncio.run(run())
    parsed, kept, again = planner.jobs
    assert kept.spec is parsed.spec and kept.status.phase == Phase.RUNNING and kept.resource_version == "8"
    assert again.spec is not parsed.spec and again.spec.replica("trainer").replicas == 4
