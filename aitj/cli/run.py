"""``aitj run``: the operator in this process.

Sits in the command-line layer: parses options and calls ``aitj.controller.runner``.
"""

from __future__ import annotations

from pathlib import Path

import click

from aitj.cli.options import example, kubeconfig_option


@click.command(
    "run", epilog=example("aitj run --kubeconfig ~/.kube/config --metrics-address 0.0.0.0 --json-logs")
)
@kubeconfig_option
@click.option(
    "--namespace",
    "-n",
    "namespaces",
    multiple=True,
    help="Namespace to operate in; repeat for more. Default: all namespaces.",
)
@click.option(
    "--metrics-port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Serve Prometheus metrics on ADDRESS:PORT/metrics (0: off).",
)
@click.option(
    "--metrics-address",
    default="127.0.0.1",
    show_default=True,
    help="Address the metrics server binds; 0.0.0.0 in a pod so Prometheus can scrape it.",
)
@click.option(
    "--priority-class",
    "priority_classes",
    multiple=True,
    metavar="PRIORITY=CLASS",
    help="Map a job's spec.priority (high, normal, low) to a PriorityClass name; repeatable.",
)
@click.option("--json-logs", is_flag=True, help="Log JSON lines instead of key=value text.")
@click.option(
    "--liveness",
    metavar="URL",
    help="Serve kopf's health endpoint at URL, e.g. http://0.0.0.0:8081/healthz (default: off).",
)
def run_operator(
    kubeconfig: Path | None,
    namespaces: tuple[str, ...],
    metrics_port: int,
    metrics_address: str,
    priority_classes: tuple[str, ...],
    json_logs: bool,
    liveness: str | None,
) -> None:
    """Run the operator: reconcile AITrainingJobs until interrupted."""
    from aitj.controller.runner import run

    mapping: dict[str, str] = {}
    for item in priority_classes:
        key, sep, value = item.partition("=")
        if not sep or key not in ("high", "normal", "low") or not value:
            raise click.BadParameter(
                f"{item!r}: expected high=CLASS, normal=CLASS or low=CLASS", param_hint="--priority-class"
            )
        mapping[key] = value
    run(
        kubeconfig=kubeconfig,
        namespaces=namespaces,
        metrics_port=metrics_port,
        metrics_address=metrics_address,
        priority_classes=mapping,
        json_logs=json_logs,
        liveness=liveness,
    )
