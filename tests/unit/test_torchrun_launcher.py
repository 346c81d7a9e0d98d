"""The torchrun launcher's pure parts (aitj/devcluster/images/files/train/torchrun_launcher.py,
run in the train image): when it keeps a lost agent in its round, when it forgets it, when it
closes a round itself, and how. The state here has the fields of torch 1.13's
``_RendezvousState`` it reads; the script's run against real torch is
tests/e2e/real/test_torchrun.py's."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace

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
    round: int = 4
    wait_list: set[Node] = field(default_factory=set)
    last_heartbeats: dict[Node, float] = field(default_factory=dict)


A = Node("job-trainer-aaaaa-0.job.ns.svc.cluster.local", 10)
B = Node("job-trainer-bbbbb-1.job.ns.svc.cluster.local", 10)
C = Node("job-trainer-ccccc-2.job.ns.svc.cluster.local", 11)
D = Node("job-trainer-ddddd-2.job.ns.svc.cluster.local", 12)  # C's replacement
HOSTS = {"job-trainer-aaaaa-0.job", "job-trainer-bbbbb-1.job", "job-trainer-ccccc-2.job"}
HOLD = 10.0


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
    command: list[str], pattern: str, default: str | None, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launcher, "command", command, raising=False)
    assert launcher.option(pattern, default) == expected


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's options and the command's --nnodes=1:5, as its main sets them."""
    monkeypatch.setattr(launcher, "args", SimpleNamespace(hold_seconds=HOLD), raising=False)
    monkeypatch.setattr(launcher, "MIN_NODES", 1, raising=False)
    monkeypatch.setattr(launcher, "MAX_NODES", 5, raising=False)


def lost_c(waiting: set[Node], *, still_in: tuple[Node, ...] = (), complete: bool = True) -> State:
    """C gone from a round of A, B and C; ``waiting`` wait for the next one, ``still_in`` have
    not noticed yet."""
    everyone = {A, B, C, D}
    return State(
        participants={n: 0 for n in (C, *still_in)},
        complete=complete,
        wait_list=set(waiting),
        last_heartbeats={n: 0.0 for n in everyone},
    )


@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize(
    ("state", "want", "since", "held", "expected"),
    [
        pytest.param(lost_c({A, B}), 3, 1.0, True, None, id="the replacement not waiting yet: held"),
        pytest.param(lost_c({A}, still_in=(B,)), 3, 1.0, True, None, id="a survivor not there yet: held"),
        pytest.param(lost_c({A, B}), 2, 1.0, False, "closed", id="a scale-in wants no more: closed at once"),
        pytest.param(lost_c({A, B, D}), 3, 1.0, False, "closed", id="everyone wanted waits: closed at once"),
        pytest.param(lost_c({A, B}), 3, HOLD, False, "reopened", id="held as long as allowed: reopened"),
        pytest.param(lost_c({A, B}, complete=False), 3, 1.0, False, "reopened", id="an open round: forgot"),
    ],
)
def test_a_lost_agent_is_kept_in_its_round_while_its_replacement_comes_and_no_longer(
    state: State, want: int, since: float, held: bool, expected: str | None
) -> None:
    waiting = set(state.wait_list)
    message = launcher.settle(state, {C: 0.0}, want, since)
    if held:
        assert message is None and C in state.participants and state.complete
        return
    assert C not in launcher.members(state) and message is not None and "forgot" in message
    assert state.round == 5 or not state.complete
    if expected == "closed":
        assert state.complete and set(state.participants) == waiting
        assert state.participants == {n: rank for rank, n in enumerate(sorted(waiting))}
        assert not state.wait_list and "closed" in message
    else:  # torch's own agents join the open round
        assert not state.complete and not state.participants and state.wait_list


@pytest.mark.usefixtures("limits")
def test_an_agent_forgotten_already_is_let_go() -> None:
    held = {C: 0.0}
    state = State(participants={A: 0, B: 1}, complete=True, last_heartbeats={A: 0.0, B: 0.0})
    assert launcher.settle(state, held, 3, 1.0) is None
    assert held == {} and state.participants == {A: 0, B: 1}


@pytest.mark.usefixtures("limits")
def test_a_round_larger_than_the_command_allows_is_left_to_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher, "MAX_NODES", 2)
    state = lost_c({A, B, D})
    message = launcher.settle(state, {C: 0.0}, 3, 1.0)
    assert message is not None and "closed" not in message
    assert not state.complete and state.wait_list == {A, B, D}
