"""The operator's own image, run in the cluster as a user installs it: ``helm install`` of the
chart as a release ships it (``make release``'s package, pushed to the local registry as an OCI
artifact and installed from there), with high availability (two replicas under leader election,
on the two real nodes) and the image built here (the Dockerfile, by buildah), served by the same
registry and named by digest. The chart's objects are the kustomize install's with the ha component
(tests/e2e/test_chart.py compares them), so this runs that install too. Then it runs the seed
job, a standby takes over when the leader's pod is killed, and the chaos command deletes the
operator's pods while the job runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aitj.devcluster.images import Registry, build_and_push
from aitj.devcluster.realnodes.layout import namespace_annotations
from aitj.devcluster.versions import cache_dir
from tests.clusters import KubeCluster
from tests.e2e.cli import aitj
from tests.e2e.install import CHART, CRD_NAME, helm
from tests.e2e.real.jobs import pods_by_index, wait_replaced, wait_running
from tests.jobs import create_job, get_job, seed_variant
from tests.seeds import REPO
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

NAMESPACE = "aitj-system"
VERSION = "0.0.0-test"  # the release's chart and app version; the image is named by digest


@pytest.fixture(scope="module")
def installed(real_cluster: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """installed: the chart's release ``aitj`` with high availability and the image built here
    (its values); removed afterwards with the CRD and the namespace (the next module's operator
    installs the CRD again)."""
    assert real_cluster.local is not None
    release = tmp_path_factory.mktemp("release")
    port = real_cluster.local.recorded()["ports"]["registry"]
    registry = Registry(cache_dir() / "registry", port)
    ref = build_and_push(registry, ["operator"], say=print)["operator"].ref
    # By digest: a node keeps the images it pulled (its containerd's root is cached), so a tag
    # could run whatever the node pulled last.
    name, digest = ref.rpartition(":")[0], registry.digest(ref)
    values = ["--set", f"highAvailability.enabled=true,image.repository={name},image.digest={digest}"]
    # The namespace first, as docs/quickstart.md makes it (Pod Security restricted), with what
    # puts its pods on the real nodes. The RBAC objects earlier modules' operators applied with
    # kubectl go: Helm refuses to take objects it did not make, and a user's cluster has none.
    real_cluster.kubectl("apply", "-f", str(REPO / "manifests" / "base" / "namespace.yaml"))
    real_cluster.kubectl(
        "annotate",
        "namespace",
        NAMESPACE,
        "--overwrite",
        *(f"{key}={value}" for key, value in namespace_annotations().items()),
    )
    rendered = helm(real_cluster, "template", "aitj", CHART, "-n", NAMESPACE, *values)
    assert rendered.returncode == 0, rendered.stderr
    real_cluster.kubectl("delete", "--ignore-not-found", "--wait=true", "-f", "-", input=rendered.stdout)
    # The chart from the registry, where make release's package was pushed.
    made = subprocess.run(
        [sys.executable, str(REPO / "hack" / "release.py"), "--version", VERSION, "--out", str(release)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    oci = f"oci://{registry.address}/charts"
    pushed = helm(real_cluster, "push", release / VERSION / f"aitj-{VERSION}.tgz", oci, "--plain-http")
    assert pushed.returncode == 0, pushed.stderr
    installed = helm(
        real_cluster,
        "install",
        "aitj",
        f"{oci}/aitj",
        "--version",
        VERSION,
        "--plain-http",
        "-n",
        NAMESPACE,
        *values,
    )
    assert installed.returncode == 0, installed.stderr
    try:
        yield values
    finally:
        print(real_cluster.kubectl("get", "pods", "-n", NAMESPACE, "-o", "wide", check=False).stdout)
        print(
            real_cluster.kubectl(
                "logs", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=aitj", "--tail=40", check=False
            ).stdout
        )
        print(helm(real_cluster, "uninstall", "aitj", "-n", NAMESPACE, "--wait", "--timeout=120s").stderr)
        for what in (("crd", CRD_NAME), ("namespace", NAMESPACE)):
            real_cluster.kubectl("delete", *what, "--wait=true", "--timeout=120s", check=False)


def leader(cluster: KubeCluster) -> str | None:
    """leader: the pod holding the operator's Lease (its identity is ``<pod>_<pid>``)."""
    out = cluster.kubectl(
        "get", "lease", "aitj-operator", "-n", NAMESPACE, "-o", "jsonpath={.spec.holderIdentity}", check=False
    )
    holder = out.stdout.strip()
    return holder.rsplit("_", 1)[0] if out.returncode == 0 and holder else None


def test_the_image_runs_the_seed_installed_by_the_chart_through_a_killed_leader_and_chaos_pod_deletes(
    real_cluster: KubeCluster, installed: list[str], real_namespace_bare: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    real_cluster.kubectl("rollout", "status", "deployment/aitj-operator", "-n", NAMESPACE, "--timeout=240s")
    first = wait_for(lambda: leader(real_cluster), 60, "a leader")
    ready = time.monotonic()
    pods = real_cluster.core.list_namespaced_pod(NAMESPACE).items
    assert {p.spec.node_name for p in pods} == {"real-node-0", "real-node-1"}  # anti-affinity

    ns, job = real_namespace_bare, "image"
    create_job(real_cluster, ns, seed_variant(job))  # the seed as it is, under the image
    wait_running(real_cluster, ns, job, trainers=3, timeout=240)

    # Kill the leader's pod; a force-deleted trainer must still be replaced, by the standby.
    real_cluster.core.delete_namespaced_pod(first, NAMESPACE, grace_period_seconds=0)
    killed = time.monotonic()
    old = pods_by_index(real_cluster, ns, job, "trainer")[0]
    real_cluster.core.delete_namespaced_pod(old.metadata.name, ns, grace_period_seconds=0)
    _, replaced = wait_replaced(real_cluster, ns, job, "trainer", 0, old.metadata.name)
    second = wait_for(lambda: (holder := leader(real_cluster)) != first and holder, 60, "a new leader")
    assert second != first
    assert (get_job(real_cluster, ns, job)["status"].get("RestartCount") or {}).get("trainer") == 1

    # The chaos command's operator-pod-delete, for real: the operator's pods deleted under it
    # while the job runs; its invariants (one pod per index, exact counts) checked from its watch.
    report = tmp_path / "chaos.json"
    chaos = aitj(
        real_cluster.kubeconfig,
        "chaos",
        "-n",
        ns,
        "--fault",
        "operator-pod-delete",
        "--duration",
        "30",
        "--interval",
        "10",
        "--seed",
        "5",
        "--no-local",
        "--report",
        str(report),
        timeout=300,
    )
    assert chaos.returncode == 0, chaos.stdout + chaos.stderr
    kinds = json.loads(report.read_text())["faults_by_kind"]
    assert list(kinds) == ["operator-pod-delete"] and kinds["operator-pod-delete"]["faults"] >= 2, kinds
    print(
        f"operator image: Deployment rolled out and leading {ready - started:.1f}s after install; leader "
        f"{first} killed; trainer 0 force-deleted then and Running again {replaced - killed:.1f}s later "
        f"under the new leader {second}"
    )
