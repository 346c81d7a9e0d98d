"""A Prometheus server for the dashboards' tests and pictures: the one built from source
(``versions.PROMETHEUS_COMPONENT``), on a free loopback port, scraping the targets it is given,
with its data in a folder of its own, and a small client of its HTTP API.

It is not part of the control plane: ``aitj cluster up`` does not start it. The end-to-end test
and ``make dashboards-render`` start one next to the operator they scrape.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aitj.devcluster.versions import prometheus_binary


class PrometheusError(RuntimeError):
    """Prometheus did not start, or a query failed (the message is Prometheus's own)."""


@dataclass(frozen=True)
class Target:
    """Target: one scrape job (``job_name``) of ``host:port`` addresses; ``labels``: the target
    labels Prometheus adds to every series (as service discovery would); ``relabel``: the
    scrape's metric_relabel_configs."""

    job: str
    addresses: tuple[str, ...]
    labels: tuple[tuple[str, str], ...] = ()
    relabel: tuple[dict[str, Any], ...] = ()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def config(targets: Sequence[Target], interval: str, rule_files: Sequence[Path] = ()) -> dict[str, Any]:
    """config: prometheus.yml for ``targets`` scraped every ``interval``, without honor_labels
    (as the shipped ServiceMonitor scrapes): a series' label that a target label also names is
    renamed ``exported_<name>``, unless the target's ``relabel`` puts it back."""
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [_scrape(t) for t in targets],
    }


def _scrape(target: Target) -> dict[str, Any]:
    static: dict[str, Any] = {"targets": list(target.addresses)}
    if target.labels:
        static["labels"] = dict(target.labels)
    scrape: dict[str, Any] = {"job_name": target.job, "static_configs": [static]}
    if target.relabel:
        scrape["metric_relabel_configs"] = [dict(r) for r in target.relabel]
    return scrape


class PrometheusServer:
    """PrometheusServer: ``start()`` runs the server, ``stop()`` ends it; ``url`` is its address."""

    def __init__(
        self, workdir: Path, targets: Sequence[Target], interval: str = "1s", rule_files: Sequence[Path] = ()
    ) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = PrometheusAPI(self.url)
        self._config = config(targets, interval, rule_files)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "prometheus.log"

    def start(self, timeout: float = 60) -> None:
        """start runs prometheus and waits until it answers ready; raises PrometheusError with
        its log if it does not."""
        binary = prometheus_binary()
        if not binary.exists():
            raise PrometheusError(f"{binary} is not built: run `aitj cluster build` (make build-cluster)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "prometheus.yml"
        cfg.write_text(yaml.safe_dump(self._config, sort_keys=False))
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                [
                    str(binary),
                    f"--config.file={cfg}",
                    f"--storage.tsdb.path={self.workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1d",
                    # No created-timestamp-zero-ingestion: the operator makes its counters' known
                    # label sets at 0 (docs/dashboards.md), and a stock Prometheus must count a
                    # job's only scale-out; the end-to-end test's scaling panels check it.
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise PrometheusError(
            f"prometheus did not become ready; its log:\n{self.log_path.read_text()[-3000:]}"
        )

    def stop(self) -> None:
        """stop ends the server (SIGTERM, then SIGKILL after 10 s)."""
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None


class PrometheusAPI:
    """PrometheusAPI: the few calls of Prometheus's HTTP API the dashboards need."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=30) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as e:
            body = json.load(e)
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """query: an instant query's series (``/api/v1/query``); raises PrometheusError on error."""
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        data = self._get("/api/v1/query", **params)
        result = data["result"]
        return result if data["resultType"] == "vector" else [{"metric": {}, "value": result}]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """query_range: a range query's series (``/api/v1/query_range``), each with ``values``."""
        data = self._get(
            "/api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{step:g}"
        )
        result: list[dict[str, Any]] = data["result"]
        return result

    def parse(self, expr: str) -> Any:
        """parse: Prometheus's own syntax tree of ``expr`` (``/api/v1/parse_query``)."""
        return self._get("/api/v1/parse_query", query=expr)

    def rules(self) -> list[dict[str, Any]]:
        """rules: every loaded rule with its health (``/api/v1/rules``)."""
        return [r for g in self._get("/api/v1/rules")["groups"] for r in g["rules"]]

    def targets_up(self) -> int:
        """targets_up: how many scrape targets are up."""
        data = self._get("/api/v1/targets")
        return sum(1 for t in data["activeTargets"] if t["health"] == "up")
