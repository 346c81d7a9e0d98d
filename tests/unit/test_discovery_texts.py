"""The discovery ConfigMap made from kept texts (issue 26, aitj.core.planner.discovery_texts) is
the one rendered whole: on random sequences of lists, one Texts kept across them as the job's
Memo keeps it, ``Texts.discovery`` equals ``resources.discovery`` and ``Texts.digest`` equals
``resources.hosts_digest`` (and ``hostfiles.rendered``, the ConfigMap stamped, equals
``resources.discovery``); the job renamed or a replica's slots changed mid-sequence; a list the
render refuses raises the render's own error.

tests/unit/test_incremental_planning.py compares whole plans with and without a Memo; this
compares the ConfigMap itself, pass after pass, on lists a planner would not make as well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core import naming
from aitj.core.api import Job
from aitj.core.planner import hostfiles, resources
from aitj.core.planner.discovery_texts import Column, Texts
from aitj.core.planner.types import HostEntry, HostLists
from tests.unit.builders import launcher, seed_job, trainer, with_replica

GPU_TEMPLATE = {"spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}


def lists_of(job: Job, workers: list[tuple[int, int]], masters: list[int]) -> HostLists:
    """lists_of: the lists of trainer pods (index, generation) ``workers`` and launcher pods
    ``masters``, named as the operator names them."""
    hosts = tuple(
        HostEntry(naming.pod_name(job.name, job.uid, "trainer", i, g), "trainer", i) for i, g in workers
    )
    launchers = tuple(naming.pod_name(job.name, job.uid, "launcher", i, 0) for i in masters)
    running = {"trainer": tuple(h.pod for h in hosts), "launcher": launchers}
    return HostLists(hosts, running, {"launcher": launchers})


SLOTS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3)), max_size=30, unique_by=lambda w: w[0])
MASTERS = st.lists(st.integers(0, 1), max_size=2, unique=True)
STEP = st.tuples(SLOTS, MASTERS, st.sampled_from(["", "rename", "gpu"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=12))
def test_texts_equal_the_whole_render(steps: list[tuple[list[tuple[int, int]], list[int], str]]) -> None:
    job, texts = seed_job(trainer(), launcher()), Texts()
    for workers, masters, change in steps:
        if change == "rename":
            job = dataclasses.replace(job, name=job.name + "x")
        elif change == "gpu":
            job = with_replica(job, "trainer", template=GPU_TEMPLATE)
        lists = lists_of(job, workers, masters)
        fingerprint = resources.hosts_digest(lists.pods, lists.masters)
        assert texts.digest(lists.pods, lists.masters) == fingerprint
        made, whole = (
            hostfiles.rendered(job, lists, None, texts),
            resources.discovery(job, lists.hosts, lists.running),
        )
        assert made == whole
        assert list(made.body["data"]) == list(whole.body["data"])  # and its keys in the same order


def test_a_column_makes_only_the_texts_of_the_names_that_changed() -> None:
    column, made = Column(), []

    def make(names: list[str]) -> Callable[[int], str]:
        def text(k: int) -> str:
            made.append(names[k])
            return names[k].upper()

        return text

    for names, fresh in [
        (["a", "b", "c", "d"], ["a", "b", "c", "d"]),
        (["a", "c", "d"], []),  # one gone
        (["a", "c", "e", "d"], ["e"]),  # one come
        (["a", "c", "f", "d"], ["f"]),  # one replaced
        (["c", "f", "d"], []),
        (["c", "f", "d", "g"], ["g"]),
        ([], []),
    ]:
        made.clear()
        assert column.patched(names, make(names)) == [n.upper() for n in names]
        assert made == fresh
    assert column.patched(["a", "a"], make(["a", "a"])) is None  # a name twice
    assert column.names == () and column.texts == []


@pytest.mark.parametrize(
    ("hosts", "error"),
    [
        pytest.param([("a", 1), ("a", 2)], "listed twice", id="a pod twice"),
        pytest.param([("a:b", 1)], "without ':'", id="a colon"),
        pytest.param([("a b", 1)], "without ':'", id="a space"),
    ],
)
def test_a_list_the_render_refuses_raises_its_error(hosts: list[tuple[str, int]], error: str) -> None:
    job = seed_job(trainer(), launcher())
    entries = tuple(HostEntry(pod, "trainer", i) for pod, i in hosts)
    lists = HostLists(entries, {"trainer": tuple(h.pod for h in entries), "launcher": ()}, {"launcher": ()})
    with pytest.raises(ValueError, match=error) as whole:
        resources.discovery(job, lists.hosts, lists.running)
    with pytest.raises(ValueError, match=error) as kept:
        hostfiles.rendered(job, lists, None, Texts())
    assert str(kept.value) == str(whole.value)
    assert Texts().discovery(job, lists) is None
