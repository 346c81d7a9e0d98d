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
"""

from __future__ import annotations

import argparse
import contextlib
import time

from kubernetes import client

from aitj.controller.kubeclient import api_client
from aitj.core import api as A
from aitj.core.planner.ledger_wire import runs
from aitj.devcluster.cluster import LocalCluster
from aitj.tools.bench.workload import training_job
from aitj.tools.demo import install_crd

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cluster", required=True, help="the local cluster (aitj dev cluster up --name)")
    forms = parser.add_mutually_exclusive_group()
    forms.add_argument("--text", action="store_true", help="the same bytes as one string, not a list")
    forms.add_argument("--runs", action="store_true", help="the list run-length encoded (seenRuns)")
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("sizes", type=int, nargs="+", help="indices in the ledger, one run each, in order")
    args = parser.parse_args()
    cluster = LocalCluster(args.cluster)
    install_crd(cluster)
    apic = api_client(cluster.kubeconfig)
    custom, core = client.CustomObjectsApi(apic), client.CoreV1Api(apic)
    with contextlib.suppress(client.ApiException):  # there already
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    form = "text" if args.text else "runs" if args.runs else "dense"
    for n in args.sizes:
        ms = sorted(timed_writes(custom, n, args.writes, form))
        print(f"{n} indices: status write p50 {ms[len(ms) // 2]:.1f} ms, min {ms[0]:.1f}, max {ms[-1]:.1f}")


if __name__ == "__main__":
    main()
