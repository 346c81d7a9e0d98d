#!/usr/bin/env python3
"""What the apiserver takes to write an AITrainingJob's status whose restart ledger lists N indices.

Usage (a local cluster with the CRD installed, no operator needed):
    PYTHONPATH=$PWD .venv/bin/python hack/statuscost.py --cluster mine 8 4096 8 4096

For each N, in the order given, it creates a job of N trainers in namespace ``statuscost`` (no
operator runs, so no pod is made) and times ``--writes`` status merge patches one after the
other, each with ``restartLedger.trainer.seen`` a list of N generations (as the previous
release's status of a running job of N trainers held; ``--runs``: ``seenRuns``, the same list
run-length encoded, as the operator writes it now: one run) and a restart count that changes;
then deletes the job. A job of 4,096 trainers' recovery pass writes such a status before its
finalizer release, and the job's next pass waits for it (docs/bench.md, "One large job").
Besides the wall time it prints the apiserver's CPU per write (/proc, the cluster's process).

``--no-rules`` installs the CRD without its validation rules (every ``x-kubernetes-validations``
taken out) for the run and the real one again after: the apiserver runs the spec's rules again
on every status write (docs/bench.md, "Bring-up (F10, F12)"), and this tells what they cost.
Alternate runs with and without it.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Any

import yaml
from kubernetes import client

from aitj.controller.kubeclient import api_client
from aitj.core import api as A
from aitj.core.planner.ledger_wire import runs
from aitj.devcluster.cluster import LocalCluster
from aitj.tools.bench import procstat
from aitj.tools.bench.workload import training_job
from aitj.tools.demo import CRDS, install_crd

NS = "statuscost"


def timed_writes(custom: client.CustomObjectsApi, n: int, writes: int, form: str) -> list[float]:
    """timed_writes: ms of each of ``writes`` status patches of a job of ``n`` trainers (``form``
    "text": the same bytes as one condition's message instead of the list; "runs": the list
    run-length encoded)."""
    name = f"sc-{n}"
    body = training_job(name)
    body["metadata"]["namespace"] = NS
    trainer = body["spec"]["replicaSpecs"]["trainer"]
    trainer["replicas"] = trainer["maxReplicas"] = n
    custom.create_namespaced_custom_object(A.GROUP, A.VERSION, NS, A.PLURAL, body)
    out = []
    try:
        for i in range(writes):
            status: dict[str, object] = {"phase": "Running", "restartCount": i}
            if form == "text":
                message = ",".join([str(i % 3)] * n)
                status["conditions"] = [{"type": "Running", "status": "True", "message": message}]
            elif form == "runs":
                status["restartLedger"] = {"trainer": {"seenRuns": runs([i % 3] * n)}}
            else:
                status["restartLedger"] = {"trainer": {"seen": [i % 3] * n}}
            started = time.perf_counter()
            patch = {"status": status}
            custom.patch_namespaced_custom_object_status(A.GROUP, A.VERSION, NS, A.PLURAL, name, patch)
            out.append(1000 * (time.perf_counter() - started))
    finally:
        custom.delete_namespaced_custom_object(A.GROUP, A.VERSION, NS, A.PLURAL, name)
    return out


def without_rules(node: Any) -> Any:
    """without_rules: a copy of the CRD (or any part of it) with no ``x-kubernetes-validations``."""
    if isinstance(node, dict):
        return {k: without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [without_rules(v) for v in node]
    return node


def install_without_rules(cluster: LocalCluster) -> None:
    """install_without_rules applies the CRD with its rules taken out."""
    crd = without_rules(yaml.safe_load((CRDS / "aitrainingjobs.yaml").read_text()))
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump(crd))
    time.sleep(3)  # the apiserver takes the new schema in within a moment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cluster", required=True, help="the local cluster (aitj dev cluster up --name)")
    forms = parser.add_mutually_exclusive_group()
    forms.add_argument("--text", action="store_true", help="the same bytes as one string, not a list")
    forms.add_argument("--runs", action="store_true", help="the list run-length encoded (seenRuns)")
    parser.add_argument("--no-rules", action="store_true", help="the CRD without its validation rules")
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("sizes", type=int, nargs="+", help="indices in the ledger, one run each, in order")
    args = parser.parse_args()
    cluster = LocalCluster(args.cluster)
    install_crd(cluster)
    if args.no_rules:
        install_without_rules(cluster)
    apiserver = cluster.pid("kube-apiserver")
    apic = api_client(cluster.kubeconfig)
    custom, core = client.CustomObjectsApi(apic), client.CoreV1Api(apic)
    with contextlib.suppress(client.ApiException):  # there already
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    form = "text" if args.text else "runs" if args.runs else "dense"
    try:
        for n in args.sizes:
            cpu = procstat.cpu_seconds(apiserver) if apiserver else 0.0
            ms = sorted(timed_writes(custom, n, args.writes, form))
            cpu = (procstat.cpu_seconds(apiserver) - cpu) if apiserver else float("nan")
            label = f"{n} indices{' (no rules)' if args.no_rules else ''}"
            print(
                f"{label}: status write p50 {ms[len(ms) // 2]:.1f} ms, "
                f"min {ms[0]:.1f}, max {ms[-1]:.1f}; apiserver CPU {1000 * cpu / args.writes:.2f} ms a write "
                "(the job's create and delete included)"
            )
    finally:
        if args.no_rules:
            install_crd(cluster)


if __name__ == "__main__":
    main()
