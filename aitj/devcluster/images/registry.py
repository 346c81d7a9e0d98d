"""The local image registry: Debian's ``docker-registry`` on 127.0.0.1, and pushes with skopeo.

Nothing outside this machine serves images, so real nodes pull from this registry. containerd
finds it through per-host mirror files (``certs.d/<host>/hosts.toml``, see ``hosts_toml``): an
image named ``registry.baidubce.com/cce-plugin-dev/horovod:master-0.2.0`` (the seed manifest's
name, kept byte for byte) is stored here as ``cce-plugin-dev/horovod:master-0.2.0``, and a
mirror for host ``registry.baidubce.com`` resolves it. Images of our own live under the host
``registry.aitj.local`` (no such host exists anywhere else) and are mirrored the same way.

The registry runs as a background process in its own session, with its config, log and pid
beside its storage, so any later process can find, reuse or stop it.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from aitj.devcluster import debs
from aitj.devcluster.build import BuildError, tail

# Where our own images are named. ".local" is reserved for link-local names: no real registry.
OWN_HOST = "registry.aitj.local"
# The hosts whose images the local registry serves (the seed's, and ours).
MIRRORED_HOSTS = ("registry.baidubce.com", OWN_HOST)
DEFAULT_PORT = 15000
PACKAGES = ("docker-registry", "skopeo")
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def split_ref(ref: str) -> tuple[str, str, str]:
    """split_ref: (host, repository path, tag) of a fully named ``host/path:tag`` image ref."""
    host, sep, rest = ref.partition("/")
    if not sep or ("." not in host and ":" not in host and host != "localhost"):
        raise ValueError(f"image ref {ref!r} must start with a registry host (e.g. {OWN_HOST}/name:tag)")
    path, sep, tag = rest.rpartition(":")
    if not sep or "/" in tag or "@" in rest:
        raise ValueError(f"image ref {ref!r} must end with :tag (digests are not supported here)")
    return host, path, tag


def mirrored_ref(ref: str, address: str) -> str:
    """mirrored_ref: where ``ref`` is stored in the local registry at ``address``: the same
    repository path and tag, on the local registry's address (the host part dropped)."""
    host, path, tag = split_ref(ref)
    if host not in MIRRORED_HOSTS:
        raise ValueError(
            f"image ref {ref!r}: host {host} is not mirrored (mirrored: {', '.join(MIRRORED_HOSTS)})"
        )
    return f"{address}/{path}:{tag}"


def hosts_toml(address: str) -> str:
    """hosts_toml: containerd's ``certs.d/<host>/hosts.toml`` that sends pulls for a mirrored
    host to the local registry at ``address`` (plain HTTP on loopback)."""
    return (
        f'server = "http://{address}"\n\n'
        f'[host."http://{address}"]\n'
        '  capabilities = ["pull", "resolve"]\n'
        "  skip_verify = true\n"
    )


def config_yaml(storage: Path, port: int) -> str:
    """config_yaml: the registry's configuration: loopback only, no auth, deletes allowed."""
    return (
        "version: 0.1\n"
        "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )


class Registry:
    """Registry: one local registry, storing under ``storage_dir`` and listening on 127.0.0.1:``port``."""

    def __init__(self, storage_dir: Path, port: int = DEFAULT_PORT) -> None:
        self.dir = Path(storage_dir)
        self.port = port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.dir / "registry.log"

    @property
    def _pidfile(self) -> Path:
        return self.dir / "registry.pid"

    @property
    def _config(self) -> Path:
        return self.dir / "config.yml"

    def pid(self) -> int | None:
        """pid: the registry's process id if it runs, else None."""
        try:
            pid = int(self._pidfile.read_text())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            return None
        return pid

    def ready(self) -> bool:
        """ready: whether the registry answers its API's base endpoint."""
        try:
            with urllib.request.urlopen(f"http://{self.address}/v2/", timeout=2) as resp:
                return int(resp.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def start(self, *, say: Callable[[str], None] = print, timeout: float = 20) -> None:
        """start runs the registry unless it already runs, and waits until it answers."""
        debs.ensure(PACKAGES, say=say)
        if self.pid() is not None and self.ready():
            return
        if self.ready():
            raise BuildError(f"port {self.port} on 127.0.0.1 already answers as a registry not started here")
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        self._config.write_text(config_yaml(self.dir / "data", self.port))
        with self.log.open("a") as log:
            proc = subprocess.Popen(
                ["/usr/bin/docker-registry", "serve", str(self._config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.dir,
            )
        _CHILDREN[proc.pid] = proc
        self._pidfile.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while not self.ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BuildError(
                    f"the registry did not start on {self.address}. Last lines of {self.log}:\n"
                    f"{tail(self.log, 20)}"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 10) -> None:
        """stop ends the registry (SIGTERM, then SIGKILL after ``timeout``); its storage stays."""
        pid = self.pid()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGTERM)
                deadline = time.monotonic() + timeout
                while _alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if _alive(pid):
                    os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child = _CHILDREN.pop(pid, None)
            if child is not None:
                child.wait()
        self._pidfile.unlink(missing_ok=True)

    def push(self, layout: Path, ref: str) -> str:
        """push copies the image in the OCI layout ``layout`` (tagged with ``ref``'s tag) to this
        registry under ``ref``'s path and tag, and returns the digest the registry serves."""
        _, _, tag = split_ref(ref)
        dest = mirrored_ref(ref, self.address)
        run(
            [
                "skopeo",
                "copy",
                "--quiet",
                "--dest-tls-verify=false",
                f"oci:{layout}:{tag}",
                f"docker://{dest}",
            ]
        )
        return self.digest(ref)

    def digest(self, ref: str) -> str:
        """digest: the sha256 of the manifest the registry serves for ``ref`` (raises if none)."""
        raw = run(
            [
                "skopeo",
                "inspect",
                "--raw",
                "--tls-verify=false",
                f"docker://{mirrored_ref(ref, self.address)}",
            ]
        )
        return "sha256:" + hashlib.sha256(raw).hexdigest()


def run(argv: list[str]) -> bytes:
    """run: a command's stdout, or BuildError with its stderr."""
    proc = subprocess.run(argv, capture_output=True, check=False)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")[-3000:]
        raise BuildError(f"`{' '.join(argv)}` failed (exit {proc.returncode}):\n{err}")
    return proc.stdout


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except (FileNotFoundError, IndexError):
        return False
