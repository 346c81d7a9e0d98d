"""An in-place restart charged by a pass whose status write fails (issue 28, docs/semantics.md
section 23): the next pass charges it again, so it ends charged exactly once, with its
``status.restarts`` entry and its Event; whether the passes reuse each other's work (the
reconciler's Memo, which outlives a failed pass) or not. On the simulated cluster
(builders.Cluster), the pods' views kept while a pod does not change, as the informer's cache
keeps them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aitj.controller.executor import STEPS
from aitj.core.observed import PodView
from aitj.core.planner import plan
from aitj.core.planner.in_place_status import EVENT_IN_PLACE
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.memo import Memo
from aitj.core.planner.resources import needs_ssh_keys
from aitj.core.planner.types import Plan
from tests.unit.builders import KEYS, Cluster, at, name_of, observed, running_seed
from tests.unit.test_inplace import ladder_job, restart_in_place


class Passes:
    """Passes: plan and apply on ``cluster``, as the reconciler does (a Memo or none)."""

    def __init__(self, cluster: Cluster, memo: Memo | None) -> None:
        self.cluster, self.memo = cluster, memo
        self.views: dict[str, tuple[str, PodView]] = {}

    def view(self, name: str) -> PodView:
        raw = json.dumps(self.cluster.pods[name].raw, sort_keys=True)
        kept = self.views.get(name)
        if kept is None or kept[0] != raw:
            kept = self.views[name] = (raw, self.cluster.pods[name].view())
        return kept[1]

    def step(self, now: float, *, status: bool = True) -> Plan:
        c = self.cluster
        owned = observed(c.objects)
        views = [self.view(name) for name in c.pods]
        keys = KEYS if needs_ssh_keys(c.job, owned, views) else None
        result = plan(c.job, views, c.nodes, at(now), owned=owned, keys=keys, memo=self.memo)
        c.apply(result, now, status=status)
        return result


def charged(cluster: Cluster) -> int:
    return Ledger.from_status(cluster.job.status).replica("trainer").rule(0, "exitCodes 137").count


@pytest.mark.parametrize("memo", [True, False], ids=["with the memo", "without"])
def test_a_failed_status_write_after_an_in_place_restart_still_charges_it_once(memo: bool) -> None:
    cluster = Cluster(ladder_job(), running_seed())
    passes = Passes(cluster, Memo() if memo else None)
    passes.step(10)
    passes.step(11)  # a quiet pass: the memo has a survey to reuse
    pod = name_of("trainer", 0)
    restart_in_place(cluster, pod, 1, 100)
    lost = passes.step(105, status=False)  # charged, then the status write fails
    assert [e.reason for e in lost.restart_events if e.reason == EVENT_IN_PLACE] == [EVENT_IN_PLACE]
    assert charged(cluster) == 0
    events = []
    for now in (106, 107, 108):  # the retry, then passes with nothing new
        result = passes.step(now)
        events += [e.name for e in result.restart_events if e.reason == EVENT_IN_PLACE]
    entries: list[Any] = [e for e in cluster.status.get("restarts", ()) if e["scope"] == "InPlace"]
    print(f"memo={memo}: charged {charged(cluster)}, entries {len(entries)}, Events {events}")
    assert charged(cluster) == 1
    assert len(entries) == 1 and entries[0]["pod"] == pod
    assert entries[0]["message"].endswith("rule 1 (InPlace) 1 of 2 in 600 s")
    assert events == [
        e.name for e in lost.restart_events if e.reason == EVENT_IN_PLACE
    ]  # the same named Event
    assert pod in cluster.pods and "deletionTimestamp" not in cluster.pods[pod].raw["metadata"]  # kept


@pytest.mark.parametrize("stop_after", [s.field for s in STEPS])
def test_an_operator_that_dies_after_any_step_of_the_pass_still_charges_and_says_it_once(
    stop_after: str,
) -> None:
    """The operator dies after ``stop_after`` in the pass that charges an in-place restart; a
    new one (no memo) takes over: the restart is charged once, with one status entry, and its
    named Event was posted (before the status, as a restart's: a death right after the status
    write must not lose it)."""
    cluster = Cluster(ladder_job(), running_seed())
    cluster.step(10)
    pod = name_of("trainer", 0)
    restart_in_place(cluster, pod, 1, 100)
    cluster.apply(cluster.plan(105), 105, stop_after=stop_after)
    for now in (106, 107):
        cluster.step(now)
    entries = [e for e in cluster.status.get("restarts", ()) if e["scope"] == "InPlace"]
    said = [e for e in cluster.events.values() if e.reason == EVENT_IN_PLACE]
    assert (charged(cluster), len(entries), len(said)) == (1, 1, 1), stop_after
