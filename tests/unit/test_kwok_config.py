"""kwok's configuration on the local control plane (aitj.devcluster.config.kwok_config): how often
a simulated node posts its status while nothing in it changes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aitj.devcluster.config import KUBELET_STATUS_REPORT_SECONDS, ClusterConfig, kwok_config


def heartbeat_delay_ms(config: ClusterConfig) -> tuple[int, int]:
    docs = list(yaml.safe_load_all(kwok_config(config, Path("/state/pods.cri.log"))))
    stage = next(d for d in docs if d.get("metadata", {}).get("name") == "aitj-node-heartbeat")
    delay = stage["spec"]["delay"]
    return delay["durationMilliseconds"], delay["jitterDurationMilliseconds"]


@pytest.mark.parametrize(
    ("config", "every_ms"),
    [
        pytest.param(ClusterConfig(), 4_000, id="default: half the Lease of 8 s"),
        pytest.param(ClusterConfig(node_lease_seconds=20), 10_000, id="half a longer Lease"),
        pytest.param(
            ClusterConfig(node_status_seconds=KUBELET_STATUS_REPORT_SECONDS),
            300_000,
            id="a kubelet's report frequency, as make bench asks",
        ),
        pytest.param(
            ClusterConfig(node_lease_seconds=20, node_status_seconds=7), 7_000, id="set: the Lease aside"
        ),
    ],
)
def test_the_node_status_heartbeat_follows_the_config(config: ClusterConfig, every_ms: int) -> None:
    # kwok's jitter is the delay's upper bound: a quarter more than the delay itself.
    assert heartbeat_delay_ms(config) == (every_ms, every_ms * 5 // 4)
