"""``aitj chaos --fault kill`` against the seed's Horovod training on real nodes whose trainers
have an escalation ladder (issue 28 item 5, docs/semantics.md section 23): in place twice in
10 minutes, then a new pod. Each kill is a SIGKILL of a trainer's first container (its sshd)
through the node's own containerd, as the OOM killer's: the first two are restarted in place
by the kubelet (same pod, same node; RestartCount unchanged; a status entry of scope InPlace),
the third, the rung spent, escalates to a replacement (RestartCount +1). The command's own
invariants judge it; how long each pod took from the kill to Running again in place is in its
report and printed (pytest -s), never asserted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.clusters import KubeCluster
from tests.e2e.real.test_chaos_real import PROGRESS_BOUND, chaos_ready
from tests.e2e.real.test_training_recovery import COMMAND
from tests.e2e.real.training import run_chaos, started
from tests.jobs import Doc, seed_variant, set_path
from tests.operator_process import OperatorProcess

KILLS = 3
IN_PLACE_LIMIT = 2  # the InPlace rung's budget: the kills restarted in place; the rest escalate
INTERVAL = float(os.environ.get("AITJ_CHAOS_INPLACE_INTERVAL", "15"))
LADDER = [
    {
        "exitCodes": "137",
        "restartPolicy": "ExitCode",
        "restartScope": "InPlace",
        "restartLimit": IN_PLACE_LIMIT,
        "restartWindowSeconds": 600,
    },
    {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "Pod"},
]

# Long (make real-nodes, about 70 s): make test's short twins are test_inplace.py (the ladder on
# real nodes: in place, then a new pod) and tests/unit/test_chaos_kill.py (the fault, expect, invariants).
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(900)]


def ladder(doc: Doc) -> None:
    doc["spec"]["replicaSpecs"]["trainer"]["faultTolerantPolicy"] += LADDER


def test_kills_restart_trainers_in_place_then_the_ladder_replaces_one(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess, tmp_path: Path
) -> None:
    ns = real_namespace
    command = set_path(
        "spec.replicaSpecs.launcher.template.spec.containers.0.command", ["/bin/bash", "-c", COMMAND]
    )
    doc = seed_variant("inplace", command=command, chaos=chaos_ready, ladder=ladder)
    started(real_cluster, ns, doc, width=3, step=20)
    args = [
        *("--kubeconfig", str(real_cluster.kubeconfig), "-n", ns, "--seed", "3", "--fault", "kill"),
        *("--max-faults", str(KILLS), "--interval", str(INTERVAL), "--duration", str(KILLS * INTERVAL + 5)),
        *("--replica", "trainer", "--progress", "--progress-bound", str(PROGRESS_BOUND)),
    ]
    report = run_chaos(args, tmp_path / "chaos.json")
    assert report["faults_by_kind"]["kill"]["faults"] == KILLS, report["fault_log"]
    # Both rungs: IN_PLACE_LIMIT restarts in place (the pod kept, back Running), then replacements.
    in_place = report["in_place"]
    assert [r["rung"] for r in in_place] == [
        f"rule 2 (InPlace) {n} of {IN_PLACE_LIMIT} in 600 s" for n in range(1, IN_PLACE_LIMIT + 1)
    ]
    assert all(r["running_again_s"] is not None for r in in_place), in_place
    assert report["expected_restarts"][f"{ns}/inplace"]["exact"]["trainer"] == KILLS - IN_PLACE_LIMIT
    checked = {c["name"]: c["checks"] for c in report["invariants"]}
    assert checked["kept in place"] == IN_PLACE_LIMIT and checked["InPlace entries exact"] == 1, checked
    assert checked["RestartCount exact"] >= 1, checked
    print(
        "kill -> Running again in place: "
        + ", ".join(f"{r['pod']} {r['running_again_s']:.2f} s" for r in in_place)
        + f"; recovery p50 {report['faults_by_kind']['kill']['recovery_p50_s']} s",
        flush=True,
    )
