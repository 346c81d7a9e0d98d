"""Images for the local cluster's real nodes, built without any outside image registry.

Layer: ``aitj.devcluster`` (may import ``aitj.core`` and the standard library; nothing here
imports the CLI). What is built, and from what (docs/images.md has the sizes and times):

- ``pause`` (``registry.aitj.local/aitj/pause:1``): containerd's sandbox image, a static
  busybox whose shell sleeps for ever;
- ``busybox`` (``registry.aitj.local/aitj/busybox:1``): sh, sleep, nc, nslookup, wget...;
- ``horovod`` (the seed's ``registry.baidubce.com/cce-plugin-dev/horovod:master-0.2.0``):
  bookworm, Debian's CPU torch 1.13.1, Horovod 0.28.1 from PyPI with gloo, sshd, and our
  elastic training script at the seed's path;
- ``train`` (``registry.aitj.local/aitj/train:1``): bookworm, Debian's CPU torch 1.13.1,
  OpenMPI with mpi4py, sshd, and our training script and torchrun launcher (docs/training.md);
- ``jobbarrier`` (the seed's ``registry.baidubce.com/cce-plugin-dev/jobbarrier:v0.9-1``):
  aitj from this checkout, running ``aitj barrier``;
- ``python`` (``registry.aitj.local/aitj/python:3.11-bookworm``): the operator image's base;
- ``operator`` (``registry.aitj.local/aitj:dev``): the repository's Dockerfile, by buildah.

The API: ``ensure_images(names, say) -> dict[str, Built]`` builds what is missing into the
cache; ``Registry(storage_dir, port)`` runs the local registry (``start``, ``stop``, ``push``,
``address``); ``build_and_push(registry, names, say)`` does both, for ``aitj cluster build``;
``hosts_toml(address)`` is the containerd mirror file for each of ``MIRRORED_HOSTS``;
``PAUSE_REF`` is the image containerd pins as its sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aitj.devcluster.images.builder import Built, ensure_images
from aitj.devcluster.images.registry import MIRRORED_HOSTS, OWN_HOST, Registry, hosts_toml, mirrored_ref
from aitj.devcluster.images.specs import PAUSE, SMALL, SPECS

PAUSE_REF = PAUSE.ref

__all__ = [
    "MIRRORED_HOSTS",
    "OWN_HOST",
    "PAUSE_REF",
    "SMALL",
    "SPECS",
    "Built",
    "Registry",
    "build_and_push",
    "ensure_images",
    "hosts_toml",
    "mirrored_ref",
]


def build_and_push(
    registry: Registry, names: Iterable[str] = SMALL, say: Callable[[str], None] = print
) -> dict[str, Built]:
    """build_and_push builds the images ``names`` (see ``ensure_images``), starts ``registry``
    if it does not run, and pushes each image whose digest the registry does not serve yet."""
    built = ensure_images(names, say)
    registry.start(say=say)
    for image in built.values():
        if _served(registry, image):
            continue
        served = registry.push(image.layout, image.ref)
        if served != image.digest:
            say(f"note: the registry serves {image.ref} as {served}, built as {image.digest}")
        say(f"pushed {image.ref} to {registry.address}")
    return built


def _served(registry: Registry, image: Built) -> bool:
    try:
        return registry.digest(image.ref) == image.digest
    except Exception:
        return False
