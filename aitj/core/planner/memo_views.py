"""The Memo's view of a pass's pod list against the last pass's: where they differ.

Pure (issue 26, F13), helpers of ``Memo.seen`` (aitj.core.planner.memo). A pod event replaces
one view in place (``moved``: the places, found with ``operator.is_not`` in C). A pod that goes
or comes makes the list one shorter or longer: every view after it moves one place, and ``seen``
looked at the ids of all of them (1 ms at 4,096 trainers, in the pass after a force delete and
in the one after the replacement is created: the cache drops the pod's view where it was and
adds the new one at the end; a view moved to the end shifts the rest as well). ``shifted``
aligns the two lists instead (``align``: runs of the same objects found in C, a few views
dropped and added between them) and sorts only the views added, as ``Memo._seen_at`` does for
views replaced in place; the masks of the runs keep their values, copied by slices. The Seen is
the one the full sort makes (tests/unit/test_incremental_planning.py, whose sequences delete and
create pods, and tests/unit/test_memo_views.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count, islice
from operator import is_not
from typing import Any

from aitj.core.api import Job
from aitj.core.observed import PodView


def moved(pods: Sequence[PodView], last: list[PodView]) -> list[int] | None:
    """moved: the places where ``pods`` holds another object than ``last`` (compared in C);
    None when they are not as many."""
    if len(pods) != len(last):
        return None
    return list(compress(range(len(pods)), map(is_not, pods, last)))


# Past this many views dropped or added, the full sort (set arithmetic on ids) is as quick.
MAX_EDITS = 16


def align(last: Sequence[PodView], pods: Sequence[PodView]) -> Aligned | None:
    """align: ``pods`` as ``last`` with a few views dropped and added: the runs of the same
    objects in both (``(place in last, place in pods, length)``), the places in ``last`` of the
    views dropped and those in ``pods`` of the views added; None past MAX_EDITS. Each run is
    found in C (``operator.is_not``); at a difference, a view dropped (the next one is the same
    as ``pods``'s) or added (the reverse), else replaced."""
    i = j = 0
    n, m = len(last), len(pods)
    runs: list[tuple[int, int, int]] = []
    dropped: list[int] = []
    added: list[int] = []
    while True:
        same = next(compress(count(), map(is_not, islice(last, i, None), islice(pods, j, None))), None)
        run = min(n - i, m - j) if same is None else same
        if run:
            runs.append((i, j, run))
        i, j = i + run, j + run
        if i >= n or j >= m or len(dropped) + len(added) > MAX_EDITS:
            break
        if i + 1 < n and last[i + 1] is pods[j]:
            dropped.append(i)
            i += 1
        elif j + 1 < m and last[i] is pods[j + 1]:
            added.append(j)
            j += 1
        else:
            dropped.append(i)
            added.append(j)
            i, j = i + 1, j + 1
    dropped += range(i, n)
    added += range(j, m)
    if len(dropped) + len(added) > MAX_EDITS:
        return None
    return runs, dropped, added


Aligned = tuple[list[tuple[int, int, int]], list[int], list[int]]


# ``memo`` is the Memo, its result a Seen: typed Any, as naming them here would import memo.py,
# which imports this module.
def shifted(memo: Any, job: Job, pods: Sequence[PodView], old: list[PodView]) -> Any:
    """shifted: ``Memo.seen`` of ``pods``, a list of another length than the last pass's (``old``)
    or with views at many places other than its (a view moved to the end shifts the rest),
    when it is that list with a few views dropped and added (``align``); None otherwise, or
    when a view added is also elsewhere in the list (given twice: the full sort handles it)."""
    got = align(old, pods)
    if got is None:
        return None
    runs, dropped, added = got
    known = memo.pods
    new_ids = [id(pods[j]) for j in added]
    old_ids = {id(old[i]) for i in dropped}
    fresh = set(new_ids)
    if len(fresh) != len(new_ids) or any(i in known and i not in old_ids for i in new_ids):
        return None
    came = [pods[j] for j, i in zip(added, new_ids, strict=True) if i not in old_ids]
    gone = memo._turnover(job, came, old_ids - fresh)
    # The masks in the new order: the runs' slices of the old masks (in C), the added looked up.
    in_mine: list[bool] = []
    in_others: list[bool] = []
    pieces = sorted([(j, i, run) for i, j, run in runs] + [(j, -1, 1) for j in added])
    for j, i, run in pieces:
        if i >= 0:
            in_mine += memo.in_mine[i : i + run]
            in_others += memo.in_others[i : i + run]
        else:
            belongs = known[id(pods[j])][1]
            in_mine.append(belongs is True)
            in_others.append(belongs is False)
    memo.in_mine, memo.in_others = in_mine, in_others
    return memo._sorted(pods, came, gone)
