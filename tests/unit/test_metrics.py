"""The metrics the operator exports: every family of the catalogue on /metrics with its labels,
per-job series removed with their job, the scrape-time gauges read from the cache, restarts
followed to their recovery and each observed once. Speed is printed, never asserted."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from prometheus_client.core import REGISTRY

from aitj.controller import collector, metrics
from aitj.controller.cache import InformerCache
from aitj.controller.informer import Item
from aitj.controller.logs import log
from aitj.controller.recovery_metrics import Recoveries, record_restarts
from aitj.core import naming
from aitj.core.api import LABEL_JOB, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.types import RestartRecord
from tests.seeds import REPO
from tests.seeds import seed_job as seed_body
from tests.unit.builders import (
    UID,
    Cluster,
    Pod,
    at,
    event_rule,
    launcher,
    name_of,
    running_seed,
    seed_job,
    trainer,
)

GPU = {"spec": {"containers": [{"name": "aitj-0", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]}}


def sample(name: str, **labels: str) -> float:
    """sample: the value of one series on the default registry (0 when absent)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def exported() -> dict[str, Any]:
    """exported: the families on the default registry, by name as Prometheus shows it."""
    out = {}
    for family in REGISTRY.collect():
        out[family.name + ("_total" if family.type == "counter" else "")] = family
    return out


# ---- the catalogue ----------------------------------------------------------------------------


class OneJob:
    """OneJob: a cache source holding the seed job, with one pod per index."""

    def jobs(self) -> Iterable[tuple[tuple[str, str], Mapping[str, Any]]]:
        """jobs: the seed, Running."""
        doc = seed_body()
        doc["metadata"]["uid"] = UID  # the job the builders' pods name as their controller
        since = {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        doc["status"] = {"phase": "Running", "conditions": [since]}  # ran: it has a goodput
        return [(("ns", "one"), doc)]

    def pods(self, key: tuple[str, str]) -> Iterable[PodView]:
        """pods: the seed's four pods, Running."""
        return [p.view() for p in running_seed()]


def test_every_family_of_the_catalogue_is_exported_with_its_kind_and_labels() -> None:
    collector.COLLECTOR.source = OneJob()
    # Children of each labelled family, so that their samples show the label names.
    made = []
    for family in metrics.CATALOGUE:
        metric = {m._name: m for m in _declared()}.get(family.name.removesuffix("_total"))
        if metric is not None and family.labels:
            values = tuple(f"x{i}" for i in range(len(family.labels)))
            metric.labels(*values)
            made.append((metric, values))
    try:
        found = exported()
        for family in metrics.CATALOGUE:
            assert family.name in found, family.name
            assert found[family.name].type == family.kind.value, family.name
            for s in found[family.name].samples:
                names = set(s.labels) - {"le"}
                assert names == set(family.labels), (family.name, s.labels)
            assert found[family.name].samples or family.kind.value == "histogram", family.name
    finally:
        for metric, values in made:
            metric.remove(*values)
        collector.COLLECTOR.source = None


def _declared() -> list[Any]:
    """_declared: the metric objects metrics.py declares."""
    return [m for m in vars(metrics).values() if hasattr(m, "_name") and hasattr(m, "labels")]


def test_build_info_carries_the_version_and_leader_says_who_acts() -> None:
    assert sample("aitj_build_info", version=metrics.version()) == 1
    metrics.set_leader(False)
    assert sample("aitj_leader") == 0
    metrics.set_leader(True)
    assert sample("aitj_leader") == 1


def test_every_closed_label_value_is_declared_once() -> None:
    for name, values in metrics.LABEL_VALUES.items():
        assert len(set(values)) == len(values), name
    assert "cancelled" in metrics.LABEL_VALUES["result"]


# ---- per-job series ---------------------------------------------------------------------------


def test_every_family_labelled_with_a_replica_name_is_per_job() -> None:
    # A replica's name is the job author's to choose: such series must leave with the job.
    by_replica = [f.name for f in metrics.CATALOGUE if "replica" in f.labels]
    assert "aitj_pods_created_total" in by_replica
    assert [n for n in by_replica if metrics.BY_NAME[n].labels[:2] != metrics.JOB] == []


def test_deleting_a_job_removes_its_series_and_only_its_own() -> None:
    for job in ("gone", "kept"):
        metrics.per_job(metrics.PODS_CREATED, "ns", job, "a-replica-name-of-the-users").inc()
        metrics.per_job(metrics.RESTARTS, "ns", job, "trainer", "exitCode", "Pod", "application").inc()
        metrics.per_job(metrics.SCALING_OPERATIONS, "ns", job, "out", "succeeded").inc()
        metrics.per_job(metrics.LOST_GPU_SECONDS, "ns", job, "exitCode").inc(3)
    metrics.forget_job("ns", "gone")
    page = [s.labels.get("job_name") for f in REGISTRY.collect() for s in f.samples]
    assert "gone" not in page
    assert sample("aitj_lost_gpu_seconds_total", namespace="ns", job_name="kept", cause="exitCode") == 3
    metrics.forget_job("ns", "kept")
    metrics.forget_job("ns", "never-seen")  # nothing to remove: fine


def test_a_namespaces_finished_jobs_series_go_when_every_job_they_counted_is_deleted() -> None:
    finished = {"namespace": "ns-finished", "phase": "Failed", "reason": "TrainingJobFailed"}
    metrics.job_finished("ns-finished", "a", "Failed", "TrainingJobFailed")
    metrics.job_finished("ns-finished", "b", "Failed", "TrainingJobFailed")
    metrics.job_finished("ns-finished", "b", "Succeeded", "TrainingJobSucceeded")
    metrics.forget_job("ns-finished", "a")
    assert sample("aitj_jobs_finished_total", **finished) == 2  # b is still there
    metrics.forget_job("ns-finished", "b")
    page = [s.labels.get("namespace") for f in REGISTRY.collect() for s in f.samples]
    assert "ns-finished" not in page


# ---- scrape-time gauges ---------------------------------------------------------------------


def families_of(source: collector.CacheSource) -> dict[str, list[Any]]:
    """families_of: what one scrape of ``source`` exports, by family: (labels, value) pairs."""
    found = collector.CacheCollector(source).collect()
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in found}


def test_the_gauges_show_each_job_by_phase_its_replicas_by_state_and_its_budgets() -> None:
    found = families_of(OneJob())
    jobs = {labels["phase"]: v for labels, v in found["aitj_jobs"]}
    assert jobs["Running"] == 1 and sum(jobs.values()) == 1  # every phase present, 0 included
    replicas = {(labels["replica"], labels["state"]): v for labels, v in found["aitj_job_replicas"]}
    assert replicas[("trainer", "desired")] == 3 and replicas[("trainer", "running")] == 3
    assert replicas[("launcher", "vacant")] == 0
    budgets = {labels["replica"]: v for labels, v in found["aitj_restart_budget_used_ratio"]}
    assert budgets == {"trainer": 0.0, "launcher": 0.0}


def test_an_empty_cache_exports_the_families_without_series() -> None:
    assert families_of(collector.InformerSource(InformerCache())) == {
        "aitj_jobs": [],
        "aitj_job_phase": [],
        "aitj_job_replicas": [],
        "aitj_restart_budget_used_ratio": [],
        "aitj_job_degraded_indices": [],
        "aitj_job_goodput_ratio": [],
        "aitj_job_training_seconds": [],
        "aitj_job_badput_seconds": [],
    }


def synthetic_cache(jobs: int, pods_per_job: int) -> InformerCache:
    """synthetic_cache: an InformerCache holding ``jobs`` seed jobs of ``pods_per_job`` pods."""
    cache = InformerCache()
    for j in range(jobs):
        doc = seed_body()
        doc["metadata"].update(name=f"job-{j}", namespace=f"ns-{j % 10}", uid=UID, resourceVersion="1")
        doc["status"] = {"phase": "Running", "RestartCount": {"trainer": j % 5}}
        cache.jobs.put(Item.of(doc, doc))
        for i in range(pods_per_job):
            pod = Pod("trainer", i).running()
            pod.raw["metadata"].update(namespace=f"ns-{j % 10}", resourceVersion="1", uid=f"u{j}-{i}")
            pod.raw["metadata"]["labels"][LABEL_JOB] = f"job-{j}"
            pod.raw["metadata"]["name"] = naming.pod_name(f"job-{j}", UID, "trainer", i, 0)
            cache.pods.put(Item.of(pod.raw, PodView.from_dict(pod.raw)))
    return cache


def test_a_scrape_at_10000_pods_reads_the_cache_once_and_prints_its_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache = synthetic_cache(1000, 10)
    source = collector.InformerSource(cache)
    assert sum(len(list(source.pods(key))) for key, _ in source.jobs()) == 10_000
    times = []
    for _ in range(3):
        started = time.perf_counter()
        found = families_of(source)
        times.append(time.perf_counter() - started)
    assert len(found["aitj_job_replicas"]) == 1000 * 2 * 4  # two replica types, four states
    with capsys.disabled():
        print(f"\nscrape of 1,000 jobs / 10,000 pods: {min(times) * 1000:.0f} ms (best of 3)")


# ---- restarts and their recovery ------------------------------------------------------------


def cluster(scope: RestartScope = RestartScope.POD) -> Cluster:
    """cluster: the seed on the test double, trainers with 4 GPUs restarted with ``scope``, Running."""
    rule = event_rule("nodeNotReady,PodForceDeleted", scope)
    c = Cluster(seed_job(trainer(rules=(rule,), template=GPU), launcher()), running_seed())
    c.step(10)
    return c


KEY = ("default", "test-horovod-elastic")


def body_of(c: Cluster) -> dict[str, Any]:
    """body_of: the double's job as the cache holds it (what a pass sees)."""
    replicas = {r.name: {"replicas": r.replicas} for r in c.job.spec.replicas}
    meta = {"name": c.job.name, "namespace": c.job.namespace, "uid": c.job.uid}
    return {"metadata": meta, "spec": {"replicaSpecs": replicas}, "status": c.status}


def recovery_count(cause: str = "PodForceDeleted", scope: str = "Pod") -> float:
    """recovery_count: recoveries observed so far for ``cause`` and ``scope``."""
    return sample("aitj_recovery_seconds_count", cause=cause, scope=scope)


def force_delete(c: Cluster, tracker: Recoveries, index: int = 0) -> RestartRecord:
    """force_delete: trainer ``index`` deleted at 100; the pass at 101 decides, creates the
    replacement and records the restart (what the executor's restarts step does)."""
    c.pods[name_of("trainer", index)].deleted(100, grace=0)
    plan = c.step(101)
    assert plan.status is not None
    created = {(p.replica, p.index): (p.generation, at(101)) for p in plan.creates}
    record_restarts(log.bind(namespace=KEY[0], job=KEY[1]), KEY, c.job, plan.status, plan.restarts,
                    created, tracker)  # fmt: skip
    return plan.restarts[0]


def test_a_restart_is_counted_once_and_recovered_once_when_its_replacement_runs() -> None:
    tracker, c = Recoveries(), cluster()
    restarts = ("aitj_restarts_total", {"namespace": KEY[0], "job_name": KEY[1], "replica": "trainer",
                                        "cause": "PodForceDeleted", "scope": "Pod",
                                        "class": "application"})  # fmt: skip
    before = (recovery_count(), sample(restarts[0], **restarts[1]))
    detected = sample("aitj_fault_detection_seconds_count", cause="PodForceDeleted")
    force_delete(c, tracker)
    assert sample(restarts[0], **restarts[1]) == before[1] + 1
    assert sample("aitj_fault_detection_seconds_count", cause="PodForceDeleted") == detected + 1
    tracker.seen(KEY, body_of(c), [p.view() for p in c.pods.values()], at(102))
    assert recovery_count() == before[0]  # the replacement is not Running yet
    c.run_all(103)
    for now in (104, 105):
        tracker.seen(KEY, body_of(c), [p.view() for p in c.pods.values()], at(now))
    assert recovery_count() == before[0] + 1
    lost = sample("aitj_lost_gpu_seconds_total", namespace=KEY[0], job_name=KEY[1], cause="PodForceDeleted")
    assert lost == 4 * 4  # four GPUs from the delete at 100 to Running seen at 104
    assert tracker.pending(KEY) == ()
    metrics.forget_job(*KEY)


def test_a_bare_pod_labelled_as_the_replacement_ends_no_recovery() -> None:
    tracker, c = Recoveries(), cluster()
    before = recovery_count()
    force_delete(c, tracker)
    # Another tenant's pod, labelled as trainer 0 of a later generation, Running: not the job's.
    intruder = Pod("trainer", 0, generation=5).running(102)
    del intruder.raw["metadata"]["ownerReferences"]
    intruder.raw["metadata"]["name"] = "intruder"
    pods = [p.view() for p in c.pods.values()] + [intruder.view()]
    tracker.seen(KEY, body_of(c), pods, at(103))
    assert recovery_count() == before
    assert len(tracker.pending(KEY)) == 1
    metrics.forget_job(*KEY)


def test_a_replacement_created_by_a_later_pass_ends_fault_detection_then() -> None:
    tracker, c = Recoveries(), cluster()
    c.pods[name_of("trainer", 0)].deleted(100, grace=0)
    plan = c.step(101)
    assert plan.status is not None
    record_restarts(log, KEY, c.job, plan.status, plan.restarts, {}, tracker)  # not created here
    (pending,) = tracker.pending(KEY)
    assert pending.created is None
    tracker.created(KEY, "trainer", 0, 1, at(103))
    assert tracker.pending(KEY)[0].detection_seconds() == 3
    metrics.forget_job(*KEY)


def test_a_deleted_job_or_a_finished_one_observes_no_recovery() -> None:
    tracker, c = Recoveries(), cluster()
    before = recovery_count()
    force_delete(c, tracker)
    tracker.forget(KEY)
    c.run_all(103)
    tracker.seen(KEY, body_of(c), [p.view() for p in c.pods.values()], at(104))
    assert recovery_count() == before

    tracker, c = Recoveries(), cluster()
    force_delete(c, tracker)
    done = {**body_of(c), "status": {**c.status, "phase": "Failed"}}
    tracker.seen(KEY, done, [], at(104))
    assert tracker.pending(KEY) == () and recovery_count() == before
    metrics.forget_job(*KEY)


def test_a_replica_restart_is_one_recovery_however_many_pods_it_restarted() -> None:
    tracker, c = Recoveries(), cluster(RestartScope.REPLICA)
    before = recovery_count(scope="Replica")
    force_delete(c, tracker, index=1)
    for now in range(102, 106):
        c.terminate_deleted()
        c.run_all(now)
        c.step(now)
        tracker.seen(KEY, body_of(c), [p.view() for p in c.pods.values()], at(now))
    assert recovery_count(scope="Replica") == before + 1
    assert Ledger.from_json(c.status["restartLedger"]).replica("trainer").epoch == 1
    metrics.forget_job(*KEY)


def test_docs_metrics_names_every_family_and_every_closed_label_value() -> None:
    text = (REPO / "docs" / "metrics.md").read_text()
    for family in metrics.CATALOGUE:
        assert f"| `{family.name}` | {family.kind.value} |" in text, family.name
        for label in family.labels:
            assert f"`{label}`" in text, (family.name, label)
    for name, values in metrics.LABEL_VALUES.items():
        for v in values:
            assert f"`{v}`" in text, (name, v)
