"""Running the ``aitj`` command line as a user does, against a test cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def aitj(kubeconfig: Path | None, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """aitj runs ``python -m aitj ARGS`` (with ``--kubeconfig`` when given) and captures it."""
    extra = [f"--kubeconfig={kubeconfig}"] if kubeconfig is not None else []
    return subprocess.run(
        [sys.executable, "-m", "aitj", *args, *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """one_error_line: the command failed with exactly one line on stderr; that line."""
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]
