"""The command line's shape: every command's ``--help`` ends with an example, a usage error is
one line, and ``aitj logs`` picks and prefixes pods as documented."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from aitj.cli import main
from aitj.client.job import LogLine, chosen, container_of, no_pod_message
from aitj.core.observed import PodView
from tests.unit.builders import Pod


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name)


@pytest.mark.parametrize("path", [" ".join(p) or "aitj" for p in commands(main)])
def test_every_commands_help_ends_with_an_example(path: str) -> None:
    args = [] if path == "aitj" else path.split()
    result = CliRunner().invoke(main, [*args, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    tail = result.output.rstrip().splitlines()
    example = next(i for i, line in enumerate(tail) if line.strip() == "Example:")
    assert all(
        line.startswith("    aitj") or line.startswith("      ") or "kubectl" in line
        for line in tail[example + 1 :]
    ), tail[example:]


def test_the_kubectl_plugin_is_the_same_command() -> None:
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name.endswith("aitj")}
    assert scripts == {"aitj": "aitj.cli:main", "kubectl-aitj": "aitj.cli:main"}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["scaleout", "job", "--count", "0"], id="a count out of range"),
        pytest.param(["get"], id="a missing job name"),
        pytest.param(["list", "-o", "xml"], id="an unknown output format"),
        pytest.param(["logs", "job", "--tail", "-1"], id="a negative tail"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_help_to_read(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--help)" in lines[0], lines


def prefix(view: PodView) -> str:
    return LogLine(view.name, view.replica or "", view.index, "").prefix


def test_logs_choose_the_live_pods_of_a_replica_and_index_in_order() -> None:
    pods = [
        Pod("trainer", 1).running().raw,
        Pod("launcher", 0).running().raw,
        Pod("trainer", 0).running().raw,
        Pod("trainer", 2).running().deleted().raw,
    ]
    assert [prefix(v) for v in chosen(pods, None, None)] == ["[launcher 0] ", "[trainer 0] ", "[trainer 1] "]
    assert [prefix(v) for v in chosen(pods, "trainer", 1)] == ["[trainer 1] "]
    assert chosen(pods, "trainer", 2) == []


@pytest.mark.parametrize(
    ("replica", "index", "wanted"),
    [
        (None, None, "running"),
        ("trainer", None, "replica trainer"),
        (None, 0, "index 0"),
        ("trainer", 7, "replica trainer index 7"),
    ],
)
def test_logs_without_a_pod_names_what_was_asked_for_and_the_pods_there_are(
    replica: str | None, index: int | None, wanted: str
) -> None:
    pods = [Pod("trainer", 1).running().raw, Pod("launcher", 0).running().raw]
    assert no_pod_message("ns", "bert", pods, replica, index) == (
        f"job ns/bert has no pod {wanted} (its pods: launcher 0, trainer 1)"
    )
    assert no_pod_message("ns", "bert", [], replica, index).endswith("(its pods: none)")


@pytest.mark.parametrize(
    ("spec", "asked", "read"),
    [
        ({"containers": [{"name": "main"}, {"name": "side"}]}, None, "main"),
        ({"containers": [{"name": "main"}, {"name": "side"}]}, "side", "side"),
        ({}, None, ""),
        ({"containers": []}, "x", "x"),
    ],
)
def test_logs_read_the_container_asked_for_or_else_the_pods_first(
    spec: dict[str, object], asked: str | None, read: str
) -> None:
    assert container_of({"spec": spec}, asked) == read
