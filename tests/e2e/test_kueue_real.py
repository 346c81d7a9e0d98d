"""Real Kueue (sigs.k8s.io/kueue v0.17.0, built from the Go module proxy) queueing, admitting
and preempting an AITrainingJob on the local control plane, with this test as the one piece
Kueue lacks for the kind: the integration controller (docs/kueue.md, "What is not
integrated"). The test does what a jobframework reconciler would: it writes the job's Workload
(one pod set per replica type, from the templates), applies Kueue's admission to the job
(the flavor's node labels and tolerations into the templates, ``spec.suspend`` false), and on
Kueue's eviction suspends the job, waits until it is no longer active, takes the injection back
and releases the Workload's quota reservation. Kueue itself decides: which job is admitted,
on which flavor, and which one a higher-priority Workload preempts.

Opt-in: it needs the Kueue binary (``AITJ_KUEUE_BIN``; ``GOBIN=... go install
sigs.k8s.io/kueue/cmd/kueue@v0.17.0``) and the module's CRDs in the Go module cache. Kueue
runs as a process with the admin's kubeconfig, its webhooks not registered with the apiserver
(they would need a Service or URL the apiserver reaches, and a CA bundle): Workloads are
written complete, as Kueue's defaulting webhook would leave them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from aitj.core import api
from aitj.devcluster.nodes import node_manifest, profile
from tests.clusters import KubeCluster, free_port
from tests.jobs import (
    Doc,
    create_job,
    delete_job,
    get_job,
    job_pods,
    live,
    patch_job,
    seed_variant,
    set_path,
    wait_phase,
)
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

KUEUE_VERSION = "v0.17.0"
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
FLAVOR_LABEL = "test.aitj.dev/kueue-flavor"
METRICS_CERTS = Path("/etc/kueue/metrics/certs")
CPU = "500m"  # each pod's request: the job's 4 pods take 2 CPUs, the ClusterQueue's whole quota


def _kueue_binary() -> Path | None:
    found = os.environ.get("AITJ_KUEUE_BIN")
    return Path(found) if found and Path(found).is_file() else None


def _kueue_module() -> Path | None:
    proc = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False)
    module = Path(proc.stdout.strip()) / f"sigs.k8s.io/kueue@{KUEUE_VERSION}"
    return module if (module / "config/components/crd/bases").is_dir() else None


BINARY, MODULE = _kueue_binary(), _kueue_module()
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        BINARY is None or MODULE is None,
        reason=f"no Kueue {KUEUE_VERSION} here: set AITJ_KUEUE_BIN (see the module docstring)",
    ),
]


@pytest.fixture(scope="module")
def kueue(cluster: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """kueue: Kueue's CRDs installed and its manager running against the cluster."""
    binary, module = BINARY, MODULE
    assert binary is not None and module is not None
    crds = str(module / "config/components/crd/bases")
    cluster.kubectl("apply", "--server-side", "-f", crds)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", crds)
    cluster.kubectl("create", "namespace", "kueue-system", check=False)
    work = tmp_path_factory.mktemp("kueue")
    certs = work / "certs"
    certs.mkdir()
    key, crt = str(certs / "tls.key"), str(certs / "tls.crt")
    openssl = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
    ]
    subprocess.run([*openssl, "-keyout", key, "-out", crt], check=True, capture_output=True)
    # Without its internal certificate management Kueue reads its metrics server's certificate
    # from a fixed path (cmd/kueue/main.go): made here for the run, if it is not there.
    made = not METRICS_CERTS.exists()
    if made:
        METRICS_CERTS.mkdir(parents=True)
        shutil.copy(crt, METRICS_CERTS / "tls.crt")
        shutil.copy(key, METRICS_CERTS / "tls.key")
    health = free_port()
    (work / "config.yaml").write_text(
        f"""apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
manageJobsWithoutQueueName: false
internalCertManagement: {{enable: false}}
webhook: {{port: {free_port()}, certDir: {certs}}}
health: {{healthProbeBindAddress: "127.0.0.1:{health}"}}
metrics: {{bindAddress: "0"}}
leaderElection: {{leaderElect: false}}
integrations:
  frameworks: ["batch/job"]
  externalFrameworks: ["AITrainingJob.v1.kongming.cce.baiudbce.com"]
"""
    )
    log = (work / "kueue.log").open("w")
    proc = subprocess.Popen(
        [str(binary), f"--config={work / 'config.yaml'}", "--feature-gates=VisibilityOnDemand=false"],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: _ready(health) or proc.poll() is not None, 120, "Kueue's manager ready")
        assert proc.poll() is None, (work / "kueue.log").read_text()[-4000:]
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        if made:
            shutil.rmtree(METRICS_CERTS.parent.parent)
        print(f"---- Kueue's log ----\n{(work / 'kueue.log').read_text()[-6000:]}")


def _ready(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _kueue_api(cluster: KubeCluster) -> Any:
    return client.CustomObjectsApi(cluster.api)


@pytest.fixture
def flavor(cluster: KubeCluster, kueue: None, namespace: str) -> Iterator[tuple[str, str]]:
    """flavor: a node, a ResourceFlavor that selects it (a label and a toleration of its taint),
    a ClusterQueue of 2 CPUs on it that preempts lower priorities, a LocalQueue in the test's
    namespace: (node, LocalQueue)."""
    k = _kueue_api(cluster)
    tag = uuid.uuid4().hex[:6]
    node = node_manifest(f"kueue-{tag}", profile("cce"))
    node["metadata"]["labels"][FLAVOR_LABEL] = tag
    node["spec"] = {"taints": [{"key": FLAVOR_LABEL, "value": tag, "effect": "NoSchedule"}]}
    cluster.core.create_node(node)
    toleration = {"key": FLAVOR_LABEL, "operator": "Equal", "value": tag, "effect": "NoSchedule"}
    rf = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": f"f-{tag}"}}
    rf["spec"] = {"nodeLabels": {FLAVOR_LABEL: tag}, "tolerations": [toleration]}
    k.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", rf)
    quota = [{"name": "cpu", "nominalQuota": "2"}, {"name": "memory", "nominalQuota": "64Gi"}]
    cq = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": f"cq-{tag}"},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {"coveredResources": ["cpu", "memory"], "flavors": [{"name": f"f-{tag}", "resources": quota}]}
            ],
        },
    }
    k.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", cq)
    lq = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue", "metadata": {"name": "team-a"}}
    lq["spec"] = {"clusterQueue": f"cq-{tag}"}
    k.create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", lq)
    try:
        yield node["metadata"]["name"], "team-a"
    finally:
        for plural, name in (("clusterqueues", f"cq-{tag}"), ("resourceflavors", f"f-{tag}")):
            k.delete_cluster_custom_object(GROUP, VERSION, plural, name)
        cluster.core.delete_node(node["metadata"]["name"])


# ---------------------------------------------------------------------------------------------
# The integration controller's part, played by the test


def workload_for(job: Doc, queue: str, priority: int) -> Doc:
    """workload_for: the Workload an integration writes for ``job``: one pod set per replica
    type (its replicas, its template), owned by the job."""
    owner = {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    pod_sets = [
        {"name": name, "count": spec.get("replicas", 1), "template": spec["template"]}
        for name, spec in sorted(job["spec"]["replicaSpecs"].items())
    ]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {"name": f"aitj-{job['metadata']['name']}", "ownerReferences": [owner]},
        "spec": {"queueName": queue, "priority": priority, "podSets": pod_sets},
    }


def condition(obj: Doc, kind: str) -> Doc | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def is_true(obj: Doc, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found["status"] == "True"


def get_workload(cluster: KubeCluster, namespace: str, name: str) -> Doc:
    found: Doc = _kueue_api(cluster).get_namespaced_custom_object(
        GROUP, VERSION, namespace, "workloads", name
    )
    return found


def run_with_admission(cluster: KubeCluster, namespace: str, job_name: str, workload: Doc) -> None:
    """run_with_admission: the admitted flavor's node labels and tolerations into each pod
    set's template, and the job unsuspended, in one update (jobframework's RunWithPodSetsInfo)."""
    k = _kueue_api(cluster)
    job = get_job(cluster, namespace, job_name)
    for assignment in workload["status"]["admission"]["podSetAssignments"]:
        rf = k.get_cluster_custom_object(GROUP, VERSION, "resourceflavors", assignment["flavors"]["cpu"])
        pod = job["spec"]["replicaSpecs"][assignment["name"]]["template"].setdefault("spec", {})
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **rf["spec"]["nodeLabels"]}
        pod["tolerations"] = [*(pod.get("tolerations") or []), *rf["spec"]["tolerations"]]
    job["spec"]["suspend"] = False
    k.replace_namespaced_custom_object(api.GROUP, api.VERSION, namespace, api.PLURAL, job_name, job)


def stop_and_release(cluster: KubeCluster, namespace: str, job_name: str, workload_name: str) -> None:
    """stop_and_release: on Kueue's eviction, suspend the job, wait until it is no longer
    active, take the injection back (RestorePodSetsInfo), then release the Workload's quota
    reservation and mark it requeued, as jobframework does."""
    patch_job(cluster, namespace, job_name, {"spec": {"suspend": True}})
    wait_for(lambda: live(job_pods(cluster, namespace, job_name)) == [], 30, "the job's pods gone")
    wait_for(lambda: _active(cluster, namespace, job_name) == 0, 30, "the job no longer active")
    job = get_job(cluster, namespace, job_name)
    for spec in job["spec"]["replicaSpecs"].values():
        pod = spec["template"]["spec"]
        selector = pod.get("nodeSelector") or {}
        pod["nodeSelector"] = {k: v for k, v in selector.items() if k != FLAVOR_LABEL} or None
        pod["tolerations"] = [t for t in pod.get("tolerations") or [] if t["key"] != FLAVOR_LABEL] or None
    k = _kueue_api(cluster)
    k.replace_namespaced_custom_object(api.GROUP, api.VERSION, namespace, api.PLURAL, job_name, job)
    wl = get_workload(cluster, namespace, workload_name)
    evicted = condition(wl, "Evicted") or {"reason": "Preempted", "message": "evicted"}
    now = wl["metadata"]["creationTimestamp"]
    kept = [
        c for c in wl["status"]["conditions"] if c["type"] not in ("QuotaReserved", "Admitted", "Requeued")
    ]
    wl["status"]["conditions"] = [
        *kept,
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": evicted["message"]},
        {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "no quota reserved"},
        {"type": "Requeued", "status": "True", "reason": evicted["reason"], "message": evicted["message"]},
    ]
    for c in wl["status"]["conditions"]:
        c.setdefault("lastTransitionTime", now)
    wl["status"].pop("admission", None)
    try:
        k.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, "workloads", workload_name, wl)
    except client.ApiException as e:
        if e.status != 409:  # Kueue wrote the Workload meanwhile: read it again
            raise
        stop_and_release(cluster, namespace, job_name, workload_name)


def _active(cluster: KubeCluster, namespace: str, name: str) -> int:
    counts = (get_job(cluster, namespace, name).get("status") or {}).get("replicaStatuses") or {}
    return sum(int(c.get("active") or 0) for c in counts.values())


def test_kueue_admits_preempts_and_readmits_an_aitrainingjob(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess, flavor: tuple[str, str]
) -> None:
    node, queue = flavor
    name = "kueued"
    doc = seed_variant(name, suspend=set_path("spec.suspend", True))
    doc["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    for spec in doc["spec"]["replicaSpecs"].values():
        for c in spec["template"]["spec"]["containers"]:
            c["resources"] = {"requests": {"cpu": CPU}, "limits": {"cpu": CPU}}
    job = create_job(cluster, namespace, doc)
    k = _kueue_api(cluster)
    wl = workload_for(job, queue, priority=0)
    k.create_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", wl)
    wl_name = wl["metadata"]["name"]

    # Kueue admits it; the job runs on the flavor's node.
    admitted = wait_for(
        lambda: (w := get_workload(cluster, namespace, wl_name)) and is_true(w, "Admitted") and w,
        60,
        "Kueue admitting the job's Workload",
    )
    run_with_admission(cluster, namespace, name, admitted)
    wait_phase(cluster, namespace, name, "Running", 30)
    assert {p.spec.node_name for p in live(job_pods(cluster, namespace, name))} == {node}

    # A Workload of higher priority wants the whole quota: Kueue evicts the job's.
    rival = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {"name": "rival"},
        "spec": {
            "queueName": queue,
            "priority": 100,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}
                            ],
                        }
                    },
                }
            ],
        },
    }
    k.create_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", rival)
    evicted = wait_for(
        lambda: (w := get_workload(cluster, namespace, wl_name)) and is_true(w, "Evicted") and w,
        60,
        "Kueue evicting the job's Workload",
    )
    print("Evicted:", condition(evicted, "Evicted"), "Preempted:", condition(evicted, "Preempted"))
    stop_and_release(cluster, namespace, name, wl_name)
    job = wait_phase(cluster, namespace, name, "Suspended", 10)
    assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 0}
    wait_for(lambda: is_true(get_workload(cluster, namespace, "rival"), "Admitted"), 60, "the rival admitted")

    # The rival done: Kueue admits the job again, and it runs again, its RestartCount unchanged.
    k.delete_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", "rival")
    again = wait_for(
        lambda: (w := get_workload(cluster, namespace, wl_name)) and is_true(w, "Admitted") and w,
        120,
        "Kueue admitting the job's Workload again",
    )
    run_with_admission(cluster, namespace, name, again)
    job = wait_phase(cluster, namespace, name, "Running", 30)
    assert job["status"]["RestartCount"] == {"launcher": 0, "trainer": 0}
    assert {p.spec.node_name for p in live(job_pods(cluster, namespace, name))} == {node}
    delete_job(cluster, namespace, name)  # before the flavor's node goes: its pods would be lost with it
