"""The Memo's sort of a pass's pods when one went or came (issue 26, aitj.core.planner.memo_views):
``align`` makes the new list of the last with a few views dropped and added, and a Memo fed
lists that lose, gain and move views at random places (the rest the same objects) sorts them
as ``objects.pods_of`` does, pass after pass, with the views that came and went."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core.planner.memo import Memo
from aitj.core.planner.memo_views import align
from aitj.core.planner.objects import pods_of
from tests.unit.builders import Pod, seed_job, trainer


@given(st.lists(st.integers(0, 30), max_size=40), st.lists(st.integers(0, 30), max_size=40))
def test_align_makes_the_new_list_of_the_last(a: list[int], b: list[int]) -> None:
    objects = [object() for _ in range(31)]
    last, now = [objects[i] for i in a], [objects[i] for i in b]
    got = align(last, now)  # type: ignore[arg-type]
    if got is None:
        return
    runs, dropped, added = got
    made: list[object | None] = [None] * len(now)
    for i, j, run in runs:
        assert last[i : i + run] == now[j : j + run]
        made[j : j + run] = last[i : i + run]
    for j in added:
        assert made[j] is None
        made[j] = now[j]
    assert made == now  # every place of the new list, once
    covered = sorted([k for i, _, run in runs for k in range(i, i + run)] + dropped)
    assert covered == list(range(len(last)))


def test_align_finds_a_view_dropped_and_one_added_at_the_end() -> None:
    views = [object() for _ in range(100)]
    now = [*views[:40], *views[41:], object()]
    assert align(views, now) == ([(0, 0, 40), (41, 40, 59)], [40], [99])  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_a_memo_fed_lists_that_shift_sorts_them_as_pods_of(seed: int) -> None:
    rng = random.Random(seed)
    job = seed_job(trainer(replicas=40, max_replicas=40))
    views = [Pod("trainer", i).view() for i in range(rng.randint(0, 30))]
    memo, before = Memo(), set[int]()
    for _ in range(8):
        for _ in range(rng.randint(1, 3)):
            k = rng.randint(0, len(views))
            if views and rng.random() < 0.2:  # a view moved to the end: the rest shift, as many
                views.append(views.pop(min(k, len(views) - 1)))
            elif views and rng.random() < 0.5:
                del views[min(k, len(views) - 1)]
            else:
                fresh = Pod("trainer", rng.randint(0, 39), rng.randint(0, 2)).view()
                if rng.random() < 0.2:  # labelled as the job's, not named as it names its pods
                    fresh = dataclasses.replace(fresh, name=f"someone-{rng.randint(0, 99)}")
                views.insert(k, fresh)
        seen = memo.seen(job, list(views))
        mine, others = pods_of(job, views)
        assert seen.mine == mine and seen.others == others
        now = {id(p) for p in mine}
        assert {id(p) for p in seen.came} == now - before
        assert {id(p) for p in seen.went} == before - now
        before = now
