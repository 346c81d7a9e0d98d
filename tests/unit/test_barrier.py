"""The job barrier's decision (``aitj.core.barrier``), as a table: what the launcher still
waits for, given the pods listed and the names that resolved."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import pytest
from click.testing import CliRunner

from aitj.cli import main
from aitj.core import naming
from aitj.core.barrier import (
    Verdict,
    decide,
    dns_check_name,
    expected_replicas,
    hosts_to_resolve,
    parse_roles,
)
from aitj.core.observed import PodView
from tests.unit.builders import JOB, Pod

T0, T1, T2 = Pod("trainer", 0), Pod("trainer", 1), Pod("trainer", 2)
DNS = "kube-dns.kube-system"


def host(pod: Pod) -> str:
    return naming.pod_host(JOB, pod.name)


def views(*pods: Pod) -> list[PodView]:
    return [p.view() for p in pods]


CASES: list[tuple[str, Sequence[Pod], set[str], dict[str, int] | None, tuple[str, ...]]] = [
    ("no pods at all: waits for the role", [], {DNS}, None, ("trainer: no pods yet",)),
    (
        "three trainers running and resolving: through",
        [T0.copy().running(), T1.copy().running(), T2.copy().running()],
        {DNS, host(T0), host(T1), host(T2)},
        {"trainer": 3},
        (),
    ),
    (
        "one trainer still Pending: waits for that pod by name",
        [T0.copy().running(), T1.copy()],
        {DNS, host(T0)},
        None,
        (f"{T1.name} is Pending",),
    ),
    (
        "a running trainer whose name does not resolve yet",
        [T0.copy().running()],
        {DNS},
        None,
        (f"{host(T0)} does not resolve",),
    ),
    (
        "fewer pods than the job's replicas: says how many exist",
        [T0.copy().running(), T1.copy().running()],
        {DNS, host(T0), host(T1)},
        {"trainer": 3},
        ("trainer: 2 of 3 pods exist",),
    ),
    (
        "a pod being deleted is not waited for, nor counted",
        [T0.copy().running(), T1.copy().running().deleted(grace=300)],
        {DNS, host(T0)},
        {"trainer": 2},
        ("trainer: 1 of 2 pods exist",),
    ),
    (
        "a failed pod is left to the operator to replace",
        [T0.copy().running(), T1.copy().exited(1)],
        {DNS, host(T0)},
        None,
        (),
    ),
    (
        "the launcher's own pod is no trainer",
        [Pod("launcher", 0).running(), T0.copy().running()],
        {DNS, host(T0)},
        None,
        (),
    ),
    (
        "cluster DNS not answering comes first",
        [T0.copy().running()],
        {host(T0)},
        None,
        (f"DNS: {DNS} does not resolve",),
    ),
    (
        "a job scaled to zero trainers has nothing to wait for",
        [],
        {DNS},
        {"trainer": 0},
        (),
    ),
]


@pytest.mark.parametrize(
    ("pods", "resolved", "expected", "waiting"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_barrier_waits_for(
    pods: Sequence[Pod], resolved: set[str], expected: dict[str, int] | None, waiting: tuple[str, ...]
) -> None:
    verdict = decide(JOB, ["trainer"], views(*pods), resolved, expected=expected, dns_check=DNS)
    assert verdict.waiting == waiting
    assert verdict.done == (not waiting)


def test_only_running_live_pods_are_worth_resolving() -> None:
    pods = views(
        T0.copy().running(), T1.copy(), T2.copy().running().deleted(grace=30), Pod("launcher", 0).running()
    )
    assert hosts_to_resolve(JOB, ["trainer"], pods) == [host(T0)]


def test_a_pod_of_another_job_is_ignored() -> None:
    other = PodView.from_dict({"metadata": {"name": "x", "labels": {}}, "status": {"phase": "Pending"}})
    assert decide(JOB, ["trainer"], [other, *views(T0.copy().running())], {host(T0)}).done


def test_several_roles_are_each_waited_for() -> None:
    verdict = decide(JOB, ["trainer", "ps"], views(T0.copy().running()), {host(T0)})
    assert verdict.waiting == ("ps: no pods yet",)


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("kube-dns", "kube-dns.kube-system"),
        ("coredns.dns", "coredns.dns"),
        ("kube-dns.kube-system.", "kube-dns.kube-system"),
    ],
)
def test_the_dns_check_name(given: str, name: str) -> None:
    assert dns_check_name(given) == name


def test_roles_are_comma_separated_without_blanks_or_repeats() -> None:
    assert parse_roles("trainer, ps,,trainer") == ["trainer", "ps"]


def test_expected_replicas_are_read_from_the_job_when_whole_numbers() -> None:
    job = {
        "spec": {
            "replicaSpecs": {"trainer": {"replicas": 3}, "ps": {"replicas": "2"}, "x": {"replicas": True}}
        }
    }
    assert expected_replicas(job, ["trainer", "ps", "x", "launcher"]) == {"trainer": 3}
    assert expected_replicas({"spec": None}, ["trainer"]) == {}


def test_the_progress_line_names_what_is_missing_and_how_many_more() -> None:
    verdict = Verdict(tuple(f"pod-{i} is Pending" for i in range(7)))
    assert verdict.line(limit=2) == "waiting for: pod-0 is Pending; pod-1 is Pending; and 5 more"
    assert Verdict(()).line().startswith("every pod")


def test_the_command_takes_the_seeds_arguments() -> None:
    # The seed's init container args, with an unreachable cluster: a clear error, not a usage error.
    args = ["--barrier_roles=trainer", "--name=j", "--namespace=default", "--dns_check_svc=kube-dns"]
    result = CliRunner().invoke(main, ["barrier", *args, "--kubeconfig=/nonexistent", "--timeout=1"])
    assert "no such option" not in result.output
    result = CliRunner().invoke(main, ["barrier", "--help"])
    for option in ("--barrier_roles", "--incluster", "--name", "--namespace", "--dns_check_svc", "--timeout"):
        assert option in result.output


def test_the_command_says_what_it_waits_for_and_fails_on_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = importlib.import_module("aitj.cli.barrier")  # the package's name `barrier` is the command

    monkeypatch.setattr(cmd, "_clients", lambda incluster, kubeconfig: (None, None))
    monkeypatch.setattr(cmd, "check", lambda *a: Verdict(("trainer: no pods yet",)))
    args = ["barrier", "--barrier_roles=trainer", "--incluster", "--name=j", "--namespace=default"]
    result = CliRunner().invoke(main, [*args, "--timeout=0.2", "--interval=0.1"])
    assert result.exit_code == 1
    assert "waiting for: trainer: no pods yet" in result.output
    assert "timed out after 0.2s" in result.output


def test_the_command_passes_once_nothing_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = importlib.import_module("aitj.cli.barrier")  # the package's name `barrier` is the command

    looks = iter([Verdict(("x is Pending",)), Verdict(())])
    monkeypatch.setattr(cmd, "_clients", lambda incluster, kubeconfig: (None, None))
    monkeypatch.setattr(cmd, "check", lambda *a: next(looks))
    args = ["barrier", "--barrier_roles=trainer", "--incluster", "--name=j", "--namespace=default"]
    result = CliRunner().invoke(main, [*args, "--interval=0.1"])
    assert result.exit_code == 0, result.output
    assert "barrier passed" in result.output
