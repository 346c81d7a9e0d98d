"""Options more than one command takes, defined once so they read the same everywhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from aitj.core.nodesignals import OUT_OF_SERVICE_TAINT, NodeSignals, parse_condition, parse_taint

F = TypeVar("F", bound=Callable[..., Any])

kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)

job_namespace_option = click.option(
    "-n", "--namespace", help="The job's namespace (default: the kubeconfig context's, else default)."
)

cluster_name_option = click.option(
    "--name", default="default", show_default=True, help="Cluster name (state folder)."
)

output_option = click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"]),
    default="table",
    show_default=True,
    help="table for people; json or yaml for scripts.",
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
