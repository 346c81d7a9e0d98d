"""The operator as a real process for end-to-end tests: started, killed (SIGKILL) and
restarted like a crashing pod would be."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path


class OperatorProcess:
    def __init__(
        self,
        kubeconfig: Path,
        log_dir: Path,
        metrics_port: int = 0,
        args: Sequence[str] = (),
        *,
        secure_metrics: bool = False,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.metrics_port = metrics_port
        self.args = list(args)  # more ``aitj run`` options (--namespace, --leader-elect, ...)
        # The tests read /metrics over plain HTTP on 127.0.0.1, but the one of metrics auth.
        self.secure_metrics = secure_metrics
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"operator-{self.starts}.log"

    def start(self) -> None:
        assert self.proc is None, "already running"
        self.starts += 1
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "aitj",
                    "run",
                    f"--kubeconfig={self.kubeconfig}",
                    f"--metrics-port={self.metrics_port}",
                    "--metrics-secure" if self.secure_metrics else "--metrics-insecure",
                    *self.args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def metrics(self) -> str:
        """metrics is the operator's /metrics page (Prometheus text)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def kill(self) -> None:
        """kill ends the operator with SIGKILL: no cleanup, as a crash."""
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

    def restart(self) -> None:
        self.kill()
        self.start()

    def logs(self) -> str:
        return "".join(
            (self.log_dir / f"operator-{i}.log").read_text(errors="replace")
            for i in range(1, self.starts + 1)
            if (self.log_dir / f"operator-{i}.log").exists()
        )

    def assert_alive(self) -> None:
        assert self.proc is not None and self.proc.poll() is None, (
            f"the operator died:\n{self.logs()[-3000:]}"
        )
