"""What the operator keeps of a pod it did not make (issue 24, section 4): the pod informer
matches the job label in every namespace, so a tenant can hand it pods to hold. Only the
operator's own labels are kept, a ledger stamp only from a pod a job controls and only up to
MAX_LEDGER_ANNOTATION, and the hosts digest only up to MAX_HOSTS_ANNOTATION."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
from structlog.testing import capture_logs

from aitj.controller.cache import PODS, pod_view
from aitj.controller.informer import Item
from aitj.core.api import LABEL_JOB
from aitj.core.observed import (
    ANNOTATION_HOSTS,
    ANNOTATION_LEDGER,
    MAX_HOSTS_ANNOTATION,
    MAX_LEDGER_ANNOTATION,
)
from aitj.core.planner.hostfiles import digest
from aitj.core.planner.types import HostLists
from tests.unit.builders import Pod

STAMP = json.dumps({"trainer": {"epoch": 1}})
HUGE = 256 * 1024  # the apiserver's bound on a pod's annotations, all together


def hostile(labels: int = 2_000, stamp: int = HUGE) -> dict[str, Any]:
    """hostile: a bare pod of another namespace carrying the job label, ``labels`` labels of
    its own and a ledger stamp of ``stamp`` characters."""
    own = {f"example.com/label-{i:05d}": f"{i:05d}".ljust(63, "v") for i in range(labels)}
    return {
        "metadata": {
            "name": "bare",
            "namespace": "tenant-b",
            "uid": "u-bare",
            "resourceVersion": "7",
            "labels": {LABEL_JOB: "victim", **own},
            "annotations": {ANNOTATION_LEDGER: "x" * stamp, ANNOTATION_HOSTS: "h" * stamp},
        },
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


def kept_bytes(value: object) -> int:
    """kept_bytes: the memory a value holds, its parts included (each object once)."""
    seen: set[int] = set()

    def walk(v: object) -> Iterator[int]:
        if id(v) in seen:
            return
        seen.add(id(v))
        yield sys.getsizeof(v)
        if isinstance(v, dict):
            for k, x in v.items():
                yield from walk(k)
                yield from walk(x)
        elif isinstance(v, list | tuple | set | frozenset):
            for x in v:
                yield from walk(x)
        elif is_dataclass(v):
            for f in fields(v):
                yield from walk(getattr(v, f.name))

    return sum(walk(value))


def test_a_cached_pod_keeps_only_the_operators_labels() -> None:
    item = Item.of(hostile(labels=50), pod_view(hostile(labels=50)))
    assert dict(item.labels) == {LABEL_JOB: "victim"}


def test_a_pod_no_job_controls_keeps_no_stamp_and_no_oversized_digest() -> None:
    view = pod_view(hostile(labels=0, stamp=100))
    assert view.ledger_annotation is None
    assert view.hosts_annotation is None or len(view.hosts_annotation) <= MAX_HOSTS_ANNOTATION


@pytest.mark.parametrize(
    ("size", "kept"),
    [
        pytest.param(len(STAMP), True, id="a job's pod keeps its stamp"),
        pytest.param(MAX_LEDGER_ANNOTATION, True, id="a stamp of exactly the limit is kept"),
        pytest.param(MAX_LEDGER_ANNOTATION + 1, False, id="a stamp over the limit is dropped"),
    ],
)
def test_a_job_pods_stamp_is_kept_up_to_the_limit(size: int, kept: bool) -> None:
    stamp = STAMP + " " * (size - len(STAMP))
    raw = Pod("trainer", 0).raw
    raw["metadata"]["annotations"] = {ANNOTATION_LEDGER: stamp}
    with capture_logs() as lines:
        view = pod_view(raw)
    assert (view.ledger_annotation == stamp) is kept
    assert view.ledger_dropped == (0 if kept else size)
    dropped = [line for line in lines if line["event"] == "restart-ledger annotation too large: ignored"]
    assert [(line["pod"], line["size"]) for line in dropped] == ([] if kept else [(view.name, size)])


def test_a_digest_longer_than_a_digest_is_not_kept() -> None:
    raw = Pod("launcher", 0).raw
    raw["metadata"]["annotations"] = {ANNOTATION_HOSTS: "d" * (MAX_HOSTS_ANNOTATION + 1)}
    assert pod_view(raw).hosts_annotation is None
    raw["metadata"]["annotations"] = {ANNOTATION_HOSTS: digest(HostLists((), {}, {}))}
    assert pod_view(raw).hosts_annotation == digest(HostLists((), {}, {}))


def test_a_hostile_pod_costs_the_cache_a_few_kilobytes_not_its_size() -> None:
    raw = hostile()
    item = Item.of(raw, PODS.convert(raw))
    # 2,000 labels and two annotations of 256 KiB: about 0.95 MB as decoded from the watch.
    assert kept_bytes(raw) > 900_000
    assert kept_bytes(item) < 4_096
