"""Options more than one command takes, defined once so they read the same everywhere."""

from __future__ import annotations

from pathlib import Path

import click

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
