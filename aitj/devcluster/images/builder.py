"""Building images into the cache, once per set of inputs.

An image is built into ``<cache>/images/<name>/<key>.partial`` and renamed to
``<cache>/images/<name>/<key>`` when its OCI layout is complete (as the control plane's binaries
are), so an interrupted build never looks finished; the key is the hash of its inputs
(``specs.input_key``), so a rebuild happens only when they change. When a new build of an image
completes, its older builds are removed but the newest one (``stale``; the Horovod image is
large): two checkouts of different source (a branch, a worktree) then each keep theirs instead
of rebuilding the barrier and operator images the other's build removed.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import aitj
from aitj.devcluster import debs
from aitj.devcluster.build import BuildError
from aitj.devcluster.images import dockerfile, oci, rootfs
from aitj.devcluster.images.registry import split_ref
from aitj.devcluster.images.specs import SPECS, Spec, input_key
from aitj.devcluster.versions import cache_dir

RECORD = "built.json"
PACKAGES = ("mmdebstrap", "busybox-static", "skopeo")
# The repository files the operator and barrier images install (the Dockerfile's COPY lines).
SOURCE_FILES = ("requirements.lock", "pyproject.toml", "Dockerfile")
# The README the images get instead of the repository's. pyproject.toml names README.md as the
# package's readme, so pip needs one to install aitj; nothing reads it in the image (it is only
# the installed package's long description), and with the real one in the image key every
# edit of the documentation rebuilt the barrier and operator images (45 to 70 s each in
# `make test`). `make image` (docker build) still copies the repository's own.
README_STUB = b"aitj, installed by `aitj cluster build`; its documentation is the repository's README.md.\n"


@dataclass(frozen=True)
class Built:
    """Built: an image in the cache: its ref, OCI layout, manifest digest and size (the bytes a
    pull fetches: config and compressed layers), the key of its inputs, and how long it took."""

    name: str
    ref: str
    layout: Path
    digest: str
    size: int
    key: str
    seconds: float

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "layout": str(self.layout)}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Built:
        data = json.loads(text)
        return cls(**{**data, "layout": Path(data["layout"])})


def images_dir() -> Path:
    return cache_dir() / "images"


def repo_root() -> Path:
    """repo_root: the checkout aitj runs from (images that install aitj need its source)."""
    root = Path(aitj.__file__).resolve().parent.parent
    if not (root / "pyproject.toml").exists():
        raise BuildError(
            f"aitj is not installed from a checkout ({root} has no pyproject.toml): "
            "build the images from a clone of the repository"
        )
    return root


def source_files(root: Path) -> dict[str, bytes]:
    """source_files: what an image that installs aitj copies in, by path under ``src/``: the
    README is ``README_STUB``, whatever the repository's says."""
    files = {name: (root / name).read_bytes() for name in SOURCE_FILES}
    files["README.md"] = README_STUB
    for path in sorted((root / "aitj").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


def inputs(spec: Spec, built: Mapping[str, Built]) -> tuple[dict[str, bytes], dict[str, str]]:
    """inputs: the files an image is built from (by path in its build folder) and the other facts
    its key covers."""
    files: dict[str, bytes] = {}
    extra: dict[str, str] = {}
    if spec.files_dir.is_dir():
        for path in sorted(spec.files_dir.iterdir()):
            if path.is_file() and path.suffix != ".pyc":  # not a __pycache__ a run of a script left
                files[path.name] = path.read_bytes()
    if spec.source:
        files.update({f"src/{p}": data for p, data in source_files(repo_root()).items()})
    if spec.kind == "busybox":
        files["busybox"] = rootfs.BUSYBOX.read_bytes()
    elif spec.kind == "debian":
        argv = rootfs.mmdebstrap_argv(spec.packages, spec.build_packages, Path("/staging"), has_ca=True)
        extra["mmdebstrap"] = json.dumps(argv)
    elif spec.kind == "dockerfile":
        extra["base"] = built[spec.base].digest
    return files, extra


def cached(name: str, key: str) -> Built | None:
    """cached: the finished build of image ``name`` with inputs ``key``, if there is one."""
    record = images_dir() / name / key[:20] / RECORD
    try:
        return Built.from_json(record.read_text())
    except (FileNotFoundError, ValueError, TypeError, KeyError):
        return None


def ensure_images(names: Iterable[str], say: Callable[[str], None]) -> dict[str, Built]:
    """ensure_images builds whichever of the images ``names`` (keys of ``specs.SPECS``; the
    images they are built on come along) are not cached with their current inputs, and returns
    every one of them (each rebuild is said, with its time)."""
    wanted = _with_bases(names)
    debs.ensure(PACKAGES, say=say)
    done: dict[str, Built] = {}
    for name in wanted:
        spec = SPECS[name]
        files, extra = inputs(spec, done)
        key = input_key(spec, files, extra)
        found = cached(name, key)
        done[name] = found if found is not None else _build(spec, key, files, done, say)
    return done


def _with_bases(names: Iterable[str]) -> list[str]:
    order: list[str] = []
    for name in names:
        if name not in SPECS:
            raise BuildError(f"no image named {name!r} (images: {', '.join(SPECS)})")
        base = SPECS[name].base
        if base and base not in order:
            order.append(base)
        if name not in order:
            order.append(name)
    return order


def stale(folder: Path, new: Path) -> list[Path]:
    """stale: the builds in an image's ``folder`` to remove once ``new`` (its folder, not yet
    renamed) completes: every unfinished one but ``new``, and every finished one but the newest."""
    others = [p for p in folder.iterdir() if p != new]
    finished = sorted((p for p in others if not p.name.endswith(".partial")), key=lambda p: p.stat().st_mtime)
    return [p for p in others if p.name.endswith(".partial")] + finished[:-1]


def _build(
    spec: Spec, key: str, files: Mapping[str, bytes], done: Mapping[str, Built], say: Callable[[str], None]
) -> Built:
    final = images_dir() / spec.name / key[:20]
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    layout = partial / "layout"
    oci.init_layout(layout)
    log_path = partial / "build.log"
    say(f"building image {spec.name} ({spec.ref}); log: {log_path}")
    started = time.monotonic()
    tag = split_ref(spec.ref)[2]
    with tempfile.TemporaryDirectory(prefix=f"aitj-image-{spec.name}-") as tmp:
        staging = Path(tmp)
        for path, data in files.items():
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            (staging / path).write_bytes(data)
        if spec.kind == "busybox":
            tar = oci.tar_entries(rootfs.busybox_entries(files["busybox"], rootfs.busybox_applets()))
            layers = [oci.write_layer(layout, io.BytesIO(tar))]
            oci.write_image(layout, layers, spec.process, tag)
        elif spec.kind == "debian":
            (staging / "busybox").unlink(missing_ok=True)
            layer = rootfs.debian_layer(
                layout,
                packages=spec.packages,
                build_packages=spec.build_packages,
                staging=staging,
                log_path=log_path,
                say=say,
                name=spec.name,
            )
            oci.write_image(layout, [layer], spec.process, tag)
        else:
            dockerfile.build(staging / "src", done[spec.base].layout, layout, tag, log_path=log_path, say=say)
    digest = oci.manifest_of(layout)[0].digest
    built = Built(
        spec.name,
        spec.ref,
        final / "layout",
        digest,
        oci.image_size(layout),
        key,
        round(time.monotonic() - started, 1),
    )
    (partial / RECORD).write_text(built.to_json())
    for old in stale(final.parent, partial):
        shutil.rmtree(old, ignore_errors=True)
    partial.rename(final)
    say(f"built image {spec.name} in {built.seconds:.0f}s: {built.size / 1e6:.1f} MB, {digest[:19]}")
    return built
