"""The operator's logs (structlog, captured): a restart's line says which job it is about, and
a pass that makes the job's ssh key pair leaves no key material in any line, however it logs
the Plan; the thread names line (SIGUSR2) names threads as /proc does. The whole operator's log
of a real run is checked too (tests/e2e/test_metrics.py)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import os
import threading
from collections.abc import Mapping, MutableMapping
from typing import Any

from structlog.testing import capture_logs

from aitj.controller import metrics, sshkeys
from aitj.controller.cache import Snapshot
from aitj.controller.executor import Sent, Target
from aitj.controller.logs import log
from aitj.controller.reconciler import Reconciler, Sources
from aitj.controller.runner import log_thread_names
from aitj.controller.written import Written
from aitj.core.api import JobStatus, Phase, RestartScope
from aitj.core.planner.failed_pass import Report
from aitj.core.planner.types import Plan, RestartRecord, SshKeys
from aitj.core.policy import Failure, FailureKind
from tests.seeds import seed_job

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
RESTART = RestartRecord(
    "trainer",
    1,
    0,
    "job-trainer-abcde-1",
    Failure(FailureKind.EXIT_CODE, "exit 137", 137, NOW),
    "exitCodes 137",
    RestartScope.POD,
    NOW,
)


class StatusWriter:
    """Written: an executor whose status write went through, or not (the job found gone)."""

    def __init__(self, status_written: bool) -> None:
        self.status_written = status_written

    def execute(self, target: Target, plan: Plan) -> Sent:
        return Sent(status_written=self.status_written)

    def report(self, target: Target, report: Report) -> Written:
        return Written()


def restart_lines(status_written: bool) -> list[MutableMapping[str, Any]]:
    """restart_lines: the restart lines of a pass whose status write records RESTART."""
    doc = seed_job()
    doc["metadata"].update(namespace="team-a", name="bert", uid="uid-1", resourceVersion="7")
    doc["status"] = {"ownership": {"key": "0" * 32}}  # stored: this pass is planned
    r = Reconciler(
        StatusWriter(status_written),
        lambda key: Snapshot(doc, [], {}, {}),
        job_exists=lambda namespace, name: True,
        sources=Sources(
            clock=lambda: NOW,
            planner=lambda *_, **__: Plan(status=JobStatus(phase=Phase.RESTARTING), restarts=(RESTART,)),
            keygen=lambda name: SshKeys("private", "public"),
        ),
    )
    with capture_logs() as lines:
        asyncio.run(r.kick(("team-a", "bert")))
    return [x for x in lines if x["event"] == "restart"]


def test_a_restart_line_carries_the_job_namespace_and_name() -> None:
    (line,) = restart_lines(status_written=True)
    assert line["namespace"] == "team-a" and line["job"] == "bert"
    assert (line["replica"], line["index"], line["cause"], line["scope"]) == ("trainer", 1, "exitCode", "Pod")
    metrics.forget_job("team-a", "bert")


def test_no_restart_line_when_the_job_was_gone_before_its_status_was_written() -> None:
    assert restart_lines(status_written=False) == []


class Chatty:
    """Chatty: an executor that logs everything it is handed, as a careless one would."""

    def execute(self, target: Target, plan: Plan) -> Sent:
        """execute logs the target and the Plan, whole."""
        log.info("executing", target=repr(target), plan=repr(plan), ensure=[repr(m) for m in plan.ensure])
        log.info("plan", plan=plan)
        return Sent()

    def report(self, target: Target, report: Report) -> Written:
        """report logs what it is handed, whole."""
        log.info("report", target=repr(target), report=repr(report))
        return Written()


def test_a_pass_that_makes_the_ssh_key_pair_logs_no_key_material() -> None:
    made: list[SshKeys] = []

    def keygen(name: str) -> SshKeys:
        """keygen: a real key pair, kept to look for in the logs."""
        made.append(SshKeys(*sshkeys.generate_keypair(f"aitj@{name}")))
        return made[-1]

    doc = seed_job()
    doc["metadata"].update(namespace="team-a", uid="uid-1", resourceVersion="7")
    doc["status"] = {"ownership": {"key": "0" * 32}}  # stored: this pass may make the Secret
    r = Reconciler(
        Chatty(),
        lambda key: Snapshot(doc, [], {}, {}),
        job_exists=lambda namespace, name: True,
        sources=Sources(clock=lambda: NOW, keygen=keygen),
    )
    with capture_logs() as lines:
        asyncio.run(r.kick(("team-a", doc["metadata"]["name"])))
    assert made, "the pass made a key pair"
    text = "\n".join(_everything(line) for line in lines)
    assert "plan" in text  # the Plan was logged, whole
    private = made[0].private_pem
    body = "".join(x for x in private.splitlines() if "-----" not in x)
    assert "PRIVATE KEY" not in text
    for secret in (body[:48], base64.b64encode(private.encode()).decode()[:48]):
        assert secret not in text


def _everything(line: Mapping[str, Any]) -> str:
    """_everything: a captured line as any renderer would print it."""
    return " ".join(f"{k}={v!r} {v}" for k, v in line.items())


def test_the_thread_names_line_names_each_thread_by_the_kernel_id_proc_lists() -> None:
    with capture_logs() as lines:
        log_thread_names()
    (line,) = [x for x in lines if x["event"] == "thread names"]
    assert line["threads"][str(threading.main_thread().native_id)] == "MainThread"
    assert str(threading.get_native_id()) in os.listdir(f"/proc/{os.getpid()}/task")
