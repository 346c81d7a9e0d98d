"""The images real nodes run, and the local registry that serves them.

The images are built on this machine (``aitj.devcluster.images``) and pushed to the local
registry, which keeps its storage in the cache, so a new cluster pushes only what changed;
every node's containerd is told, per registry host, to pull from it instead
(``certs.d/<host>/hosts.toml``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aitj.devcluster import images as images_mod
from aitj.devcluster.versions import cache_dir

# What `aitj cluster up --real-nodes` makes sure of: the sandbox image, a small image for
# tests, the seed's two images and our training image (the operator's own is built by
# `aitj cluster build`).
NODE_IMAGES = ("pause", "busybox", "horovod", "jobbarrier", "train")


@dataclass(frozen=True)
class NodeImages:
    """NodeImages: the images to serve, and the sandbox image's ref."""

    names: tuple[str, ...]
    sandbox: str = images_mod.PAUSE_REF

    @property
    def hosts(self) -> list[str]:
        """hosts: the registry hosts whose pulls go to the local registry."""
        return list(images_mod.MIRRORED_HOSTS)

    def registry(self, port: int) -> images_mod.Registry:
        return images_mod.Registry(cache_dir() / "registry", port)

    def serve(self, port: int, *, say: Callable[[str], None]) -> str:
        """serve starts the registry on ``port`` and pushes what it does not serve yet;
        returns its address."""
        registry = self.registry(port)
        images_mod.build_and_push(registry, self.names, say)
        return registry.address

    def hosts_toml(self, address: str) -> str:
        return images_mod.hosts_toml(address)


def node_images(*, say: Callable[[str], None]) -> NodeImages:
    """node_images builds whatever image real nodes need and is not built yet."""
    images_mod.ensure_images(NODE_IMAGES, say)
    return NodeImages(NODE_IMAGES)
