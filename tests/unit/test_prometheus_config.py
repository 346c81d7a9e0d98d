"""The Prometheus the tests run (aitj/devcluster/prometheus.py): its configuration, read as data."""

from __future__ import annotations

from pathlib import Path

from aitj.devcluster.prometheus import Target, config
from aitj.devcluster.versions import BUILT, COMPONENTS, PROMETHEUS_COMPONENT


def test_the_scrape_config_scrapes_without_honor_labels_as_the_service_monitor_does() -> None:
    cfg = config([Target("aitj-operator-metrics", ("127.0.0.1:9000",))], "1s", [Path("/r.yaml")])
    (scrape,) = cfg["scrape_configs"]
    assert scrape == {
        "job_name": "aitj-operator-metrics",
        "static_configs": [{"targets": ["127.0.0.1:9000"]}],
    }
    assert cfg["global"] == {"scrape_interval": "1s", "evaluation_interval": "1s"}
    assert cfg["rule_files"] == ["/r.yaml"]


def test_a_target_carries_its_target_labels_and_metric_relabelings() -> None:
    relabel = ({"regex": "exported_namespace", "action": "labeldrop"},)
    target = Target("aitj-operator-metrics", ("127.0.0.1:9000",), (("namespace", "aitj-system"),), relabel)
    (scrape,) = config([target], "1s")["scrape_configs"]
    assert scrape["static_configs"] == [
        {"targets": ["127.0.0.1:9000"], "labels": {"namespace": "aitj-system"}}
    ]
    assert scrape["metric_relabel_configs"] == [{"regex": "exported_namespace", "action": "labeldrop"}]
    assert "honor_labels" not in scrape


def test_cluster_build_builds_prometheus_and_promtool_but_cluster_up_needs_only_the_control_plane() -> None:
    assert PROMETHEUS_COMPONENT in BUILT and PROMETHEUS_COMPONENT not in COMPONENTS
    assert PROMETHEUS_COMPONENT.commands == ("prometheus", "promtool")
    assert PROMETHEUS_COMPONENT.tags == ("remove_all_sd",)
    assert any("version.Version=3.16.0" in flag for flag in PROMETHEUS_COMPONENT.ldflags)
