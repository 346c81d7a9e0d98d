"""Building the control plane from source with ``go``.

Each component is built once per version into the cache (see ``versions``); a build that is
already complete is skipped. A build writes into a temporary folder and renames it when every
command is there, so an interrupted build never looks complete. Progress is shown while the
long first build runs (a cold Kubernetes build takes several minutes on two cores).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from aitj.devcluster import debs
from aitj.devcluster.errors import BuildError as BuildError  # re-exported: importers know it from here
from aitj.devcluster.versions import COMPONENTS, MIN_GO, Component, cache_dir

STAMP = ".complete"


def go_version(go: str = "go") -> tuple[int, int]:
    """go_version returns (major, minor) of the go on PATH, or raises BuildError saying what to install."""
    path = shutil.which(go)
    if path is None:
        raise BuildError(
            "Go is not installed or not on PATH. The local control plane is built from source and "
            f"needs Go {MIN_GO[0]}.{MIN_GO[1]} or newer: install it (for example from your "
            "distribution or the official tarball) and make sure `go version` works."
        )
    out = subprocess.run([path, "version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"go(\d+)\.(\d+)", out)
    if not m:
        raise BuildError(f"could not read the Go version from `go version`: {out.strip()!r}")
    found = (int(m.group(1)), int(m.group(2)))
    if found < MIN_GO:
        raise BuildError(
            f"Go {found[0]}.{found[1]} is too old: Kubernetes and kwok need Go "
            f"{MIN_GO[0]}.{MIN_GO[1]} or newer."
        )
    return found


def is_built(component: Component) -> bool:
    return (component.bin_dir / STAMP).exists() and all(
        component.binary(c).exists() for c in component.commands
    )


def ensure_built(
    components: Iterable[Component] = COMPONENTS, *, say: Callable[[str], None] | None = None
) -> float:
    """ensure_built builds whatever is missing and returns the seconds it took (0 if nothing was)."""
    say = say or _say
    todo = [c for c in components if not is_built(c)]
    if not todo:
        return 0.0
    go_version()
    started = time.monotonic()
    for component in todo:
        build(component, say=say)
    took = time.monotonic() - started
    say(f"built {', '.join(c.name for c in todo)} in {took:.0f}s (cached in {cache_dir() / 'bin'})")
    return took


def build(component: Component, *, say: Callable[[str], None]) -> None:
    """build compiles one component into its versioned cache folder."""
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"build-{component.name}-{component.version}.log"
    tmp = component.bin_dir.with_name(component.bin_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # One package whose output is named otherwise (a main package at a module's root): -o names
    # the file; several: -o names the folder and each binary is named after its package.
    one_named = len(component.packages) == 1 and bool(component.outputs)
    target = str(tmp / component.commands[0]) if one_named else str(tmp) + os.sep
    ldflags = " ".join(("-s", "-w", *component.ldflags))
    tags = ["-tags", ",".join(component.tags)] if component.tags else []
    cmd = ["go", "build", "-v", "-trimpath", *tags, "-ldflags", ldflags, "-o", target, *component.packages]
    env = {**os.environ, "CGO_ENABLED": "1" if component.cgo else "0"}
    debs.ensure(component.build_debs, say=say)
    say(f"building {component.name} {component.version} ({', '.join(component.commands)}); log: {log_path}")
    started = time.monotonic()
    rc = _run_with_progress(cmd, component.module_dir, env, log_path, component.name, say)
    if rc != 0:
        raise BuildError(
            f"building {component.name} {component.version} failed (exit {rc}). "
            f"Last lines of {log_path}:\n{tail(log_path, 30)}"
        )
    (tmp / STAMP).write_text(f"{component.version}\n")
    shutil.rmtree(component.bin_dir, ignore_errors=True)
    tmp.rename(component.bin_dir)
    say(f"built {component.name} {component.version} in {time.monotonic() - started:.0f}s")


def _run_with_progress(
    cmd: list[str], cwd: Path, env: dict[str, str], log_path: Path, name: str, say: Callable[[str], None]
) -> int:
    """Runs cmd, writing its output to log_path and a progress line every 20 s."""
    compiled = 0
    done = threading.Event()
    started = time.monotonic()

    def ticker() -> None:
        while not done.wait(20):
            say(f"  {name}: {compiled} packages compiled, {time.monotonic() - started:.0f}s")

    with log_path.open("w") as log:
        log.write("$ " + " ".join(cmd) + f"\n(in {cwd})\n")
        log.flush()
        thread = threading.Thread(target=ticker, daemon=True)
        thread.start()
        with subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                compiled += 1
            rc = proc.wait()
        done.set()
    return rc


def tail(path: Path, lines: int) -> str:
    """tail: the last ``lines`` lines of the log at ``path`` ("(no log)" if there is none)."""
    try:
        with path.open() as f:
            return "".join(deque(f, maxlen=lines))
    except FileNotFoundError:
        return "(no log)"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
