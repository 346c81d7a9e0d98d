"""The alert rules checked by promtool, built with Prometheus (make build-cluster): the rules file
is valid, and tests/promtool/alerts_test.yaml makes each alert fire and stay silent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from aitj.devcluster.versions import promtool_binary
from aitj.tools.dashboards import alerts
from tests.seeds import REPO

RULES = REPO / "dashboards" / "rules.yaml"
TESTS = REPO / "tests" / "promtool" / "alerts_test.yaml"
needs_promtool = pytest.mark.skipif(
    not promtool_binary().exists(), reason="promtool not built: make build-cluster"
)


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool_binary()), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


@needs_promtool
def test_promtool_check_rules_passes_on_the_rules_file() -> None:
    checked = promtool("check", "rules", RULES)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts.ALERTS)} rules found" in checked.stdout


@needs_promtool
def test_promtool_test_rules_passes() -> None:
    tested = promtool("test", "rules", TESTS)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_prometheus_rule_holds_the_same_groups_as_the_rules_file() -> None:
    manifest = yaml.safe_load((REPO / "manifests" / "monitoring" / "prometheusrule.yaml").read_text())
    assert manifest["spec"] == yaml.safe_load(RULES.read_text())


def test_the_promtool_tests_make_every_alert_fire_and_stay_silent() -> None:
    cases = [
        case for group in yaml.safe_load(TESTS.read_text())["tests"] for case in group["alert_rule_test"]
    ]
    fires = {c["alertname"] for c in cases if c["exp_alerts"]}
    silent = {c["alertname"] for c in cases if not c["exp_alerts"]}
    names = {a.name for a in alerts.ALERTS}
    assert fires == names
    assert silent == names
