"""The operator image: this repository's Dockerfile, built by buildah (no Docker engine here).

buildah (Debian's package) builds the Dockerfile as it is, with ``--build-arg PYTHON_IMAGE``
naming the ``python`` image (made with mmdebstrap; no registry is asked for a base), the vfs
storage driver and chroot isolation (no overlay mounts, no container runtime, no user
namespaces), its storage under ``<cache>/buildah``. The base is copied into buildah's storage
first (skopeo), so ``FROM`` pulls nothing. The Dockerfile's ``RUN pip install`` steps reach
PyPI through this machine's proxy only with its CA bundle: it is mounted for the build alone,
with a pip.conf naming it (``--volume``: a volume is part of no layer, and only the build
stage sees it). The result is pushed from buildah's storage into an OCI layout, and buildah's
copies are removed (vfs keeps a full copy of every layer).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

from aitj.devcluster import debs
from aitj.devcluster.build import BuildError, tail
from aitj.devcluster.images.oci import REF_NAME
from aitj.devcluster.images.registry import OWN_HOST
from aitj.devcluster.images.rootfs import CA_BUNDLE
from aitj.devcluster.versions import cache_dir

PACKAGES = ("buildah", "skopeo")
# Where the build stage finds the CA bundle and the pip.conf that names it (build time only).
BUILD_CA = "/etc/aitj-build-ca.crt"
# The name buildah's storage holds the result under while it is pushed out.
LOCAL_NAME = "localhost/aitj-devcluster-build:latest"


def _storage() -> tuple[Path, Path]:
    root = cache_dir() / "buildah"
    return root / "storage", root / "run"


def buildah_argv(*args: str) -> list[str]:
    """buildah_argv: buildah with the vfs driver and its storage in the cache."""
    storage, run = _storage()
    return ["buildah", "--storage-driver=vfs", f"--root={storage}", f"--runroot={run}", *args]


def into_storage_argv(layout: Path, tag: str, name: str) -> list[str]:
    """into_storage_argv: skopeo copying an OCI layout into buildah's storage as ``name``.

    ``FROM oci:<dir>:<tag>`` is no way round: buildah names such an image after its path, and a
    path part that starts with a dot, as ``.cache`` does, makes an invalid image name."""
    storage, run = _storage()
    return [
        "skopeo",
        "copy",
        "--quiet",
        f"oci:{layout}:{tag}",
        f"containers-storage:[vfs@{storage}+{run}]{name}",
    ]


def bud_argv(context: Path, base: str, pip_conf: Path | None) -> list[str]:
    """bud_argv: ``buildah bud`` of ``context``'s Dockerfile on the base image ``base``."""
    volumes: list[str] = []
    if pip_conf is not None:
        volumes = [f"--volume={CA_BUNDLE}:{BUILD_CA}:ro", f"--volume={pip_conf}:/etc/pip.conf:ro"]
    return buildah_argv(
        "bud",
        "--isolation=chroot",
        "--layers=false",
        "--pull=never",
        "--format=oci",
        f"--build-arg=PYTHON_IMAGE={base}",
        *volumes,
        f"--file={context / 'Dockerfile'}",
        f"--tag={LOCAL_NAME}",
        str(context),
    )


def build(
    context: Path, base_layout: Path, layout: Path, tag: str, *, log_path: Path, say: Callable[[str], None]
) -> None:
    """build runs the Dockerfile in ``context`` on the image in ``base_layout`` and writes the
    result into the OCI layout ``layout`` under ``tag``."""
    debs.ensure(PACKAGES, say=say)
    base_tag, base_digest = _tag_of(base_layout), _digest_of(base_layout)
    base = f"{OWN_HOST}/aitj/build-base:{base_tag}"
    pip_conf: Path | None = None
    if CA_BUNDLE.exists():
        pip_conf = context.parent / "pip.conf"
        pip_conf.write_text(f"[global]\ncert = {BUILD_CA}\n")
    # buildah writes the layout itself: start from an empty folder.
    for path in sorted(layout.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    steps = [
        into_storage_argv(base_layout, base_tag, base),
        # FROM the base by digest, not by its tag: the Dockerfile builds on exactly the bytes
        # made here (the Dockerfile's own default base can only be a tag where no registry is
        # reachable to look its digest up).
        bud_argv(context, f"{base}@{base_digest}", pip_conf),
        buildah_argv("push", "--quiet", LOCAL_NAME, f"oci:{layout}:{tag}"),
    ]
    try:
        with log_path.open("w") as log:
            for argv in steps:
                log.write("$ " + shlex.join(argv) + "\n")
                log.flush()
                rc = subprocess.run(
                    argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                ).returncode
                if rc != 0:
                    raise BuildError(
                        f"building the operator image failed: `{shlex.join(argv[:5])} ...` exit {rc}. "
                        f"Last lines of {log_path}:\n{tail(log_path, 30)}"
                    )
    finally:
        subprocess.run(buildah_argv("rmi", "--all", "--force"), capture_output=True, check=False)


def _tag_of(layout: Path) -> str:
    index = json.loads((layout / "index.json").read_text())
    return str(index["manifests"][0]["annotations"][REF_NAME])


def _digest_of(layout: Path) -> str:
    """_digest_of: the manifest digest of the layout's one image (sha256:...)."""
    index = json.loads((layout / "index.json").read_text())
    return str(index["manifests"][0]["digest"])
