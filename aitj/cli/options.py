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
