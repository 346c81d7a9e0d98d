"""Every command against the CLI's one table: kubectl's global flags where a command talks to a
cluster, ``-o`` with kubectl's names where it prints a job, and the exit codes (0 done, 1 an
error as one line, never a traceback, 2 a usage error), without a cluster: an unreachable
server, a context the kubeconfig lacks, a bad flag."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import ClassVar

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from aitj.cli import main

# Each command that talks to a cluster, with the arguments it needs.
CLUSTER_COMMANDS = {
    "get": ["job"],
    "list": [],
    "describe": ["job"],
    "logs": ["job"],
    "wait": ["job"],
    "delete": ["job"],
    "scaleout": ["job", "--count", "1"],
    "scalein": ["job", "--count", "1"],
    "explain": ["job"],
    "submit": ["--name", "x", "--image", "busybox", "--command", "true"],
    "release": ["--all"],
}
GLOBAL_FLAGS = ("--kubeconfig", "--context", "--as", "--request-timeout", "--namespace")
OUTPUTS = {
    "get": {"json", "yaml", "wide", "name"},
    "list": {"json", "yaml", "wide", "name"},
    "describe": {"json", "yaml"},
    "explain": {"json", "yaml"},
    "submit": {"json", "yaml", "name"},
    "wait": {"json", "yaml", "name"},
    "delete": {"name"},
}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kubeconfig: one context, naming a server nobody listens on."""
    path = tmp_path_factory.mktemp("kc") / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{closed_port()}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "dead",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), result.output
    return lines[-1]


def options(command: str) -> set[str]:
    found = main.commands[command]
    return {o for p in found.params if isinstance(p, click.Option) for o in p.opts}


@pytest.mark.parametrize("command", sorted(CLUSTER_COMMANDS))
def test_every_command_that_talks_to_a_cluster_takes_kubectls_global_flags(command: str) -> None:
    assert set(GLOBAL_FLAGS) <= options(command)
    assert "-n" in options(command)


@pytest.mark.parametrize("command", sorted(CLUSTER_COMMANDS))
def test_an_unreachable_cluster_is_exit_1_and_one_line_naming_it(command: str, kubeconfig: Path) -> None:
    result = run(command, *CLUSTER_COMMANDS[command], "--kubeconfig", str(kubeconfig))
    line = one_error_line(result, 1)
    assert "cannot reach the cluster at http://127.0.0.1:" in line, line


@pytest.mark.parametrize("command", sorted(CLUSTER_COMMANDS))
def test_a_context_the_kubeconfig_lacks_is_exit_1_and_one_line(command: str, kubeconfig: Path) -> None:
    result = run(command, *CLUSTER_COMMANDS[command], "--kubeconfig", str(kubeconfig), "--context", "nope")
    assert "nope" in one_error_line(result, 1)


@pytest.mark.parametrize("command", sorted(CLUSTER_COMMANDS))
@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(["--request-timeout", "soon"], id="a timeout that is not a duration"),
        pytest.param(["--no-such-flag"], id="an unknown flag"),
    ],
)
def test_a_usage_error_is_exit_2_and_one_line(command: str, bad: list[str]) -> None:
    result = run(command, *CLUSTER_COMMANDS[command], *bad)
    line = one_error_line(result, 2)
    assert "--help)" in line, line


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_output_takes_kubectls_names_and_nothing_else(command: str) -> None:
    (output,) = [p for p in main.commands[command].params if "-o" in getattr(p, "opts", ())]
    assert isinstance(output.type, click.Choice) and set(output.type.choices) == OUTPUTS[command]
    one_error_line(run(command, *CLUSTER_COMMANDS[command], "-o", "xml"), 2)


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("list", {"-l", "-w", "--no-headers", "-A"}),
        ("get", {"-w", "--no-headers"}),
        ("logs", {"-f", "-c", "--tail"}),
        ("chaos", {"-n", "-A", "-l"}),
    ],
)
def test_kubectls_own_flags_are_where_kubectl_has_them(command: str, flags: set[str]) -> None:
    assert flags <= options(command)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["scaleout", "job", "--count", "1", "--timeout", "10 minutes"], "not a duration"),
        (["wait", "job", "--timeout", "x"], "not a duration"),
        (["wait", "job", "--for", "phase=Sleeping"], "phase=PHASE"),
        (["chaos", "--duration", "forever", "--dry-run"], "not a duration"),
        (["submit", "--name", "x", "--image", "i", "--command", "c", "--env", "novalue"], "KEY=VALUE"),
    ],
)
def test_durations_and_values_are_checked_as_usage_errors(args: list[str], words: str) -> None:
    assert words in one_error_line(run(*args), 2)


def test_the_developer_commands_are_under_dev_and_their_old_names_still_work() -> None:
    assert {"cluster", "demo", "bench", "dashboards"} <= set(main.commands["dev"].commands)  # type: ignore[attr-defined]
    assert not {"cluster", "demo", "bench", "dashboards"} & set(main.commands)
    old = run("cluster", "kubeconfig", "--name", "never-made")
    assert "note: `aitj cluster` is now `aitj dev cluster`" in old.stderr
    assert (
        one_error_line(old, 1) == "error: cluster 'never-made' has not been set up: run `aitj dev cluster up`"
    )


class FakeJobs:
    """FakeJobs: a Client that remembers how it was made and lists two jobs."""

    made: ClassVar[list[tuple[object, str | None]]] = []

    def __init__(self, connection: object, namespace: str | None = None) -> None:
        FakeJobs.made.append((connection, namespace))

    def list(self) -> list[object]:
        return [type("J", (), {"name": n})() for n in ("bert", "bert-large", "gpt")]


def test_job_names_are_completed_from_the_namespace_and_context_given(
    kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.shell_completion import ShellComplete

    import aitj.cli.options

    monkeypatch.setattr(aitj.cli.options, "Client", FakeJobs)
    complete = ShellComplete(main, {}, "aitj", "_AITJ_COMPLETE")
    args = ["get", "--kubeconfig", str(kubeconfig), "--context", "dead", "-n", "team-a"]
    assert [c.value for c in complete.get_completions(args, "be")] == ["bert", "bert-large"]
    connection, namespace = FakeJobs.made[-1]
    assert namespace == "team-a"
    assert (connection.kubeconfig, connection.context) == (kubeconfig, "dead")  # type: ignore[attr-defined]


def test_completion_says_nothing_when_the_cluster_cannot_answer(kubeconfig: Path) -> None:
    from click.shell_completion import ShellComplete

    complete = ShellComplete(main, {}, "aitj", "_AITJ_COMPLETE")
    assert complete.get_completions(["logs", "--kubeconfig", str(kubeconfig)], "") == []


def test_watch_prints_a_job_again_only_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    from aitj.cli import jobs
    from aitj.cli.jobview import JobRow

    def row(phase: str, age: str) -> JobRow:
        return JobRow("ns", "bert", phase, age, "trainer 2/2", 0, "R", "m")

    polls = iter([[row("Creating", "1s")], [row("Creating", "3s")], [row("Running", "5s")]])

    def rows() -> list[JobRow]:
        try:
            return next(polls)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr("time.sleep", lambda _: None)
    printed: list[str] = []
    monkeypatch.setattr("click.echo", lambda line, **_: printed.append(str(line)))
    jobs._watch(rows, "name", headers=True)
    assert printed == ["aitrainingjob.kongming.cce.baiudbce.com/bert"] * 2  # Creating, then Running
