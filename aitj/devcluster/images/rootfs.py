"""Root filesystems for images: Debian's bookworm made by ``mmdebstrap``, or busybox alone.

A Debian image is one ``mmdebstrap`` run: it installs the image's packages and its build
packages, copies the image's files into ``/tmp/aitj-build``, runs the image's ``build.sh`` there
in a chroot with a clean environment, purges the build packages, runs ``check.sh`` if there is
one, and writes the result as a tar on its stdout, which is filtered (no device nodes: the
runtime makes ``/dev``) and gzipped straight into a layer.

pip inside the new root filesystem cannot reach PyPI through this machine's TLS-intercepting
proxy unless it is given the machine's CA bundle: it is copied in as ``ca.crt`` for the build
and removed with the rest of ``/tmp/aitj-build``. The host's ``resolv.conf`` and hostname,
which mmdebstrap copies in, are emptied: the kubelet mounts a pod's own.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aitj.devcluster.build import BuildError, tail
from aitj.devcluster.images import oci

SUITE = "bookworm"
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
BUILD_DIR = "/tmp/aitj-build"
# What a build script sees: nothing of the build machine's environment but a CA bundle.
_CHROOT_ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "LANG=C.UTF-8",
    "DEBIAN_FRONTEND=noninteractive",
    "PIP_DISABLE_PIP_VERSION_CHECK=1",
)
BUSYBOX = Path("/bin/busybox")


def mmdebstrap_argv(
    packages: Sequence[str], build_packages: Sequence[str], staging: Path, *, has_ca: bool
) -> list[str]:
    """mmdebstrap_argv: the mmdebstrap command that builds a root filesystem with ``packages``,
    runs ``staging``'s build.sh (and check.sh) in it, and writes it as a tar to stdout."""
    env = list(_CHROOT_ENV)
    if has_ca:
        env.append(f"PIP_CERT={BUILD_DIR}/ca.crt")
    chroot = 'chroot "$1" env -i ' + " ".join(shlex.quote(e) for e in env)
    hooks = [
        f'mkdir -p "$1{BUILD_DIR}"',
        f"sync-in {shlex.quote(str(staging))} {BUILD_DIR}",
    ]
    if (staging / "build.sh").exists():
        hooks.append(f"{chroot} sh -x {BUILD_DIR}/build.sh")
    if build_packages:
        keep = " ".join(shlex.quote(p) for p in packages)
        purge = " ".join(shlex.quote(p) for p in build_packages)
        hooks.append(f"{chroot} apt-mark manual {keep} > /dev/null")
        hooks.append(f"{chroot} apt-get purge --yes --quiet --auto-remove {purge}")
    if (staging / "check.sh").exists():
        hooks.append(f"{chroot} sh {BUILD_DIR}/check.sh")
    hooks += [
        f'rm -rf "$1{BUILD_DIR}" "$1/root/.cache" "$1/var/cache/debconf/"*-old "$1/var/lib/dpkg/"*-old',
        ': > "$1/etc/resolv.conf"; echo localhost > "$1/etc/hostname"',
    ]
    return [
        "mmdebstrap",
        "--variant=apt",
        "--mode=root",
        "--format=tar",
        "--skip=cleanup/run",
        "--include=" + ",".join([*packages, *build_packages]),
        # Hooks write to stderr: stdout carries the tar.
        *(f"--customize-hook={h if h.startswith('sync-in') else '{ ' + h + '; } >&2'}" for h in hooks),
        SUITE,
        "-",
        *MIRRORS,
    ]


def debian_layer(
    layout: Path,
    *,
    packages: Sequence[str],
    build_packages: Sequence[str],
    staging: Path,
    log_path: Path,
    say: Callable[[str], None],
    name: str,
) -> oci.Layer:
    """debian_layer builds a bookworm root filesystem (see the module's docstring) and writes
    it into ``layout`` as one gzipped layer; mmdebstrap's output goes to ``log_path``."""
    has_ca = CA_BUNDLE.exists()
    if has_ca:
        shutil.copyfile(CA_BUNDLE, staging / "ca.crt")
    argv = mmdebstrap_argv(packages, build_packages, staging, has_ca=has_ca)
    with log_path.open("w") as log:
        log.write("$ " + shlex.join(argv) + "\n")
        log.flush()
        # The Popen blocks close the pipes and wait for both processes, however the write ends.
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL) as build:
            assert build.stdout is not None
            with subprocess.Popen(
                ["mmtarfilter", "--path-exclude=/dev/*"],
                stdin=build.stdout,
                stdout=subprocess.PIPE,
                stderr=log,
            ) as filtered:
                build.stdout.close()
                assert filtered.stdout is not None
                with _ticker(say, name, log_path):
                    layer = oci.write_layer(layout, filtered.stdout, level=6)
        rcs = build.returncode, filtered.returncode
    if any(rcs):
        raise BuildError(
            f"building the {name} image's root filesystem failed (mmdebstrap exit {rcs[0]}, "
            f"mmtarfilter exit {rcs[1]}). Last lines of {log_path}:\n{tail(log_path, 40)}"
        )
    return layer


class _ticker:
    """A line every 30 s while a long build runs: elapsed time and the log's last line."""

    def __init__(self, say: Callable[[str], None], name: str, log_path: Path) -> None:
        self.say, self.name, self.log_path = say, name, log_path
        self.done = threading.Event()
        self.started = time.monotonic()

    def _run(self) -> None:
        while not self.done.wait(30):
            last = tail(self.log_path, 1).strip()[:100]
            self.say(f"  {self.name}: {time.monotonic() - self.started:.0f}s; {last}")

    def __enter__(self) -> _ticker:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()


def busybox_entries(busybox: bytes, applets: Sequence[str]) -> list[oci.Entry]:
    """busybox_entries: a root filesystem of one static busybox, its applets as symlinks in
    /bin, root and nobody in /etc/passwd, and the folders a container expects."""
    dirs = [oci.Entry(d, mode=0o755) for d in ("bin", "dev", "etc", "proc", "root", "sys", "var", "run")]
    files = [
        oci.Entry("tmp", mode=0o1777),
        oci.Entry("bin/busybox", busybox, mode=0o755),
        oci.Entry("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"),
        oci.Entry("etc/group", b"root:x:0:\nnogroup:x:65534:\n"),
    ]
    links = [oci.Entry(f"bin/{a}", symlink="busybox") for a in sorted(set(applets)) if a and "/" not in a]
    return [*dirs, *files, *(link for link in links if link.path != "bin/busybox")]


def busybox_applets(busybox: Path = BUSYBOX) -> list[str]:
    """busybox_applets: the applets the busybox binary at ``busybox`` offers."""
    proc = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"`{busybox} --list` failed: {proc.stderr.strip()}")
    return proc.stdout.split()
