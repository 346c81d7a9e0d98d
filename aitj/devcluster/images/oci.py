"""OCI image layouts written by hand: layers, the image config, the manifest, ``index.json``.

No image tool is needed to make an image: a layer is a gzipped tar, the config and the manifest
are JSON documents naming blobs by their sha256, and an OCI layout is a folder of those blobs
plus ``index.json`` (the image-spec's "image layout"). ``skopeo`` then copies a layout to a
registry. The document builders (``image_config``, ``image_manifest``, ``layout_index``) are pure
and tested by tables; the writers hash and compress while they stream, so a layer of gigabytes
never sits in memory.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
# The ref name a tag is stored under in an OCI layout (what ``oci:<dir>:<tag>`` looks up).
REF_NAME = "org.opencontainers.image.ref.name"
# Images carry no build time: the same inputs give the same digests.
EPOCH = "1970-01-01T00:00:00Z"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Blob:
    """Blob: a content-addressed file of a layout, as a descriptor names it."""

    media_type: str
    digest: str
    size: int

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


@dataclass(frozen=True)
class Layer:
    """Layer: a compressed layer blob and the digest of its uncompressed tar (the config's diff_id)."""

    blob: Blob
    diff_id: str


@dataclass(frozen=True)
class Process:
    """Process: what a container of the image runs, and how (the config's ``config`` part)."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    workdir: str = ""
    user: str = ""
    exposed_ports: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()


def canonical_json(document: Mapping[str, Any]) -> bytes:
    """canonical_json: sorted keys, no spaces: the same document always gives the same digest."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def image_config(diff_ids: Sequence[str], process: Process, *, architecture: str = "amd64") -> dict[str, Any]:
    """image_config: the OCI image config for layers with these diff_ids running ``process``."""
    config: dict[str, Any] = {"Env": list(process.env)}
    if process.entrypoint:
        config["Entrypoint"] = list(process.entrypoint)
    if process.cmd:
        config["Cmd"] = list(process.cmd)
    if process.workdir:
        config["WorkingDir"] = process.workdir
    if process.user:
        config["User"] = process.user
    if process.exposed_ports:
        config["ExposedPorts"] = {p: {} for p in process.exposed_ports}
    if process.labels:
        config["Labels"] = dict(process.labels)
    return {
        "created": EPOCH,
        "architecture": architecture,
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
        "history": [{"created": EPOCH, "created_by": "aitj.devcluster.images"} for _ in diff_ids],
    }


def image_manifest(
    config: Blob, layers: Sequence[Layer], annotations: Mapping[str, str] = {}
) -> dict[str, Any]:
    """image_manifest: the OCI manifest of a config blob and its layers, bottom layer first."""
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": config.descriptor(),
        "layers": [layer.blob.descriptor() for layer in layers],
    }
    if annotations:
        manifest["annotations"] = dict(annotations)
    return manifest


def layout_index(manifest: Blob, tag: str) -> dict[str, Any]:
    """layout_index: an OCI layout's ``index.json`` holding one manifest under ``tag``."""
    return {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{**manifest.descriptor(), "annotations": {REF_NAME: tag}}],
    }


# ---- writing a layout ------------------------------------------------------------------------


def _blob_path(layout: Path, digest: str) -> Path:
    algorithm, hexdigest = digest.split(":", 1)
    return layout / "blobs" / algorithm / hexdigest


def init_layout(layout: Path) -> None:
    """init_layout makes ``layout`` an empty OCI layout folder."""
    (layout / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')


def write_blob(layout: Path, data: bytes, media_type: str) -> Blob:
    digest = sha256_digest(data)
    _blob_path(layout, digest).write_bytes(data)
    return Blob(media_type, digest, len(data))


class _HashingWriter(io.RawIOBase):
    """Counts and hashes the bytes written, then passes them on (to a file, or nowhere)."""

    def __init__(self, sink: io.BufferedIOBase | IO[bytes] | None) -> None:
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha.update(view)
        self.size += len(view)
        if self.sink is not None:
            self.sink.write(view)
        return len(view)


def write_layer(layout: Path, tar_stream: IO[bytes], *, level: int = 6) -> Layer:
    """write_layer gzips the tar read from ``tar_stream`` into a layer blob of ``layout``,
    hashing the tar (diff_id) and the gzip (digest) on the way."""
    tmp = layout / "blobs" / "layer.partial"
    with tmp.open("wb") as out:
        compressed = _HashingWriter(out)
        with gzip.GzipFile(fileobj=compressed, mode="wb", compresslevel=level, mtime=0) as gz:
            plain = _HashingWriter(gz)
            shutil.copyfileobj(tar_stream, plain, _CHUNK)
    blob = Blob(MEDIA_LAYER_GZIP, "sha256:" + compressed.sha.hexdigest(), compressed.size)
    tmp.rename(_blob_path(layout, blob.digest))
    return Layer(blob, "sha256:" + plain.sha.hexdigest())


def write_image(
    layout: Path, layers: Sequence[Layer], process: Process, tag: str, *, architecture: str = "amd64"
) -> Blob:
    """write_image writes the config, the manifest and ``index.json`` for ``layers`` (already
    in ``layout``) and returns the manifest's blob (its digest is the image's digest)."""
    config = write_blob(
        layout,
        canonical_json(image_config([la.diff_id for la in layers], process, architecture=architecture)),
        MEDIA_CONFIG,
    )
    manifest = write_blob(layout, canonical_json(image_manifest(config, layers)), MEDIA_MANIFEST)
    (layout / "index.json").write_bytes(canonical_json(layout_index(manifest, tag)))
    return manifest


# ---- small layers from a list of entries -------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """Entry: one file, folder or symlink of a layer made in memory (paths without a leading /)."""

    path: str
    data: bytes | None = None
    mode: int = 0o644
    symlink: str | None = None

    @property
    def is_dir(self) -> bool:
        return self.data is None and self.symlink is None


def tar_entries(entries: Iterable[Entry]) -> bytes:
    """tar_entries: an uncompressed tar of ``entries`` owned by root with no timestamps, in
    the order given (parents first)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
            info.mode = entry.mode
            if entry.symlink is not None:
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.symlink, 0o777
                tar.addfile(info)
            elif entry.data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(entry.data)
                tar.addfile(info, io.BytesIO(entry.data))
    return buffer.getvalue()


def manifest_of(layout: Path) -> tuple[Blob, dict[str, Any]]:
    """manifest_of reads back the (only) manifest of a layout written by ``write_image``."""
    index = json.loads((layout / "index.json").read_bytes())
    descriptor = index["manifests"][0]
    blob = Blob(descriptor["mediaType"], descriptor["digest"], descriptor["size"])
    return blob, json.loads(_blob_path(layout, blob.digest).read_bytes())


def image_size(layout: Path) -> int:
    """image_size: the bytes of the image's config and compressed layers (what a pull fetches)."""
    _, manifest = manifest_of(layout)
    return int(manifest["config"]["size"]) + sum(int(la["size"]) for la in manifest["layers"])
