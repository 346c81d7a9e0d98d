"""``aitj dev demo`` (``make demo``): the seed training job on the local control plane, end to end.

Brings the local cluster up (or reuses a healthy one), installs the CRD, starts the operator as
a background process, applies the CCE seed manifest unchanged, and then tells the story with
``kubectl get``: trainers first and the launcher after them, a trainer force-deleted and
replaced under the same index, the launcher finishing and the job Succeeded. The cluster stays
up afterwards to explore; ``aitj dev cluster down`` stops it.

With ``real_nodes`` (``aitj dev demo --real-nodes``, root) the cluster has two real nodes
(docs/real-nodes.md) and the seed's namespace is annotated to put its pods there: the images
are pulled, the barrier, ssh and Horovod really run, the launcher's log shows every rank's own
lines, and the job succeeds when the training script ends (1,000 steps), not by a simulated exit.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from aitj.core import api
from aitj.devcluster.cluster import ClusterConfig, LocalCluster
from aitj.devcluster.faults import EXIT_CODE_ANNOTATION
from aitj.devcluster.realnodes.layout import REAL_NODE_LABEL, namespace_annotations
from aitj.devcluster.versions import kubectl_binary

REPO = Path(__file__).resolve().parents[2]  # aitj/tools/demo.py -> the checkout
CRDS = REPO / "crds"
EXAMPLE = REPO / "manifests" / "examples" / "horovod-elastic.yaml"
REAL_NODES = 2

# soft_wrap: kubectl's tables keep their lines, whatever the terminal width.
console = Console(soft_wrap=True)


class DemoError(RuntimeError):
    pass


def run_demo(*, cluster_name: str = "default", keep_operator: bool = False, real_nodes: bool = False) -> None:
    """run_demo tells the whole story on the cluster ``cluster_name`` (brought up if need be);
    ``keep_operator`` leaves the operator running afterwards; ``real_nodes``: on real nodes."""
    cluster = LocalCluster(cluster_name)
    step("1. the local control plane" + (", with two real nodes" if real_nodes else ""))
    wanted = ClusterConfig(nodes=4, node_profile="cce", real_nodes=REAL_NODES if real_nodes else 0)
    if cluster.is_running() and not cluster.unhealthy() and _real_nodes(cluster) == wanted.real_nodes:
        console.print(f"reusing the running cluster {cluster_name!r}")
    else:
        cluster.down()
        cluster.up(wanted, say=console.print)
    show(cluster, "get", "nodes", "-L", "nvidia.com/gpu.product," + REAL_NODE_LABEL)

    step("2. the AITrainingJob CRD")
    install_crd(cluster)
    show(cluster, "get", "crd", "aitrainingjobs.kongming.cce.baiudbce.com")

    step("3. the operator")
    operator, log_path = start_operator(cluster, detached=keep_operator)
    console.print(f"`aitj run` started (pid {operator.pid}); its log: {log_path}")
    try:
        story(cluster, real_nodes=real_nodes)
    finally:
        if keep_operator:
            console.print(f"the operator keeps running (pid {operator.pid})")
        else:
            operator.terminate()
            operator.wait(timeout=15)
    step("done")
    console.print(
        f"The cluster is still up. Explore it with:\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  {cluster_kubectl()} get aitj,pods\n"
        f"Stop it with `aitj dev cluster down`."
    )


def install_crd(cluster: LocalCluster) -> None:
    """install_crd applies crds/ and waits until the apiserver serves the kind."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS))
    wait(lambda: cluster.kubectl("get", "aitj", "-A", check=False).returncode == 0, 30, "the CRD served")


def start_operator(
    cluster: LocalCluster, *, detached: bool = False, metrics_port: int = 0
) -> tuple[subprocess.Popen[bytes], Path]:
    """start_operator runs ``aitj run`` against the cluster in the background, logging to the
    cluster's logs folder; ``detached`` lets it outlive this process. ``metrics_port``: its
    /metrics there, plain HTTP on 127.0.0.1 (0: none)."""
    log_path = cluster.dir / "logs" / "operator.log"
    command = [sys.executable, "-m", "aitj", "run", f"--kubeconfig={cluster.kubeconfig}"]
    command += (
        [f"--metrics-port={metrics_port}", "--metrics-insecure"] if metrics_port else ["--metrics-port=0"]
    )
    with log_path.open("ab") as log:
        operator = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=detached,
        )
    return operator, log_path


def _real_nodes(cluster: LocalCluster) -> int:
    """_real_nodes: how many real nodes the running cluster was started with."""
    return int(cluster.recorded().get("config", {}).get("real_nodes", 0))


def story(cluster: LocalCluster, *, real_nodes: bool = False) -> None:
    """story applies the example manifest, force-deletes a trainer and lets the launcher finish."""
    manifest: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    name, ns = manifest["metadata"]["name"], manifest["metadata"].get("namespace", "default")
    cluster.kubectl("delete", "aitj", name, "-n", ns, "--ignore-not-found", "--wait=true", "--timeout=60s")
    if real_nodes:
        # The namespace's annotations give its pods the real nodes' selector and toleration.
        pairs = [f"{key}={value}" for key, value in namespace_annotations().items()]
        cluster.kubectl("annotate", "namespace", ns, "--overwrite", *pairs)

    step("4. the CCE seed manifest, applied unchanged")
    print_plain(cluster.kubectl("apply", "-f", str(EXAMPLE)).stdout.strip())
    wait(lambda: phase(cluster, name, ns) == api.Phase.RUNNING, 300 if real_nodes else 60, "the job Running")
    show(cluster, "get", "aitj,pods", "-n", ns, "-o", "wide")
    show_conditions(cluster, name, ns)
    if real_nodes:
        wait(lambda: "step 20/" in launcher_log(cluster, name, ns), 180, "Horovod training")
        step("4b. training: the launcher's log, each rank's own lines")
        show(cluster, "logs", "-n", ns, live_pod(cluster, name, ns, "launcher"), "--tail=8")

    step("5. fault tolerance: trainer 0 force-deleted")
    # Not one being deleted: on real nodes an earlier run's pods stay Terminating for their
    # grace period (300 s in the seed).
    pods = live_pod(cluster, name, ns, "trainer", 0)
    started = time.monotonic()
    console.print(
        cluster.kubectl("delete", "pod", pods, "-n", ns, "--force", "--grace-period=0").stdout.strip()
    )
    wait(
        lambda: restarts(cluster, name, ns) >= 1 and phase(cluster, name, ns) == api.Phase.RUNNING,
        120 if real_nodes else 60,
        "the replacement",
    )
    console.print(f"replaced and Running again in {time.monotonic() - started:.1f}s")
    show(cluster, "get", "aitj,pods", "-n", ns)
    show(cluster, "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}")

    launcher = live_pod(cluster, name, ns, "launcher")
    if real_nodes:
        step("6. training ends (1,000 steps), the launcher exits 0: Succeeded")
        wait(lambda: phase(cluster, name, ns) in api.FINISHED_PHASES, 600, "the job finished")
        show(cluster, "logs", "-n", ns, launcher, "--tail=12")
    else:
        step("6. the launcher finishes (exit 0): the job succeeds")
        cluster.kubectl("annotate", "pod", launcher, "-n", ns, f"{EXIT_CODE_ANNOTATION}=0")
        wait(lambda: phase(cluster, name, ns) == api.Phase.SUCCEEDED, 60, "the job Succeeded")
    show(cluster, "get", "aitj,pods", "-n", ns)
    show_conditions(cluster, name, ns)


def live_pod(cluster: LocalCluster, name: str, ns: str, replica: str, index: int = 0) -> str:
    """live_pod: the name of the job's pod of ``replica`` and ``index`` not being deleted ("" if none)."""
    selector = f"{api.LABEL_JOB}={name},{api.LABEL_REPLICA}={replica},{api.LABEL_INDEX}={index}"
    out = cluster.kubectl("get", "pods", "-n", ns, "-l", selector, "-o", "json", check=False)
    pods = json.loads(out.stdout or "{}").get("items", [])
    live = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
    return live[0] if live else ""


def launcher_log(cluster: LocalCluster, name: str, ns: str) -> str:
    pod = live_pod(cluster, name, ns, "launcher")
    return cluster.kubectl("logs", "-n", ns, pod, "--tail=50", check=False).stdout if pod else ""


def phase(cluster: LocalCluster, name: str, ns: str) -> str:
    """phase: the job's status.phase ("" while it has none)."""
    return cluster.kubectl(
        "get", "aitj", name, "-n", ns, "-o", "jsonpath={.status.phase}", check=False
    ).stdout


def restarts(cluster: LocalCluster, name: str, ns: str) -> int:
    """restarts: the job's status.totalRestarts (0 while it has none)."""
    out = cluster.kubectl(
        "get", "aitj", name, "-n", ns, "-o", "jsonpath={.status.totalRestarts}", check=False
    )
    return int(out.stdout or 0)


def show_conditions(cluster: LocalCluster, name: str, ns: str) -> None:
    """show_conditions prints the job's conditions, as a table and as the seed's status shows them."""
    show(
        cluster,
        "get",
        "aitj",
        name,
        "-n",
        ns,
        "-o",
        "custom-columns=TYPE:.status.conditions[*].type,STATUS:.status.conditions[*].status",
    )
    out = cluster.kubectl("get", "aitj", name, "-n", ns, "-o", "yaml").stdout
    status = (yaml.safe_load(out) or {}).get("status", {})
    print_plain(
        yaml.safe_dump(
            {"status": {"RestartCount": status.get("RestartCount"), "conditions": status.get("conditions")}},
            sort_keys=False,
        )
    )


def print_plain(text: str) -> None:
    """print_plain prints cluster output as it is: rich would take ``[launcher]`` in a condition
    message for markup and drop it."""
    console.print(text, highlight=False, markup=False)


def show(cluster: LocalCluster, *args: str) -> None:
    """show prints a kubectl command and its output."""
    console.print(f"[bold]$ kubectl {' '.join(args)}[/bold]")
    print_plain(cluster.kubectl(*args, check=False).stdout.rstrip())


def step(title: str) -> None:
    """step prints the title of the next part of the story."""
    console.rule(f"[bold]{title}")


def wait(probe: Callable[[], bool], timeout: float, what: str) -> None:
    """wait polls ``probe`` until it is true; a DemoError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


def cluster_kubectl() -> str:
    """cluster_kubectl: the path of the local cluster's own kubectl."""
    return str(kubectl_binary())
