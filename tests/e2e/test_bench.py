"""``aitj dev bench`` runs end to end at a tiny scale (32 pods, 5 trials): every scenario, the
floor and the peer on a cluster of its own, and the report. Speed is the bench's business:
nothing here asserts a figure's value, only that each was measured."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aitj.tools.bench.run import SMOKE, run_bench

pytestmark = pytest.mark.e2e


def test_the_bench_measures_every_figure_it_can_and_writes_its_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    name = f"{os.environ.get('AITJ_TEST_CLUSTER', 'pytest')}-bench"
    doc = run_bench(SMOKE, mode="smoke", out=tmp_path, cluster_name=name, say=lambda m: print(m, flush=True))
    assert json.loads((tmp_path / "results.json").read_text()) == doc
    for png in ("latency_cdf.png", "operator_usage.png"):
        assert (tmp_path / png).read_bytes().startswith(b"\x89PNG")
    assert len((tmp_path / "table.md").read_text().splitlines()) == 4 + len(
        doc["rows"]
    )  # a title, a blank, 2 heads
    unmeasured = {r["figure"] for r in doc["rows"] if r["status"] == "not measured"}
    assert unmeasured == {"F6", "F7", "F8", "F11"}  # F6, F7: their 10,000-pod rows
    m = doc["measurements"]
    for latency in ("floor_delete", "ours_delete", "ours_exit", "peer_delete"):
        assert len(m[latency]) == SMOKE.trials, latency
    assert len(m["takeover"]) == len(m["takeover_leader"]) == SMOKE.kills
    assert len(m["node_one"]) == SMOKE.f3_rounds and len(m["scale_all"]) == SMOKE.f4_rounds
    assert m["bringup_ours"] is not None and m["bringup_peer"] is not None
    assert SMOKE.large is not None  # F12, F13: one job of 32 trainers, F13 at 8 and 32
    large = m["large"]
    assert len(large["delete"]) == SMOKE.large.trials and large["bringup"] is not None
    assert set(large["pass_cost"]) == {str(n) for n in (*SMOKE.large.sizes, SMOKE.large.trainers)}
    assert m["api_per_recovery"]["pod creates"] > 0 and doc["usage"]["pods"]
