"""The operator's /metrics as the e2e tests read it: every sample by name and labels; and over
HTTPS with a ServiceAccount's token (``aitj run --metrics-secure``)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.clusters import KubeCluster
from tests.operator_process import OperatorProcess

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(operator: OperatorProcess) -> Samples:
    """samples: every sample on /metrics, by (name, labels)."""
    out: Samples = {}
    for family in text_string_to_metric_families(operator.metrics()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found: Samples, name: str, **labels: str) -> float:
    """value: the sum of the samples of ``name`` whose labels include ``labels`` (0: none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= ls)


def secure_scrape(port: int, token: str | None) -> tuple[int, str]:
    """secure_scrape: the status and body of GET /metrics over HTTPS with ``token`` (a
    self-signed certificate: not verified, as the shipped ServiceMonitor does not)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return 0, ""


def account_token(cluster: KubeCluster, namespace: str, name: str) -> str:
    """account_token: a token of a new ServiceAccount ``name`` (bound to nothing)."""
    cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    request = {"spec": {"expirationSeconds": 3600}}
    return str(cluster.core.create_namespaced_service_account_token(name, namespace, request).status.token)
