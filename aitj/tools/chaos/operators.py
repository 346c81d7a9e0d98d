"""Operator processes for a chaos run: the ones the command starts (``--operators N``), or
one named by a pid file; and the probes of their /metrics endpoints.

``--leader-elect`` is passed through to ``aitj run``; with it, several replicas run and the
kill fault aims at the leader (the one whose ``aitj_leader`` gauge is 1).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

_LEADER = re.compile(rb"^aitj_leader(?:\{[^}]*\})?\s+1(?:\.0)?\s*$", re.MULTILINE)


def answers(url: str, timeout: float = 2.0) -> bytes | None:
    """answers: the body of ``url`` if it answers 200 within ``timeout``, else None."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body: bytes = resp.read()
            return body if resp.status == 200 else None
    except OSError:
        return None


def leads(metrics: bytes | None) -> bool:
    """leads: the metrics page says ``aitj_leader 1``."""
    return metrics is not None and _LEADER.search(metrics) is not None


@dataclass
class Operator:
    """Operator: one ``aitj run`` process the command started; ``starts`` counts its lives."""

    kubeconfig: Path
    port: int
    log_dir: Path
    extra: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def start(self) -> None:
        self.starts += 1
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (self.log_dir / f"chaos-operator-{self.port}.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "aitj",
                    "run",
                    f"--kubeconfig={self.kubeconfig}",
                    f"--metrics-port={self.port}",
                    "--metrics-insecure",  # probed over plain HTTP on 127.0.0.1
                    *self.extra,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def kill(self) -> None:
        """kill: SIGKILL, as a crash: no cleanup."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@dataclass
class Operators:
    """Operators: the local operator processes of a run, and the endpoints probed."""

    started: list[Operator] = field(default_factory=list)
    pid_file: Path | None = None
    urls: tuple[str, ...] = ()  # endpoints of operators the command did not start

    @property
    def endpoints(self) -> list[str]:
        return [o.url for o in self.started] + list(self.urls)

    @property
    def killable(self) -> bool:
        return bool(self.started) or self.pid_file is not None

    def kill_one(self, pick: int) -> str:
        """kill_one: SIGKILL the leader (else the ``pick``-th started process, else the pid
        file's process); says which. A started process is started again by ``restart_dead``."""
        if self.started:
            leaders = [o for o in self.started if leads(answers(o.url))]
            victim = leaders[0] if leaders else self.started[pick % len(self.started)]
            victim.kill()
            return f"operator :{victim.port}" + (" (the leader)" if leaders else "")
        assert self.pid_file is not None
        pid = int(self.pid_file.read_text().strip())
        os.kill(pid, signal.SIGKILL)
        return f"operator pid {pid}"

    def restart_dead(self) -> list[tuple[str, int | None]]:
        """restart_dead starts again every started operator that is not running: killed by a
        fault, or exited on its own (a leader that cannot renew its Lease, as during an
        apiserver restart, exits on purpose), as a Deployment's restartPolicy would. Returns
        the endpoints started again, each with its exit status (None: killed by a fault)."""
        out: list[tuple[str, int | None]] = []
        for o in self.started:
            if o.proc is None or o.proc.poll() is not None:
                out.append((o.url, None if o.proc is None else o.proc.returncode))
                o.start()
        return out

    def exited(self) -> bool:
        """exited: an operator the command started ended without being killed by a fault."""
        return any(o.proc is not None and o.proc.poll() is not None for o in self.started)

    def stop(self) -> None:
        for o in self.started:
            o.stop()
