"""The dashboards and alerts against a real Prometheus (issue 12's acceptance): Prometheus,
built from source like the control plane, scrapes the operator every second while one job goes
through a force delete, an exit-code restart, a node NotReady, a drain, a scale-out and a
scale-in. Then every panel query and every alert expression is evaluated through Prometheus's
HTTP API, the tokenizer's reading of each is compared with Prometheus's own parser, and the
dashboards are drawn (``AITJ_DASHBOARDS_PICTURES=DIR`` keeps the PNGs: make dashboards-pictures).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from aitj.core import api
from aitj.devcluster import faults
from aitj.devcluster.prometheus import PrometheusServer, Target
from aitj.devcluster.versions import kubectl_binary, prometheus_binary
from aitj.tools.dashboards import alerts, generate
from aitj.tools.dashboards.boards import DASHBOARDS
from aitj.tools.dashboards.promql import ast_usage, usage
from aitj.tools.dashboards.spec import substitute
from tests.clusters import KubeCluster
from tests.e2e.pools import Pool
from tests.jobs import (
    create_job,
    get_job,
    job_pods,
    live,
    patch_job,
    running,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.seeds import REPO
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not prometheus_binary().exists(), reason="prometheus not built: make build-cluster"),
]
NAME = "prom-job"
OPERATOR_NAMESPACE = "aitj-system"  # the Prometheus Operator's target label
SCRAPE = "1s"


@pytest.fixture
def prometheus(live_operator: OperatorProcess, tmp_path: Path) -> Iterator[PrometheusServer]:
    """prometheus: a Prometheus scraping the session's operator every second, with the rules,
    as the shipped ServiceMonitor has the Prometheus Operator scrape it: no honor_labels, the
    target labelled with the operator's namespace, and the ServiceMonitor's relabelings."""
    target = Target(
        alerts.SCRAPE_JOB,
        (f"127.0.0.1:{live_operator.metrics_port}",),
        labels=(("namespace", OPERATOR_NAMESPACE),),
        relabel=tuple(generate.metric_relabel_configs()),
    )
    server = PrometheusServer(
        tmp_path / "prometheus",
        [target],
        interval=SCRAPE,
        rule_files=[REPO / "dashboards" / "rules.yaml"],
    )
    server.start()
    try:
        wait_for(lambda: server.api.targets_up() == 1, 30, "the operator scraped")
        yield server
    finally:
        server.stop()


def restarts(cluster: KubeCluster, namespace: str) -> int:
    """restarts: the job's restarts as its status counts them, every replica type."""
    counts = (get_job(cluster, namespace, NAME).get("status") or {}).get("RestartCount") or {}
    return sum(int(v) for v in counts.values())


def trainers(cluster: KubeCluster, namespace: str) -> dict[int, Any]:
    return {
        int(p.metadata.labels[api.LABEL_INDEX]): p
        for p in running(job_pods(cluster, namespace, NAME, "trainer"))
    }


def settle(cluster: KubeCluster, namespace: str, want_restarts: int, want_trainers: int = 3) -> None:
    """settle: waits for the job to count ``want_restarts`` and run ``want_trainers`` trainers."""
    wait_for(lambda: restarts(cluster, namespace) >= want_restarts, 90, f"{want_restarts} restarts counted")
    wait_for(
        lambda: len(trainers(cluster, namespace)) == want_trainers, 90, f"{want_trainers} trainers Running"
    )
    wait_phase(cluster, namespace, NAME, "Running", timeout=90)


def scenario(cluster: KubeCluster, namespace: str, pool: Pool) -> None:
    """scenario: the six events of the issue, one after the other, each waited for."""
    for _ in range(4):
        pool.add()
    # A scale-in grace of 1 s, not the default 60 s: kwok runs no launcher to read the host list,
    # so the grace is waiting alone (the scale-in still leaves the list first, then deletes).
    grace = set_path("spec.replicaSpecs.trainer.scaleInGracePeriod", 1)
    create_job(cluster, namespace, seed_variant(NAME, pin=pool.pin(), grace=grace))
    wait_phase(cluster, namespace, NAME, "Running", timeout=90)
    wait_for(lambda: len(trainers(cluster, namespace)) == 3, 60, "3 trainers Running")

    faults.force_delete(cluster.api, namespace, trainers(cluster, namespace)[0].metadata.name)
    settle(cluster, namespace, 1)

    launcher = live(job_pods(cluster, namespace, NAME, "launcher"))[0].metadata.name
    faults.pod_exit(cluster.api, namespace, launcher, 129)  # the launcher's exit-code rule
    settle(cluster, namespace, 2)

    node = trainers(cluster, namespace)[1].spec.node_name
    on_node = sum(1 for p in trainers(cluster, namespace).values() if p.spec.node_name == node)
    faults.node_not_ready(cluster.api, node)
    settle(cluster, namespace, 2 + on_node)
    cluster.core.patch_node(node, {"spec": {"unschedulable": True}})

    done = restarts(cluster, namespace)
    placed = {i: p.spec.node_name for i, p in trainers(cluster, namespace).items()}
    node = placed[0]
    drain = subprocess.run(
        [str(kubectl_binary()), f"--kubeconfig={cluster.kubeconfig}", "drain", node, "--ignore-daemonsets",
         "--delete-emptydir-data", "--timeout=60s"],
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert drain.returncode == 0, drain.stdout + drain.stderr
    assert "evicted" in drain.stdout, (placed, drain.stdout)
    settle(cluster, namespace, done + sum(1 for n in placed.values() if n == node))

    # Each scaling is waited for until it is recorded as finished: a scale-in issued while the
    # scale-out still runs would cancel it.
    for replicas, done_scalings in ((4, 1), (3, 2)):
        patch_job(cluster, namespace, NAME, {"spec": {"replicaSpecs": {"trainer": {"replicas": replicas}}}})
        wait_for(partial(scalings_recorded, cluster, namespace, done_scalings), 90, "the scaling recorded")
        settle(cluster, namespace, 0, want_trainers=replicas)


def scale_history(cluster: KubeCluster, namespace: str) -> list[Any]:
    return list((get_job(cluster, namespace, NAME).get("status") or {}).get("scaleHistory") or [])


def scalings_recorded(cluster: KubeCluster, namespace: str, n: int) -> bool:
    return len(scale_history(cluster, namespace)) >= n


def value(series: list[dict[str, Any]]) -> float:
    """value: the sum of an instant query's values (NaN when there are none)."""
    return sum(float(s["value"][1]) for s in series) if series else math.nan


def test_every_panel_and_alert_evaluates_on_a_real_prometheus_after_a_scenario(
    cluster: KubeCluster,
    namespace: str,
    pool: Pool,
    prometheus: PrometheusServer,
    tmp_path: Path,
) -> None:
    started = time.time()
    # The session's operator has served other tests: its recovery histogram (no job label)
    # already counts their restarts. What this scenario adds is the difference.
    recovered_before = value(prometheus.api.query("sum(aitj_recovery_seconds_count)", at=started))
    recovered_before = 0.0 if math.isnan(recovered_before) else recovered_before  # none yet
    scenario(cluster, namespace, pool)
    time.sleep(3)  # three more scrapes: the last counters are in
    end = time.time()
    span = f"{round(end - started) + 30}s"
    values = {
        "__range": span,
        "__rate_interval": span,
        "namespace": namespace,
        "job_name": NAME,
        "cluster": ".*",
        "datasource": "",
    }
    api_ = prometheus.api

    # Every query evaluates, and Prometheus's parser reads it as the tokenizer the unit tests use does.
    answers: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
    for board in DASHBOARDS:
        for panel in board.panels:
            for q in panel.queries:
                expr = substitute(q.expr, values)
                mine, theirs = usage(expr), ast_usage(api_.parse(expr))
                assert (mine.selectors, mine.grouping) == (theirs.selectors, theirs.grouping), expr
                answers.setdefault(panel.topic, []).append(
                    (f"{board.uid}/{panel.title}", api_.query(expr, at=end))
                )
    for alert in alerts.ALERTS:
        api_.query(alert.expr, at=end)  # raises on an error
        mine, theirs = usage(alert.expr), ast_usage(api_.parse(alert.expr))
        assert (mine.selectors, mine.grouping) == (theirs.selectors, theirs.grouping), alert.name

    # The panels about restarts, recovery time, lost GPU time and scaling show the scenario.
    for topic in ("restarts", "recovery", "lost GPU", "scaling", "goodput"):
        for where, series in answers[topic]:
            assert any(not math.isnan(float(s["value"][1])) and float(s["value"][1]) > 0 for s in series), (
                f"{where}: no data ({series})"
            )

    # The recovery histogram counts each restart once, and so does the job's own recovery
    # figure: as many as the counter and the job's status.
    performed = restarts(cluster, namespace)
    mine_only = f'{{namespace="{namespace}"}}'
    counted = value(api_.query(f"sum(aitj_restarts_total{mine_only})", at=end))
    observed = value(api_.query("sum(aitj_recovery_seconds_count)", at=end)) - recovered_before
    listed = value(api_.query(f"sum(aitj_job_recovery_seconds_count{mine_only})", at=end))
    assert performed >= 4  # one force delete, one exit code, a node's trainers, a drained node's
    by_cause = api_.query(f"sum by (cause) (aitj_restarts_total{mine_only})", at=end)
    causes = {s["metric"]["cause"] for s in by_cause}
    # A drain's evictions count as nodeNotReady: the cordoned node is node maintenance (policy.py).
    assert causes == {"PodForceDeleted", "exitCode", "nodeNotReady"}, causes
    # Time lost by cause has a series for every cause (kwok's recoveries take under the status's
    # one-second resolution, so their seconds may all be 0 here; tests/e2e/real/test_goodput.py
    # measures them on real nodes).
    (lost,) = (series for _, series in answers["badput"])
    assert {s["metric"]["cause"] for s in lost} == {"fault", "hang", "recovery", "scaling", "starting"}, lost
    by_class = api_.query(f"sum by (class) (aitj_restarts_total{mine_only})", at=end)
    classes = {s["metric"]["class"]: float(s["value"][1]) for s in by_class}
    assert classes.keys() == {"infrastructure", "application"} and all(classes.values()), classes
    assert counted == observed == listed == performed, (performed, counted, observed, listed)
    scalings = api_.query(f"sum by (direction) (aitj_scaling_operations_total{mine_only})", at=end)
    assert {s["metric"]["direction"]: float(s["value"][1]) for s in scalings} == {"out": 1.0, "in": 1.0}

    # The rules loaded and evaluate without error.
    rules = api_.rules()
    assert {r["name"] for r in rules} == {a.name for a in alerts.ALERTS}
    assert all(r["health"] != "err" for r in rules), [r.get("lastError") for r in rules]

    # Scraped as the ServiceMonitor scrapes: the per-job series keep the training job's namespace
    # (the relabelings), the operator's own the target's; job is the scrape job; nothing is renamed.
    mine_scraped = f'namespace="{namespace}", job_name="{NAME}", job="{alerts.SCRAPE_JOB}"'
    assert api_.query(f"aitj_job_phase{{{mine_scraped}}}", at=end), "the job's series under its namespace"
    assert value(api_.query(f'count(aitj_build_info{{namespace="{OPERATOR_NAMESPACE}"}})', at=end)) == 1
    assert api_.query('count({exported_namespace!=""} or {exported_job!=""})', at=end) == []

    # controller-runtime's metrics: the passes went through the work queue, the calls through
    # the REST client (the executor's pod creates among them).
    assert value(api_.query('sum(workqueue_adds_total{name="aitrainingjob"})', at=end)) > 0
    assert value(api_.query('sum(rest_client_requests_total{method="POST", code="201"})', at=end)) > 0

    # The dashboards draw from the same Prometheus, through the command a user runs.
    out = Path(os.environ.get("AITJ_DASHBOARDS_PICTURES") or tmp_path)
    since = f"{round(time.time() - started) + 30}s"
    command = [
        "dev",
        "dashboards",
        "render",
        f"--prometheus={prometheus.url}",
        f"--out={out}",
        f"--since={since}",
    ]
    command += ["--rate-interval=30s", f"--namespace={namespace}", f"--job={NAME}"]
    drawn = subprocess.run(
        [sys.executable, "-m", "aitj", *command], capture_output=True, text=True, timeout=300
    )
    assert drawn.returncode == 0, drawn.stderr
    for board in DASHBOARDS:
        assert (out / f"{board.uid}.png").stat().st_size > 20_000
