"""Debian packages the local cluster's real nodes and images need, installed on demand.

Real nodes and the images they run need a few programs no Go module provides: iptables and
conntrack for kube-proxy, the CNI plugins, mmdebstrap for root filesystems, skopeo to push
images, the registry, and libseccomp's headers to build runc. A fresh machine has none of
them, so the project installs them itself, with ``apt-get``, the first time they are needed
(``aitj cluster build --real-nodes`` and ``aitj cluster up --real-nodes``). This needs root
and Debian's package archive; the error says so where either is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable

from aitj.devcluster.errors import BuildError


def installed(package: str) -> bool:
    """installed: whether dpkg has ``package`` installed (not merely known or removed)."""
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return proc.returncode == 0 and proc.stdout.strip().endswith(" installed")


def ensure(packages: Iterable[str], *, say: Callable[[str], None]) -> list[str]:
    """ensure installs whichever of ``packages`` are missing and returns their names (none
    missing: nothing is run). ``apt-get update`` runs once first, as a fresh machine's
    package lists may be empty or old."""
    missing = [p for p in dict.fromkeys(packages) if not installed(p)]
    if not missing:
        return []
    if shutil.which("apt-get") is None:
        raise BuildError(
            f"real nodes need the Debian packages {', '.join(missing)}, and this machine has no "
            "apt-get: install them with your distribution's package manager."
        )
    if os.geteuid() != 0:
        raise BuildError(
            f"real nodes need the Debian packages {', '.join(missing)}: run as root, or install "
            f"them first: apt-get install {' '.join(missing)}"
        )
    say(f"installing Debian packages: {', '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise BuildError(f"`{' '.join(argv)}` failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return missing
