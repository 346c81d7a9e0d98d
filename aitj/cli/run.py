"""``aitj run``: the operator in this process.

Sits in the command-line layer: parses its flags into one ``OperatorOptions``
(``aitj.controller.options``) and hands it to ``aitj.controller.runner``.
"""

from __future__ import annotations

from pathlib import Path

import click

from aitj.cli.options import (
    example,
    kubeconfig_option,
    node_signal_options,
    node_signals,
    priority_class_map,
    priority_class_option,
)
from aitj.controller import leader


@click.command(
    "run",
    epilog=example(
        "aitj run --kubeconfig ~/.kube/config --metrics-address 0.0.0.0 --json-logs",
        "aitj run --metrics-insecure --metrics-port 8080   # plain HTTP on 127.0.0.1, local development",
        "aitj run --leader-elect --leader-election-namespace aitj-system   # one of several replicas",
        "aitj run --node-fault-condition KernelDeadlock=True --node-fault-taint example.com/gpu-xid",
    ),
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
    default=8443,
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
    "--metrics-secure/--metrics-insecure",
    default=True,
    show_default=True,
    help="HTTPS, each scrape's token checked by TokenReview and SubjectAccessReview (get /metrics); "
    "or plain HTTP with no authentication, for local development only.",
)
@click.option(
    "--metrics-cert-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A directory with tls.crt and tls.key for the metrics server (default: self-signed at start).",
)
@priority_class_option
@node_signal_options
@click.option("--json-logs", is_flag=True, help="Log JSON lines instead of key=value text.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    envvar="AITJ_LOG_LEVEL",
    help="The least level logged; debug adds a line per pass that created pods, with where its time went.",
)
@click.option(
    "--liveness",
    metavar="URL",
    help="Serve kopf's health endpoint at URL, e.g. http://0.0.0.0:8081/healthz (default: off).",
)
@click.option(
    "--recovery-watchdog/--no-recovery-watchdog",
    default=True,
    show_default=True,
    help="Read each job's master log: after a restart until training steps at full width, restarting "
    "the ranks still waiting in the ring the fault broke; otherwise every few seconds, restarting a pod "
    "whose worker left the ring while the pod runs on (docs/semantics.md section 27).",
)
@click.option(
    "--leader-elect",
    is_flag=True,
    help="Act only while holding a Lease, so several replicas can run: one acts, the others stand by warm.",
)
@click.option(
    "--leader-election-namespace",
    metavar="NS",
    help="The Lease's namespace (default: the pod's own in a cluster, else default).",
)
@click.option(
    "--leader-election-id",
    default=leader.DEFAULT_LEASE_NAME,
    show_default=True,
    help="The Lease's name; replicas sharing it elect one leader.",
)
@click.option(
    "--leader-elect-lease-duration",
    default=leader.DEFAULT_LEASE_SECONDS,
    show_default=True,
    type=click.IntRange(1),
    metavar="SECONDS",
    help="How long a standby waits after the leader's last renewal before taking the Lease.",
)
@click.option(
    "--leader-elect-renew-deadline",
    default=leader.DEFAULT_RENEW_DEADLINE,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="A leader that has not renewed for this long exits (must be under the lease duration).",
)
@click.option(
    "--leader-elect-retry-period",
    default=leader.DEFAULT_RETRY_PERIOD,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="How often the leader renews and a standby tries.",
)
def run_operator(
    kubeconfig: Path | None,
    namespaces: tuple[str, ...],
    metrics_port: int,
    metrics_address: str,
    metrics_secure: bool,
    metrics_cert_dir: Path | None,
    priority_classes: tuple[str, ...],
    node_fault_conditions: tuple[str, ...],
    node_fault_taints: tuple[str, ...],
    json_logs: bool,
    log_level: str,
    liveness: str | None,
    recovery_watchdog: bool,
    leader_elect: bool,
    leader_election_namespace: str | None,
    leader_election_id: str,
    leader_elect_lease_duration: int,
    leader_elect_renew_deadline: float,
    leader_elect_retry_period: float,
) -> None:
    """Run the operator: reconcile AITrainingJobs until interrupted."""
    from aitj.controller.metrics_server import MetricsEndpoint
    from aitj.controller.options import OperatorOptions
    from aitj.controller.runner import run

    election = None
    if leader_elect:
        try:
            election = leader.election_config(
                namespace=leader_election_namespace or leader.default_namespace(),
                name=leader_election_id,
                identity=leader.default_identity(),
                lease_seconds=leader_elect_lease_duration,
                renew_deadline=leader_elect_renew_deadline,
                retry_period=leader_elect_retry_period,
            )
        except ValueError as e:
            raise click.UsageError(f"leader election: {e}") from None
    options = OperatorOptions(
        kubeconfig=kubeconfig,
        namespaces=namespaces,
        metrics=MetricsEndpoint(metrics_port, metrics_address, metrics_secure, metrics_cert_dir),
        priority_classes=priority_class_map(priority_classes),
        node_signals=node_signals(node_fault_conditions, node_fault_taints),
        json_logs=json_logs,
        log_level=log_level.upper(),
        liveness=liveness,
        election=election,
        recovery_watchdog=recovery_watchdog,
    )
    run(options)
