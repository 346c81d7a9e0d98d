"""Options more than one command takes, defined once so they read the same everywhere."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from aitj.client import Client, Connection
from aitj.core.nodesignals import OUT_OF_SERVICE_TAINT, NodeSignals, parse_condition, parse_taint

F = TypeVar("F", bound=Callable[..., Any])

# The one exit-code table of every command (docs/cli.md): 0 done, 1 an error (the cluster's,
# the job's, or a wait that ran out), 2 a usage error (click's own, and ours as UsageError).
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_duration(text: str) -> float:
    """parse_duration: seconds from ``600``, ``1.5``, ``90s``, ``10m`` or ``1h30m`` (kubectl's
    and Arena's durations; a bare number is seconds)."""
    text = text.strip()
    if text[:1].isdigit() and text.replace(".", "", 1).isdigit():
        return float(text)
    m = _DURATION.fullmatch(text)
    if not text or m is None or not any(m.groups()):
        _fail_duration(text)
    h, mins, s = (float(g or 0) for g in m.groups())
    return h * 3600 + mins * 60 + s


def _fail_duration(text: str) -> NoReturn:
    raise ValueError(f"{text!r} is not a duration: write seconds (600) or e.g. 90s, 10m, 1h30m")


class Duration(click.ParamType[float, Any]):
    """Duration: a click type for durations (``parse_duration``), as seconds (a float)."""

    name = "duration"

    def __init__(self, minimum: float = 0) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value) if isinstance(value, (int, float)) else parse_duration(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if seconds < self.minimum:
            self.fail(f"{value!r} is shorter than {self.minimum:g}s", param, ctx)
        return seconds


DURATION = Duration()

kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)

job_namespace_option = click.option(
    "-n", "--namespace", help="The job's namespace (default: the kubeconfig context's, else default)."
)

_META = "aitj.connection"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """_remember keeps a connection flag in the context's meta (shared by the whole command)."""
    if value is not None:
        ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def connection_options(f: F) -> F:
    """connection_options: kubectl's global flags ``--kubeconfig``, ``--context``, ``--as`` and
    ``--request-timeout``; ``connection()`` reads them. Not the command's parameters (every
    command that talks to a cluster takes them; none needs them one by one)."""
    for option in (
        click.option(
            "--request-timeout",
            type=DURATION,
            expose_value=False,
            callback=_remember,
            metavar="DURATION",
            help="How long one request to the cluster may take (10s, 1m; 0: no limit, the default).",
        ),
        click.option(
            "--as",
            "as_user",
            expose_value=False,
            callback=_remember,
            metavar="USER",
            help="Act as this user (impersonation), as kubectl --as.",
        ),
        click.option(
            "--context",
            expose_value=False,
            callback=_remember,
            help="The kubeconfig context to use (default: its current one).",
        ),
        click.option(
            "--kubeconfig",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            expose_value=False,
            callback=_remember,
            help="Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
        ),
    ):
        f = option(f)
    return f


def connection() -> Connection:
    """connection: the ``Connection`` ``connection_options`` gave for the running command."""
    given: dict[str, Any] = click.get_current_context().meta.get(_META, {})
    timeout = given.get("request_timeout")
    return Connection(
        kubeconfig=given.get("kubeconfig"),
        context=given.get("context"),
        as_user=given.get("as_user"),
        request_timeout=timeout or None,
    )


def client(namespace: str | None = None) -> Client:
    """client: a ``Client`` on the running command's connection, in ``namespace`` (None: the
    context's)."""
    return Client(connection(), namespace=namespace)


def job_options(f: F) -> F:
    """job_options: ``-n/--namespace`` (parameter ``namespace``) and ``connection_options``."""
    return connection_options(job_namespace_option(f))


cluster_name_option = click.option(
    "--name", default="default", show_default=True, help="Cluster name (state folder)."
)


def output_option(*formats: str) -> Callable[[F], F]:
    """output_option: ``-o/--output`` (parameter ``output``) of ``formats``, kubectl's names:
    "" (the default) a table for people; wide, the table with more columns; json, yaml for
    scripts; name, ``aitrainingjob/NAME`` lines."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(formats),
        default=None,
        help=f"{', '.join(formats)}; default: a table for people.",
    )


no_headers_option = click.option(
    "--no-headers", is_flag=True, help="Tables without their header line (as kubectl's)."
)

all_namespaces_option = click.option(
    "-A", "--all-namespaces", is_flag=True, help="Every namespace (overrides -n)."
)


def example(*lines: str) -> str:
    """example: a command's epilog, so its ``--help`` ends with how to call it (kept unwrapped)."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


Values = tuple[str, ...]


def _each(parse: Callable[[str], object]) -> Callable[[click.Context, click.Parameter, Values], Values]:
    """_each: a callback checking every value of a repeatable option with ``parse`` (its
    ValueError becomes click's usage error, naming the option)."""

    def check(_ctx: click.Context, _param: click.Parameter, values: Values) -> Values:
        try:
            for value in values:
                parse(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
        return values

    return check


def node_signal_options(f: F) -> F:
    """node_signal_options: ``--node-fault-condition`` and ``--node-fault-taint`` (parameters
    ``node_fault_conditions``, ``node_fault_taints``; ``node_signals`` reads them), for the
    commands that judge nodes as the operator does: ``run``, and ``explain`` to say what an
    operator given them does."""
    f = click.option(
        "--node-fault-taint",
        "node_fault_taints",
        multiple=True,
        metavar="KEY",
        callback=_each(parse_taint),
        help=f"A taint key (any effect) that makes a node faulty, as --node-fault-condition; repeatable. "
        f"{OUT_OF_SERVICE_TAINT} always does.",
    )(f)
    return click.option(
        "--node-fault-condition",
        "node_fault_conditions",
        multiple=True,
        metavar="TYPE=STATUS",
        callback=_each(parse_condition),
        help="A node condition that makes a node faulty, e.g. the Node Problem Detector's "
        "KernelDeadlock=True: the pods on it count as nodeNotReady and no pod is created there; "
        "repeatable (docs/node-health.md).",
    )(f)


def node_signals(conditions: tuple[str, ...], taints: tuple[str, ...]) -> NodeSignals:
    """node_signals: what ``node_signal_options`` gave (already checked by their callbacks)."""
    return NodeSignals.parse(conditions, taints)


def _priority_class(item: str) -> None:
    """_priority_class: checks one ``--priority-class`` value."""
    key, sep, value = item.partition("=")
    if not sep or key not in ("high", "normal", "low") or not value:
        raise ValueError(f"{item!r}: expected high=CLASS, normal=CLASS or low=CLASS")


# For the commands that plan as the operator does: ``run``, and ``explain`` (given the flags
# the operator runs with, it plans the same pods).
priority_class_option = click.option(
    "--priority-class",
    "priority_classes",
    multiple=True,
    metavar="PRIORITY=CLASS",
    callback=_each(_priority_class),
    help="Map a job's spec.priority (high, normal, low) to a PriorityClass name; repeatable.",
)


def priority_class_map(items: tuple[str, ...]) -> dict[str, str]:
    """priority_class_map: what ``priority_class_option`` gave (already checked), as a map."""
    return {key: value for key, _, value in (item.partition("=") for item in items)}


selector_option = click.option(
    "-l", "--selector", default=None, help="Only jobs with these labels (team=nlp,tier!=test), as kubectl -l."
)

watch_option = click.option(
    "-w", "--watch", is_flag=True, help="Then print each job again when it changes, until Ctrl-C."
)


def complete_jobs(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """complete_jobs: the job names of the namespace (``-n`` if given) that start with
    ``incomplete``, for shell completion; none when the cluster cannot say."""
    try:
        jobs = Client(connection_from(ctx), namespace=ctx.params.get("namespace"))
        return [j.name for j in jobs.list() if j.name.startswith(incomplete)]
    except Exception:  # completion never fails aloud: no names is the answer
        return []


def connection_from(ctx: click.Context) -> Connection:
    """connection_from: ``connection()`` of the given context."""
    with ctx.scope(cleanup=False):
        return connection()
