"""The floor (F0): a minimal client that watches pods and re-creates a deleted one at once.

It runs as a process of its own (``python -m aitj.tools.bench.floor KUBECONFIG NAMESPACE``),
like the operator, so it shares neither a process nor an interpreter lock with the harness.
Its pods are plain pods labelled with a slot; when one is deleted (or fails) it creates a pod
for the same slot, with nothing in between: no cache, no plan, no status. That is the least
any controller must do to recover a pod, on this cluster, from Python.

``create_sequentially`` is the floor for F4: one client creating pods one after another.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubernetes import client

from aitj.controller.kubeclient import api_client, release
from aitj.tools.bench.workload import BURST, FLOOR_SLOT, IMAGE
from aitj.tools.listwatch import lines


def floor_pod(slot: str) -> dict[str, Any]:
    """floor_pod: a pod of the floor for ``slot`` (a generated name, so a replacement never
    waits for its predecessor's name to be free)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": f"floor-{slot}-", "labels": {FLOOR_SLOT: slot}},
        "spec": {
            "containers": [{"name": "trainer", "image": IMAGE, "command": ["sleep", "infinity"]}],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
        },
    }


def serve(kubeconfig: Path, namespace: str) -> None:
    """serve watches the namespace's slotted pods forever; a pod deleted, or Failed, is
    replaced by a new pod for its slot at once (a Failed one is deleted after)."""
    core: Any = client.CoreV1Api(api_client(kubeconfig))
    handled: set[str] = set()
    listed = json.loads(
        core.list_namespaced_pod(namespace, label_selector=FLOOR_SLOT, _preload_content=False).data
    )
    rv = listed["metadata"]["resourceVersion"]
    while True:
        stream = core.list_namespaced_pod(
            namespace,
            label_selector=FLOOR_SLOT,
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=3600,
            _preload_content=False,
        )
        for line in lines(stream):
            event = json.loads(line)
            pod = event["object"]
            meta = pod.get("metadata") or {}
            rv = meta.get("resourceVersion", rv)
            uid, phase = meta.get("uid", ""), (pod.get("status") or {}).get("phase")
            if event["type"] == "BOOKMARK" or uid in handled:
                continue
            if event["type"] == "DELETED" or phase == "Failed":
                handled.add(uid)
                release(
                    core.create_namespaced_pod(
                        namespace, floor_pod(meta["labels"][FLOOR_SLOT]), _preload_content=False
                    )
                )
                if event["type"] != "DELETED":
                    core.delete_namespaced_pod(meta["name"], namespace, grace_period_seconds=0)


def start_floor(kubeconfig: Path, namespace: str, log_path: Path) -> subprocess.Popen[bytes]:
    """start_floor runs the floor client as a process, logging to ``log_path``."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "aitj.tools.bench.floor", str(kubeconfig), namespace],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def create_sequentially(core: Any, namespace: str, burst: str, count: int) -> None:
    """create_sequentially creates ``count`` pods labelled with ``burst``, one call after the
    other (the floor process does not replace them: they carry no slot)."""
    for _ in range(count):
        pod = floor_pod("burst")
        pod["metadata"]["labels"] = {BURST: burst}
        release(core.create_namespaced_pod(namespace, pod, _preload_content=False))


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2])
