#!/usr/bin/env python3
"""Write a release's install artifacts: ``make release VERSION=x.y.z`` runs it.

Usage:
    .venv/bin/python hack/release.py --version 0.2.0 [--image-repo REGISTRY/aitj] [--out dist]

Into ``<out>/<version>/`` (dist/ is git-ignored):
- ``manifests.yaml``: the cluster-wide install (``kubectl kustomize manifests/cluster-wide``:
  the CRD, the namespace, RBAC, the Deployment, the Service, the admission policy, the
  aggregated roles) with the image pinned by tag, ``<image-repo>:<version>``, for
  ``kubectl apply --server-side -f manifests.yaml``;
- ``aitj-<version>.tgz``: ``helm package`` of charts/aitj with that version and appVersion (so
  the same image by default) and ``image.repository`` set to ``<image-repo>``.

The image itself is built and pushed apart (``make image``, or the local cluster's registry,
docs/real-nodes.md): the artifacts name it. Helm and kubectl are the ones ``make build-cluster``
builds into ~/.cache/aitj.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aitj.devcluster.versions import helm_binary, kubectl_binary  # noqa: E402

# SemVer 2.0's version core and optional pre-release (what `helm package --version` accepts,
# without build metadata, which an image tag cannot hold: "+" is not allowed there).
VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?")
IMAGE_REPO = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*")


class ReleaseError(Exception):
    """ReleaseError: what is wrong, in one line a user can act on."""


def check_version(version: str) -> str:
    """check_version returns ``version`` if it is x.y.z (with an optional -pre-release), else raises."""
    if not version:
        raise ReleaseError("VERSION is missing: make release VERSION=x.y.z (for example VERSION=0.2.0)")
    if not VERSION.fullmatch(version):
        raise ReleaseError(
            f"VERSION {version!r} is not x.y.z: give a semantic version such as 0.2.0 or 1.0.0-rc.1 "
            "(no leading v, no build metadata)"
        )
    return version


def check_image_repo(repo: str) -> str:
    """check_image_repo returns ``repo`` if it is an image name without tag or digest, else raises."""
    if not IMAGE_REPO.fullmatch(repo):
        raise ReleaseError(
            f"IMAGE_REPO {repo!r} is not an image name without a tag (e.g. registry.example.com/aitj)"
        )
    return repo


def tool(path: Path, name: str) -> str:
    if not path.exists():
        raise ReleaseError(f"{name} is not built ({path} is missing): run `make build-cluster`")
    return str(path)


def run(*cmd: str, cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise ReleaseError(f"{' '.join(cmd[:3])} ... failed: {done.stderr.strip()}")
    return done.stdout


def base_image() -> str:
    """base_image: the image name manifests/base gives the Deployment (its own ``images`` entry
    renames ``aitj``), which is the name a kustomization over it must match to change it."""
    kustomization = yaml.safe_load((ROOT / "manifests" / "base" / "kustomization.yaml").read_text())
    (image,) = kustomization["images"]
    return str(image["newName"])


def manifests(version: str, image_repo: str, work: Path) -> str:
    """manifests: manifests/cluster-wide built by kubectl's kustomize, the image set by tag."""
    folder = work / "kustomization"
    folder.mkdir()
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "manifests" / "cluster-wide", folder)],
        "images": [{"name": base_image(), "newName": image_repo, "newTag": version}],
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    built = run(tool(kubectl_binary(), "kubectl"), "kustomize", str(folder))
    return (
        f"# aitj {version}: the cluster-wide install (manifests/cluster-wide), "
        f"image {image_repo}:{version}.\n"
        "#   kubectl apply --server-side -f manifests.yaml\n"
        "# Written by `make release` (hack/release.py); docs/quickstart.md.\n"
    ) + built


def chart(version: str, image_repo: str, work: Path, out: Path) -> Path:
    """chart: charts/aitj packaged at ``version`` (chart and app), its image repository set."""
    copy = work / "aitj"
    shutil.copytree(ROOT / "charts" / "aitj", copy)
    values = copy / "values.yaml"
    default = "  repository: registry.aitj.local/aitj\n"
    text = values.read_text()
    if default not in text:
        raise ReleaseError(
            f"charts/aitj/values.yaml no longer holds {default.strip()!r}: update hack/release.py"
        )
    values.write_text(text.replace(default, f"  repository: {image_repo}\n"))
    helm = tool(helm_binary(), "helm")
    run(helm, "lint", "--strict", str(copy))
    run(helm, "package", str(copy), "--version", version, "--app-version", version, "--destination", str(out))
    return out / f"aitj-{version}.tgz"


def release(version: str, image_repo: str, out: Path) -> tuple[Path, Path]:
    """release writes ``<out>/<version>/manifests.yaml`` and the chart package; returns both paths."""
    check_version(version)
    check_image_repo(image_repo)
    target = out / version
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aitj-release-") as tmp:
        text = manifests(version, image_repo, Path(tmp))
        package = chart(version, image_repo, Path(tmp), target)
    path = target / "manifests.yaml"
    path.write_text(text)
    return path, package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="", help="the release's version, x.y.z")
    parser.add_argument("--image-repo", default="registry.aitj.local/aitj", help="the image, without tag")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="the output folder (default: dist)")
    args = parser.parse_args(argv)
    try:
        written = release(args.version, args.image_repo, args.out)
    except ReleaseError as e:
        print(f"make release: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
