"""``aitj barrier``: the seed's job barrier, holding a launcher until its workers run and resolve.

The CCE seed runs it as the launcher's ``job-barrier`` init container from the image
``registry.baidubce.com/cce-plugin-dev/jobbarrier:v0.9-1`` (which the local cluster builds with
this command as its entrypoint), with the options ``--barrier_roles=trainer --incluster
--name=$(TRAININGJOB_NAME) --namespace=$(TRAININGJOB_NAMESPACE) --dns_check_svc=kube-dns``.

Thin: every ``--interval`` seconds it lists the job's pods (label ``api.LABEL_JOB``), reads the
job for its replica counts when allowed, resolves the names ``aitj.core.barrier`` asks about
with the pod's own resolver, and lets ``aitj.core.barrier.decide`` say what is missing. A line
says what it still waits for whenever that changes (and every 30 s). Exit 0 once nothing is
missing; 1 when ``--timeout`` runs out, with what was still missing.

The pod's ServiceAccount must be allowed to ``list`` pods in the namespace (and, optionally,
``get`` the job): a refusal is shown in the progress line, in the apiserver's words.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import click

from aitj.cli.options import example, kubeconfig_option
from aitj.core import api
from aitj.core.barrier import (
    Verdict,
    decide,
    dns_check_name,
    expected_replicas,
    hosts_to_resolve,
    parse_roles,
)
from aitj.core.observed import PodView

# How often an unchanged progress line is repeated, so a log shows the barrier is alive.
REPEAT_SECONDS = 30.0


@click.command(
    "barrier",
    epilog=example(
        "aitj barrier --barrier_roles=trainer --incluster --name=test-horovod-elastic "
        "--namespace=default --dns_check_svc=kube-dns"
    ),
)
@click.option("--barrier_roles", "roles", required=True, help="Replica names to wait for, comma-separated.")
@click.option("--name", "job", required=True, help="The AITrainingJob's name.")
@click.option("--namespace", required=True, help="The job's namespace.")
@click.option("--incluster", is_flag=True, help="Use the pod's ServiceAccount (else a kubeconfig).")
@click.option(
    "--dns_check_svc",
    "dns_svc",
    default=None,
    help="A Service whose name must resolve first (a bare name is looked up in kube-system).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=0,
    show_default=True,
    help="Seconds to wait before giving up with exit 1 (0: no limit).",
)
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
@kubeconfig_option
def barrier(
    roles: str,
    job: str,
    namespace: str,
    incluster: bool,
    dns_svc: str | None,
    timeout: float,
    interval: float,
    kubeconfig: Path | None,
) -> None:
    """Wait until every pod of the job's BARRIER_ROLES runs and its <pod>.<job> name resolves."""
    wanted = parse_roles(roles)
    if not wanted:
        raise click.BadParameter("name at least one replica", param_hint="--barrier_roles")
    core, custom = _clients(incluster, kubeconfig)
    dns_check = dns_check_name(dns_svc) if dns_svc else None
    say(
        f"barrier: job {namespace}/{job}, roles {', '.join(wanted)}"
        + (f", DNS {dns_check}" if dns_check else "")
    )
    started = time.monotonic()
    last, last_at = "", 0.0
    while True:
        verdict = check(core, custom, job, namespace, wanted, dns_check)
        elapsed = time.monotonic() - started
        if verdict.done:
            say(f"barrier passed after {elapsed:.0f}s: {verdict.line()}")
            return
        line = verdict.line()
        if line != last or time.monotonic() - last_at >= REPEAT_SECONDS:
            say(f"[{elapsed:.0f}s] {line}")
            last, last_at = line, time.monotonic()
        if timeout and elapsed >= timeout:
            say(f"error: barrier timed out after {timeout:g}s; still {line}")
            sys.exit(1)
        time.sleep(interval)


def check(
    core: Any, custom: Any, job: str, namespace: str, roles: list[str], dns_check: str | None
) -> Verdict:
    """check: one look at the cluster (pods, the job, DNS) and the core's verdict on it."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from aitj.controller.kubeclient import error_text, release

    try:
        resp = core.list_namespaced_pod(
            namespace, label_selector=f"{api.LABEL_JOB}={job}", _preload_content=False
        )
        pods = [PodView.from_dict(p) for p in json.loads(resp.data).get("items") or []]
        release(resp)
    except ApiException as e:
        return Verdict((f"the pods of {namespace}/{job} (listing them failed: {error_text(e)})",))
    except HTTPError as e:
        return Verdict((f"the apiserver ({e})",))
    try:
        doc = custom.get_namespaced_custom_object(api.GROUP, api.VERSION, namespace, api.PLURAL, job)
        expected: dict[str, int] | None = expected_replicas(doc, roles)
    except (ApiException, HTTPError):
        expected = None  # not allowed to read the job, or no such job: one pod per role will do
    names = hosts_to_resolve(job, roles, pods) + ([dns_check] if dns_check else [])
    resolved = {n for n in names if resolves(n)}
    return decide(job, roles, pods, resolved, expected=expected, dns_check=dns_check)


def resolves(name: str) -> bool:
    """resolves: whether the pod's resolver (its search path included) finds an address."""
    try:
        return bool(socket.getaddrinfo(name, None, type=socket.SOCK_STREAM))
    except (socket.gaierror, UnicodeError):
        return False


def say(line: str) -> None:
    click.echo(f"{time.strftime('%H:%M:%S')} {line}")
    sys.stdout.flush()


def _clients(incluster: bool, kubeconfig: Path | None) -> tuple[Any, Any]:
    from kubernetes import client, config
    from kubernetes.config import ConfigException

    from aitj.controller.kubeclient import api_client

    try:
        if incluster:
            cfg = client.Configuration()
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            apiclient = client.ApiClient(cfg)
        else:
            apiclient = api_client(kubeconfig)
    except (ConfigException, OSError) as e:
        where = (
            "the pod's ServiceAccount" if incluster else "a kubeconfig (give --kubeconfig, or --incluster)"
        )
        raise click.ClickException(f"no cluster configured: {e} (looked for {where})") from e
    return client.CoreV1Api(apiclient), client.CustomObjectsApi(apiclient)
