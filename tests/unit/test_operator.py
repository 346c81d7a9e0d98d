"""The Operator's wiring, without a cluster: kopf's handlers find the one Operator in kopf's
memo, and a change the cache reports is passed on only once this process acts (a standby
kicks nothing). Its start-up and shutdown against a real apiserver: tests/e2e/test_operator.py
and tests/e2e/test_leader_election.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import kopf
import pytest
from kubernetes import client

from aitj.controller import handlers
from aitj.controller.cache import Snapshot
from aitj.controller.operator import Operator
from aitj.controller.options import OperatorOptions
from aitj.controller.reconciler import JobKey, Reconciler
from aitj.controller.written import Seen

KEY: JobKey = ("default", "job")


class Spawns(Reconciler):
    """Spawns: a reconciler that records the jobs it is asked to pass."""

    def __init__(self) -> None:
        super().__init__(_never(), lambda key: Snapshot(None), job_exists=lambda namespace, name: False)
        self.spawned: list[JobKey] = []
        self.seen: list[Sequence[Seen] | None] = []

    def spawn(self, key: JobKey, seen: Sequence[Seen] | None = None) -> None:
        self.spawned.append(key)
        self.seen.append(seen)


def _never() -> Any:
    """_never: an executor no test here reaches."""
    return object()


def test_the_handlers_find_the_operator_in_kopf_s_memo() -> None:
    operator = Operator(OperatorOptions(), client.ApiClient())
    assert handlers.operator_of(kopf.Memo({handlers.OPERATOR: operator})) is operator
    with pytest.raises(TypeError):
        handlers.operator_of(kopf.Memo({handlers.OPERATOR: object()}))


def test_a_change_kicks_its_job_only_once_the_operator_acts() -> None:
    operator = Operator(OperatorOptions(), client.ApiClient())
    assert operator.cache.kick == operator.kick  # the cache was built with it: no late wiring
    reconciler = operator.reconciler = Spawns()
    operator.kick(KEY)  # a standby (or still starting)
    assert reconciler.spawned == []
    operator.acting = True
    operator.kick(KEY)
    assert reconciler.spawned == [KEY]
    operator.kick(KEY, (Seen("uid-p", "12"),))  # what the cache saw goes along
    assert reconciler.seen == [None, (Seen("uid-p", "12"),)]
