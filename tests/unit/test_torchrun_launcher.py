"""The torchrun launcher's pure parts (aitj/devcluster/images/files/train/torchrun_launcher.py,
run in the train image): when it closes a rendezvous round itself, and how. The state here has
the fields of torch 1.13's ``_RendezvousState`` it reads; the script's run against real torch
is tests/e2e/real/test_torchrun.py's."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

import aitj

SCRIPT = Path(aitj.__file__).parent / "devcluster/images/files/train/torchrun_launcher.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torchrun_launcher", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    written, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ in an image's files
    try:
        spec.loader.exec_module(module)  # its run is under __main__: nothing starts
    finally:
        sys.dont_write_bytecode = written
    return module


launcher = _load()


@dataclass(eq=True, order=True, frozen=True)
class Node:
    """torch's _NodeDesc: ordered by its fields, as the ranks are."""

    fqdn: str
    pid: int
    local_id: int = 0


@dataclass
class State:
    participants: dict[Node, int] = field(default_factory=dict)
    complete: bool = False
    closed: bool = False
    deadline: object = "in a second"


A = Node("job-trainer-aaaaa-0.job.ns.svc.cluster.local", 10)
B = Node("job-trainer-bbbbb-1.job.ns.svc.cluster.local", 10)
C = Node("job-trainer-ccccc-2.job.ns.svc.cluster.local", 11)
HOSTS = {"job-trainer-aaaaa-0.job", "job-trainer-bbbbb-1.job", "job-trainer-ccccc-2.job"}


@pytest.mark.parametrize(
    ("members", "hosts", "complete", "closed", "min_nodes", "expected"),
    [
        ((A, B, C), HOSTS, False, False, 1, True),  # every host with a session is in
        ((A, B), HOSTS, False, False, 1, False),  # a session's agent is not in yet: torch's last call
        ((A, B), HOSTS - {"job-trainer-ccccc-2.job"}, False, False, 1, True),  # that host has no session
        ((A, B, C), HOSTS, True, False, 1, False),  # already complete
        ((A, B, C), HOSTS, False, True, 1, False),  # closed for good
        ((A, B), {"job-trainer-aaaaa-0.job"}, False, False, 3, False),  # fewer than --nnodes' minimum
        ((), set(), False, False, 1, False),  # an empty round never closes
    ],
)
def test_a_round_is_closed_only_once_an_agent_of_every_host_with_a_session_is_in(
    members: tuple[Node, ...], hosts: set[str], complete: bool, closed: bool, min_nodes: int, expected: bool
) -> None:
    state = State({m: 0 for m in members}, complete, closed)
    assert launcher.all_in(state, hosts, min_nodes) is expected


def test_a_closed_round_ranks_its_members_in_torchs_order_and_has_no_deadline() -> None:
    state = State({C: 0, A: 0, B: 0})
    launcher.close_round(state)
    assert state.complete and state.deadline is None
    assert state.participants == {A: 0, B: 1, C: 2}


@pytest.mark.parametrize(
    ("command", "pattern", "default", "expected"),
    [
        (["torchrun", "--nnodes=1:5", "x.py"], r"--nnodes=([0-9]+)(?::[0-9]+)?", "1", "1"),
        (["torchrun", "--nnodes=2", "x.py"], r"--nnodes=([0-9]+)(?::[0-9]+)?", "1", "2"),
        (["torchrun", "x.py"], r"--nnodes=([0-9]+)(?::[0-9]+)?", "1", "1"),
        (["torchrun", "--rdzv-id=job", "x.py"], r"--rdzv[_-]id=(.+)", None, "job"),
    ],
)
def test_the_options_it_needs_are_read_from_the_command(
    command: list[str], pattern: str, default: str | None, expected: str
) -> None:
    launcher.command = command
    assert launcher.option(pattern, default) == expected
