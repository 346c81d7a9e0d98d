"""The images the local cluster runs, and what each is built from.

Names the seed manifest uses are kept byte for byte (``registry.baidubce.com/...``); images of
our own are named under ``registry.aitj.local``. The local registry serves both (see
``registry``). Each spec's inputs are hashed into its cache key (``input_key``, pure): the spec
itself, the files copied into the image, and for Debian images the whole mmdebstrap command
(packages, mirrors, hooks). Debian's package versions are not pinned: bookworm is a stable
release, and its point releases change a package only for fixes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aitj.devcluster.images.oci import Process
from aitj.devcluster.images.registry import OWN_HOST

# Bump when the way images are assembled changes in a way the inputs do not show.
FORMAT = 1
FILES_DIR = Path(__file__).parent / "files"

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Spec:
    """Spec: one image: its name here, its ref, how it is built and what it runs.

    ``kind`` is "busybox" (a static busybox alone, made in memory), "debian" (mmdebstrap of
    bookworm with ``packages`` and, for ``files/<name>/build.sh`` only, ``build_packages``) or
    "dockerfile" (this repository's Dockerfile built by buildah on the image named ``base``).
    ``source``: the repository's lock file, pyproject and ``aitj/`` are copied in, with a stub
    README (``builder.README_STUB``: pip wants the one pyproject names, the image no README).
    """

    name: str
    ref: str
    kind: str
    process: Process = field(default_factory=Process)
    packages: tuple[str, ...] = ()
    build_packages: tuple[str, ...] = ()
    source: bool = False
    base: str = ""

    @property
    def files_dir(self) -> Path:
        return FILES_DIR / self.name


PAUSE = Spec(
    name="pause",
    ref=f"{OWN_HOST}/aitj/pause:1",
    kind="busybox",
    # A sandbox holder: sleeps for ever (68 years), and exits at once on SIGTERM or SIGINT as
    # k8s's pause does (a shell as PID 1 would otherwise ignore them). One sleep, no loop: a loop
    # would spin if sleep could not start.
    process=Process(
        entrypoint=("/bin/sh", "-c", "trap 'exit 0' TERM INT; sleep 2147483647 & wait"),
        env=(f"PATH={BASE_PATH}",),
    ),
)
BUSYBOX = Spec(
    name="busybox",
    ref=f"{OWN_HOST}/aitj/busybox:1",
    kind="busybox",
    process=Process(cmd=("sh",), env=(f"PATH={BASE_PATH}",)),
)
HOROVOD = Spec(
    name="horovod",
    ref="registry.baidubce.com/cce-plugin-dev/horovod:master-0.2.0",
    kind="debian",
    process=Process(
        cmd=("/bin/bash",),
        env=(f"PATH=/opt/horovod/bin:{BASE_PATH}", "PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=1"),
        exposed_ports=("22/tcp",),
    ),
    packages=("python3", "python3-torch", "openssh-server", "openssh-client", "bash", "procps"),
    build_packages=("python3-venv", "python3-dev", "libtorch-dev", "pybind11-dev", "g++", "cmake", "make"),
)
# Our training image (docs/training.md): Debian's CPU torch 1.13.1 (gloo, torchrun), OpenMPI 4.1
# with mpi4py, sshd, and /opt/aitj/train.py and torchrun_launcher.py, for the MPI and torchrun
# examples. OpenMPI runs as root without asking, and keeps to what works in a pod: hosts by the
# names given (it would cut `<pod>.<job>` to `<pod>`, which no pod resolves), no tree spawn (a
# trainer would ssh to another), no single-copy shared memory (CMA needs ptrace).
TRAIN = Spec(
    name="train",
    ref=f"{OWN_HOST}/aitj/train:1",
    kind="debian",
    process=Process(
        cmd=("/bin/bash",),
        env=(
            f"PATH={BASE_PATH}",
            "PYTHONUNBUFFERED=1",
            "OMP_NUM_THREADS=1",
            "OMPI_ALLOW_RUN_AS_ROOT=1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
            "OMPI_MCA_orte_keep_fqdn_hostnames=1",
            "OMPI_MCA_plm_rsh_no_tree_spawn=1",
            "OMPI_MCA_btl_vader_single_copy_mechanism=none",
        ),
        exposed_ports=("22/tcp",),
    ),
    packages=(
        "python3",
        "python3-torch",
        "python3-mpi4py",
        "openmpi-bin",
        "openssh-server",
        "openssh-client",
        "bash",
        "procps",
    ),
)
JOBBARRIER = Spec(
    name="jobbarrier",
    ref="registry.baidubce.com/cce-plugin-dev/jobbarrier:v0.9-1",
    kind="debian",
    # The seed gives the barrier's options as args, with no command.
    process=Process(
        entrypoint=("/opt/aitj/bin/aitj", "barrier"),
        env=(f"PATH=/opt/aitj/bin:{BASE_PATH}", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"),
        user="65532:65532",
    ),
    packages=("python3",),
    build_packages=("python3-venv",),
    source=True,
)
# The operator image's PYTHON_IMAGE: Debian's python3.11, with venv and `python` on PATH.
PYTHON = Spec(
    name="python",
    ref=f"{OWN_HOST}/aitj/python:3.11-bookworm",
    kind="debian",
    process=Process(cmd=("python3",), env=(f"PATH={BASE_PATH}", "LANG=C.UTF-8")),
    packages=("python3", "python3-venv", "python-is-python3"),
)
OPERATOR = Spec(name="operator", ref=f"{OWN_HOST}/aitj:dev", kind="dockerfile", source=True, base="python")

SPECS: dict[str, Spec] = {s.name: s for s in (PAUSE, BUSYBOX, HOROVOD, TRAIN, JOBBARRIER, PYTHON, OPERATOR)}
# What `aitj cluster build --real-nodes` wants first: the sandbox image and a small test image.
SMALL = ("pause", "busybox")


def input_key(spec: Spec, files: Mapping[str, bytes], extra: Mapping[str, str] = {}) -> str:
    """input_key: the sha256 (hex) of everything an image is built from: the spec, the files
    copied in (by relative path) and ``extra`` facts (a tool's command, a base's digest)."""
    h = hashlib.sha256()
    h.update(
        json.dumps({"format": FORMAT, "spec": asdict(spec), "extra": dict(extra)}, sort_keys=True).encode()
    )
    for path in sorted(files):
        h.update(f"\0{path}\0{hashlib.sha256(files[path]).hexdigest()}".encode())
    return h.hexdigest()
