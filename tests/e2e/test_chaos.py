"""``aitj chaos`` end to end, the short version of ``make chaos``: on a local control plane of
its own (apiserver restarts and node faults would disturb the session cluster other tests
share), four elastic jobs, two operators the command starts under leader election, every fault
kind the local control plane allows once; the report says zero invariant violations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from aitj.tools.chaos.bed import SELECTOR
from aitj.tools.chaos.main import Settings, run_chaos
from aitj.tools.chaos.schedule import Allowed, available

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(420)
def test_a_short_chaos_run_keeps_every_invariant_and_runs_every_fault_kind(tmp_path: Path) -> None:
    if os.environ.get("AITJ_KUBECONFIG") or os.environ.get("AITJ_TEST_BACKEND"):
        pytest.skip("the chaos run needs a local control plane of its own")
    kinds = available(Allowed(local=True, drain=True, operator_process=True))
    report = tmp_path / "chaos.json"
    code = run_chaos(
        Settings(
            bed=f"{os.environ.get('AITJ_TEST_CLUSTER', 'pytest')}-chaos",
            bed_jobs=4,
            bed_nodes=5,
            down=True,
            namespace="chaos",
            selector=SELECTOR,
            seed=14,
            duration=150,
            interval=3,
            max_faults=len(kinds),
            allow_drain=True,
            operators=2,
            leader_elect=True,
            delete_jobs=True,
            recovery_bound=60,
            json_path=report,
            timeline_path=tmp_path / "chaos.png",
        ),
        Console(width=120),
    )
    doc = json.loads(report.read_text())
    assert doc["violations"] == []
    assert code == 0
    assert {k for k, v in doc["faults_by_kind"].items() if v["faults"] >= 1} == {str(k) for k in kinds}
    assert (tmp_path / "chaos.png").stat().st_size > 0
