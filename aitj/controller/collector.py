"""The gauges computed at scrape time from the operator's cache: ``aitj_jobs``,
``aitj_job_phase``, ``aitj_job_replicas``, ``aitj_restart_budget_used_ratio`` and
``aitj_job_degraded_indices``; and the goodput (``aitj_job_goodput_ratio``,
``aitj_job_training_seconds_total``, ``aitj_job_badput_seconds_total``: aitj.core.planner.goodput
accounts for the job's time from its status, ``aitj.core.telemetry.goodput.held`` keeps the
counters from going back, from what this collector last exported of each job).

A custom collector on the default registry: each scrape reads the jobs and pods the cache holds
and reports what they are now, so nothing is ever incremented or decremented, and a deleted
job's series vanish with it. The arithmetic is ``aitj.core.telemetry.job_gauges``.

Cost: one pass over the cache's jobs and, through the cache's per-job index, over each job's
pods: O(jobs + pods), about ten microseconds per pod (docs/metrics.md gives the figure measured at
10,000 pods). The scrape runs in the metrics server's thread while the event loop changes the
cache: it copies each dict it reads first (``list(d.items())`` is one C call under the GIL, so
it never sees a dict changing size), and reads the immutable values it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from aitj.controller.cache import InformerCache, JobKey
from aitj.controller.metrics import BY_NAME
from aitj.core.api import Phase
from aitj.core.observed import PodView
from aitj.core.planner.goodput import Resumption
from aitj.core.telemetry import JobGauges, ReplicaState, job_gauges
from aitj.core.telemetry.goodput import Account, BadputCause, held
from aitj.core.wire import mapping


class CacheSource(Protocol):
    """CacheSource: what the collector reads: every job's body, and a job's pods."""

    def jobs(self) -> Iterable[tuple[JobKey, Mapping[str, Any]]]:
        """jobs: (key, body) of every job held."""
        ...

    def pods(self, key: JobKey) -> Iterable[PodView]:
        """pods: the job's pods."""
        ...


class InformerSource:
    """InformerSource: the jobs and pods an ``InformerCache`` holds."""

    def __init__(self, cache: InformerCache) -> None:
        self.cache = cache

    def jobs(self) -> Iterable[tuple[JobKey, Mapping[str, Any]]]:
        """jobs: (key, body) of every job."""
        return [(key, item.value) for key, item in list(self.cache.jobs.items.items())]

    def pods(self, key: JobKey) -> Iterable[PodView]:
        """pods: the job's pods."""
        held = self.cache.pods.by_job.get(key)
        return [item.value for item in list(held.values())] if held else []


def _family(name: str) -> GaugeMetricFamily:
    """_family: an empty gauge family of the catalogue."""
    family = BY_NAME[name]
    return GaugeMetricFamily(family.name, family.help, labels=family.labels)


def _counter_family(name: str) -> CounterMetricFamily:
    """_counter_family: an empty counter family of the catalogue (its name without ``_total``,
    which prometheus_client adds to the samples)."""
    family = BY_NAME[name]
    return CounterMetricFamily(name.removesuffix("_total"), family.help, labels=family.labels)


def goodput_families(accounts: Iterable[tuple[JobKey, Account, float | None]]) -> list[Metric]:
    """goodput_families: the goodput of each job that has run, from (key, counters, ratio): the
    ratio (none while nothing is accounted), the training seconds and the seconds of every cause
    (0 included, so increase() sees a cause's first seconds)."""
    ratio = _family("aitj_job_goodput_ratio")
    training = _counter_family("aitj_job_training_seconds_total")
    badput = _counter_family("aitj_job_badput_seconds_total")
    for (namespace, name), a, share in accounts:
        if share is not None:
            ratio.add_metric([namespace, name], share)
        training.add_metric([namespace, name], a.training)
        for cause in BadputCause:
            badput.add_metric([namespace, name, cause.value], a.badput.get(cause, 0.0))
    return [ratio, training, badput]


def families(gauges: Iterable[tuple[JobKey, JobGauges]]) -> list[Metric]:
    """families: the five gauge families of the jobs' gauges. ``aitj_jobs`` has a series for
    every phase of each namespace that holds a job (0 included), so a panel draws 0, not a gap;
    ``aitj_job_degraded_indices`` one for every job (0 when it is not degraded), likewise;
    ``aitj_job_phase`` one for every job, 1, labelled with its phase."""
    jobs, phases, replicas, budgets, degraded = (
        _family("aitj_jobs"),
        _family("aitj_job_phase"),
        _family("aitj_job_replicas"),
        _family("aitj_restart_budget_used_ratio"),
        _family("aitj_job_degraded_indices"),
    )
    by_phase: dict[str, dict[Phase, int]] = {}
    for (namespace, name), g in gauges:
        counts = by_phase.setdefault(namespace, dict.fromkeys(Phase, 0))
        counts[g.phase] += 1
        phases.add_metric([namespace, name, g.phase.value], 1)
        for r in g.replicas:
            for state, value in (
                (ReplicaState.DESIRED, r.desired),
                (ReplicaState.RUNNING, r.running),
                (ReplicaState.PENDING, r.pending),
                (ReplicaState.VACANT, r.vacant),
            ):
                replicas.add_metric([namespace, name, r.replica, state.value], value)
        for replica, ratio in g.budgets:
            budgets.add_metric([namespace, name, replica], ratio)
        degraded.add_metric([namespace, name], g.degraded)
    for namespace, counts in sorted(by_phase.items()):
        for phase, n in counts.items():
            jobs.add_metric([namespace, phase.value], n)
    return [jobs, phases, replicas, budgets, degraded]


class CacheCollector(Collector):
    """CacheCollector: the scrape-time gauges of whatever ``source`` holds (none until
    ``install`` gives it the operator's cache)."""

    def __init__(self, source: CacheSource | None = None) -> None:
        self.source = source
        # What the last scrape exported of each job's goodput (by uid too: a job deleted and
        # created again under its name starts afresh), for ``held``.
        self.exported: dict[tuple[str, str, str], Account] = {}
        # The progress signal's facts of a job (aitj.controller.progress: ``resumption``), for
        # the goodput: None until the operator gives its monitor, and for a job not watched.
        self.resumed: Callable[[JobKey], Resumption | None] = lambda key: None

    def describe(self) -> Iterator[Metric]:
        """describe: the families, empty (registering does not scrape)."""
        return iter(families(()) + goodput_families(()))

    def collect(self) -> Iterator[Metric]:
        """collect: the gauges of every job the source holds, now."""
        source = self.source
        if source is None:
            return iter(families(()) + goodput_families(()))
        now = datetime.now(UTC)
        gauges = [
            (key, body, job_gauges(body, source.pods(key), now, self.resumed(key)))
            for key, body in source.jobs()
        ]
        return iter(families((key, g) for key, _, g in gauges) + goodput_families(self._held(gauges)))

    def _held(
        self, gauges: list[tuple[JobKey, Mapping[str, Any], JobGauges]]
    ) -> list[tuple[JobKey, Account, float | None]]:
        """_held: each job's goodput counters, none below what was exported of it last (the
        jobs gone since are forgotten), and its ratio, the account's own."""
        out, kept = [], {}
        for key, body, g in gauges:
            if g.goodput is None:
                continue
            mine = (*key, str(mapping(body.get("metadata")).get("uid") or ""))
            kept[mine] = held(self.exported.get(mine), g.goodput)
            out.append((key, kept[mine], g.goodput.ratio))
        self.exported = kept
        return out


COLLECTOR = CacheCollector()
REGISTRY.register(COLLECTOR)


def install(cache: InformerCache) -> None:
    """install: the collector reads ``cache`` (an ``InformerCache``) from now on."""
    COLLECTOR.source = InformerSource(cache)
