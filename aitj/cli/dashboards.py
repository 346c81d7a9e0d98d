"""``aitj dev dashboards``: the Grafana dashboards and alert rules (``aitj.tools.dashboards``).

``generate`` writes the dashboards' JSON, the rules file and the monitoring manifests from
their one Python source; ``render`` draws every panel from a live Prometheus as PNGs. Sits in
the command-line layer; the tools are imported when the command runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from aitj.cli.options import example
from aitj.cli.output import say


@click.group(
    epilog=example(
        "aitj dev dashboards generate", "aitj dev dashboards render --prometheus http://127.0.0.1:9090"
    )
)
def dashboards() -> None:
    """Grafana dashboards and Prometheus alerts for the operator's metrics."""


@dashboards.command("generate", epilog=example("aitj dev dashboards generate --root ."))
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The checkout: files go to ROOT/dashboards and ROOT/manifests/monitoring.",
)
@click.option(
    "--runbook-base",
    default=None,
    help="Where docs/runbooks.md is served (each alert's runbook_url is BASE#alert, lower case). "
    'Default: the placeholder docs/runbooks.md names ("Where runbook_url points").',
)
def generate(root: Path, runbook_base: str | None) -> None:
    """Write the dashboards' JSON, the rules file and the monitoring manifests."""
    from aitj.tools.dashboards import alerts, generate

    for path in generate.write(root, runbook_base or alerts.RUNBOOK_BASE):
        say(f"wrote {path}")


@dashboards.command(
    "render",
    epilog=example("aitj dev dashboards render --prometheus http://127.0.0.1:9090 --since 1h --out pictures"),
)
@click.option("--prometheus", "url", required=True, help="The Prometheus to query (its base URL).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("dashboards/pictures"),
    show_default=True,
    help="Folder for the PNGs (one per dashboard, named after its uid).",
)
@click.option(
    "--since", default="1h", show_default=True, help="The time range drawn, up to now (30m, 2h, ...)."
)
@click.option(
    "--rate-interval", default=None, help="Grafana's $__rate_interval. Default: the range / 20, 1m at least."
)
@click.option("--namespace", default="", help="The job dashboard's namespace variable.")
@click.option("--job", default="", help="The job dashboard's job variable.")
def render(url: str, out: Path, since: str, rate_interval: str | None, namespace: str, job: str) -> None:
    """Draw every panel of each dashboard from a live Prometheus, as Grafana would."""
    from aitj.devcluster.prometheus import PrometheusAPI, PrometheusError
    from aitj.tools.dashboards.boards import DASHBOARDS
    from aitj.tools.dashboards.render import Window, render

    end = time.time()
    variables = {"namespace": namespace, "job_name": job} | (
        {"__rate_interval": rate_interval} if rate_interval else {}
    )
    window = Window(end - _seconds(since), end, variables)
    for board in DASHBOARDS:
        try:
            say(f"wrote {render(board, PrometheusAPI(url), window, out / f'{board.uid}.png')}")
        except (PrometheusError, OSError) as e:
            raise click.ClickException(f"{board.title}: {e}") from e


def _seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return float(text[:-1]) * units[text[-1]]
    except (KeyError, ValueError) as e:
        raise click.BadParameter(f"{text!r}: a number and s, m, h or d", param_hint="--since") from e
