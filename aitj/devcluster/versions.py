"""Pinned versions of the control plane and where its files live.

Binaries are cached under ``$AITJ_CACHE`` (default ``~/.cache/aitj``) keyed by version, so a
second build is a no-op and a version bump builds next to the old one. Running clusters keep
their state (certificates, etcd data, logs, pids) under ``$AITJ_STATE`` (default
``~/.local/state/aitj``), one folder per cluster name. Neither is inside the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# The Kubernetes releases the local control plane can run (docs/devcluster.md, "Kubernetes
# versions"), oldest first; each builds from its own wrapper module, gomod/kubernetes-<minor>.
# The newest is the default; ``$AITJ_KUBERNETES`` (a minor such as 1.36, or a release) picks
# another, for the test matrix (``make test-matrix``) and for trying the operator on it.
KUBERNETES_RELEASES = ("v1.35.4", "v1.36.3", "v1.37.2")
KUBERNETES_NEWEST = KUBERNETES_RELEASES[-1]
KUBERNETES_ENV = "AITJ_KUBERNETES"
ETCD = "v3.6.16"
KWOK = "v0.8.0"
# Prometheus 3.16.0 is the Go module version v0.316.0 (Prometheus tags its modules 0.MINOR.PATCH).
PROMETHEUS = "3.16.0"
PROMETHEUS_MODULE = "v0.316.0"
# Real nodes (docs/real-nodes.md). A 1.36 or later kubelet needs containerd 2 (1.35 was the last release
# to support containerd 1.x, Debian's is 1.6); Debian's runc 1.1.5 cannot start containerd 2's
# pod sandboxes. CoreDNS is built with only the plugins it needs (gomod/coredns/main.go).
CONTAINERD = "v2.4.2"
RUNC = "v1.5.2"
COREDNS = "v1.15.0"
# Helm renders, lints and packages charts/aitj (tests/unit/test_chart.py, `make release`). Its
# go.mod requires client-go v0.37, so, as Helm's own Makefile does, the Kubernetes version its
# `helm template` and `helm lint` assume without a cluster is set to 1.37 (otherwise 1.20).
HELM = "v3.22.0"
HELM_KUBE_MINOR = "37"

# Go needed by Kubernetes 1.35 to 1.37 and kwok 0.8 (all declare go 1.26.0).
MIN_GO = (1, 26)

GOMOD_DIR = Path(__file__).parent / "gomod"


def kubernetes_release(wanted: str | None) -> str:
    """kubernetes_release: the release of KUBERNETES_RELEASES that ``wanted`` names (a minor,
    ``1.36`` or ``v1.36``, or a whole release, ``v1.36.3``), the newest when it is None or
    empty; ValueError, naming the choices, for any other."""
    if not wanted:
        return KUBERNETES_NEWEST
    text = wanted.strip().removeprefix("v")
    for release in KUBERNETES_RELEASES:
        bare = release.removeprefix("v")
        if text in (bare, bare.rsplit(".", 1)[0]):
            return release
    choices = ", ".join(r.removeprefix("v").rsplit(".", 1)[0] for r in KUBERNETES_RELEASES)
    raise ValueError(f"${KUBERNETES_ENV}={wanted!r}: the local control plane runs Kubernetes {choices}")


def minor(release: str) -> str:
    """minor: ``v1.37.2`` -> ``1.37``."""
    return release.removeprefix("v").rsplit(".", 1)[0]


def kubernetes_module(release: str) -> Path:
    """kubernetes_module: the wrapper module that builds ``release``."""
    return GOMOD_DIR / f"kubernetes-{minor(release)}"


# The release this process runs: chosen once, from the environment, when it starts.
KUBERNETES = kubernetes_release(os.environ.get(KUBERNETES_ENV))


@dataclass(frozen=True)
class Component:
    """A set of commands built together from one wrapper module."""

    name: str
    version: str
    module_dir: Path
    packages: tuple[str, ...]
    ldflags: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    # Built with cgo (runc links libseccomp); every other component is a static Go binary.
    cgo: bool = False
    # Debian packages the build needs (headers for cgo), installed first by debs.ensure.
    build_debs: tuple[str, ...] = ()
    # The name ``go build`` gives a main package at a module's root is its last path element,
    # which is not always the command's name (etcd's is "v3"): the outputs' names when the
    # packages do not say them.
    outputs: tuple[str, ...] = ()

    @property
    def bin_dir(self) -> Path:
        return cache_dir() / "bin" / f"{self.name}-{self.version}"

    def binary(self, command: str) -> Path:
        return self.bin_dir / command

    @property
    def commands(self) -> tuple[str, ...]:
        return self.outputs or tuple(p.rsplit("/", 1)[-1] for p in self.packages)


def _k8s_version_ldflags(version: str) -> tuple[str, ...]:
    major, minor = version.lstrip("v").split(".")[:2]
    flags: list[str] = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    return tuple(flags)


KUBERNETES_COMPONENT = Component(
    name="kubernetes",
    version=KUBERNETES,
    module_dir=kubernetes_module(KUBERNETES),
    packages=(
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-scheduler",
        "k8s.io/kubernetes/cmd/kubectl",
    ),
    ldflags=_k8s_version_ldflags(KUBERNETES),
)
ETCD_COMPONENT = Component(
    name="etcd",
    version=ETCD,
    module_dir=GOMOD_DIR / "etcd",
    packages=("go.etcd.io/etcd/server/v3",),
    outputs=("etcd",),
)
KWOK_COMPONENT = Component(
    name="kwok",
    version=KWOK,
    module_dir=GOMOD_DIR / "kwok",
    packages=("sigs.k8s.io/kwok/cmd/kwok",),
)
# Prometheus and promtool check the dashboards and alert rules (tests/e2e/test_prometheus.py,
# tests/unit/test_promtool.py). remove_all_sd drops every service-discovery plugin (static targets
# remain): Nomad's client cannot be fetched from the proxy, and the binary is half the size.
PROMETHEUS_COMPONENT = Component(
    name="prometheus",
    version=PROMETHEUS,
    module_dir=GOMOD_DIR / "prometheus",
    packages=(
        "github.com/prometheus/prometheus/cmd/prometheus",
        "github.com/prometheus/prometheus/cmd/promtool",
    ),
    ldflags=(
        f"-X github.com/prometheus/common/version.Version={PROMETHEUS}",
        "-X github.com/prometheus/common/version.Branch=HEAD",
        "-X github.com/prometheus/common/version.BuildUser=aitj",
    ),
    tags=("remove_all_sd",),
)
# The node agents, from the same module and build cache as the control plane.
KUBERNETES_NODE_COMPONENT = Component(
    name="kubernetes-node",
    version=KUBERNETES,
    module_dir=kubernetes_module(KUBERNETES),
    packages=("k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"),
    ldflags=_k8s_version_ldflags(KUBERNETES),
)
# The tags leave out snapshotters the nodes do not use (they need cgo or kernel headers);
# overlayfs, the default, stays.
CONTAINERD_COMPONENT = Component(
    name="containerd",
    version=CONTAINERD,
    module_dir=GOMOD_DIR / "containerd",
    packages=(
        "github.com/containerd/containerd/v2/cmd/containerd",
        "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
        "github.com/containerd/containerd/v2/cmd/ctr",
    ),
    ldflags=(f"-X github.com/containerd/containerd/v2/version.Version={CONTAINERD}",),
    tags=("no_btrfs", "no_devmapper", "no_zfs"),
)
RUNC_COMPONENT = Component(
    name="runc",
    version=RUNC,
    module_dir=GOMOD_DIR / "runc",
    packages=("github.com/opencontainers/runc",),
    ldflags=(f"-X main.version={RUNC.lstrip('v')}",),
    tags=("seccomp",),
    cgo=True,
    build_debs=("libseccomp-dev", "pkg-config", "gcc", "libc6-dev"),
)
COREDNS_COMPONENT = Component(
    name="coredns",
    version=COREDNS,
    module_dir=GOMOD_DIR / "coredns",
    packages=("aitj.local/devcluster/coredns",),
)
HELM_COMPONENT = Component(
    name="helm",
    version=HELM,
    module_dir=GOMOD_DIR / "helm",
    packages=("helm.sh/helm/v3/cmd/helm",),
    ldflags=(
        f"-X helm.sh/helm/v3/internal/version.version={HELM}",
        "-X helm.sh/helm/v3/internal/version.metadata=",
        "-X helm.sh/helm/v3/internal/version.gitTreeState=clean",
        "-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1",
        f"-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor={HELM_KUBE_MINOR}",
        "-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1",
        f"-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor={HELM_KUBE_MINOR}",
    ),
)
COMPONENTS = (ETCD_COMPONENT, KWOK_COMPONENT, KUBERNETES_COMPONENT)
# What real nodes add (`aitj cluster up --real-nodes N`).
NODE_COMPONENTS = (KUBERNETES_NODE_COMPONENT, CONTAINERD_COMPONENT, RUNC_COMPONENT, COREDNS_COMPONENT)
# What `aitj cluster build` builds: the control plane, the real nodes' programs, Prometheus for
# the dashboards' tests and Helm for the chart's (`aitj cluster up` builds only what it starts).
BUILT = (*COMPONENTS, *NODE_COMPONENTS, PROMETHEUS_COMPONENT, HELM_COMPONENT)


def cache_dir() -> Path:
    return Path(os.environ.get("AITJ_CACHE", Path.home() / ".cache" / "aitj"))


def state_dir(cluster: str) -> Path:
    base = Path(os.environ.get("AITJ_STATE", Path.home() / ".local" / "state" / "aitj"))
    return base / "clusters" / cluster


def etcd_binary() -> Path:
    return ETCD_COMPONENT.binary("etcd")


def promtool_binary() -> Path:
    """promtool_binary: where the built promtool is (it may not be built yet)."""
    return PROMETHEUS_COMPONENT.binary("promtool")


def prometheus_binary() -> Path:
    """prometheus_binary: where the built prometheus server is (it may not be built yet)."""
    return PROMETHEUS_COMPONENT.binary("prometheus")


def helm_binary() -> Path:
    """helm_binary: where the built helm is (it may not be built yet)."""
    return HELM_COMPONENT.binary("helm")


def kubectl_binary() -> Path:
    """kubectl_binary: where the built kubectl is (it may not be built yet)."""
    return KUBERNETES_COMPONENT.binary("kubectl")


def run_kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """run_kubectl runs kubectl against ``kubeconfig``: the built one, else the one on PATH (a
    cluster that is not the local control plane may come without our build)."""
    exe = str(kubectl_binary()) if kubectl_binary().exists() else (shutil.which("kubectl") or "kubectl")
    return subprocess.run(
        [exe, f"--kubeconfig={kubeconfig}", *args], input=input, capture_output=True, text=True, check=False
    )
