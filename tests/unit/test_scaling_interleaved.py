"""Scaling interleaved with termination (issue 24, acceptance): random replicas edits, each
followed after a random wait by the next, and the pods each one deletes gone only after a random
delay of their own (a termination grace period, a slow kubelet). No pod really fails, so no
restart may be counted and no scale operation may fail or time out; once the edits stop and the
pods settle, the job runs the last count asked for, one pod per index, all in the host list.

Runs the planner pass by pass (every 5 s) on the simulated cluster of tests/unit/builders.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitj.core.api import LABEL_INDEX
from tests.unit.builders import Cluster
from tests.unit.test_scaling import history, hosts, running, scale

PERIOD = 5  # seconds between passes


@dataclass(frozen=True)
class Edit:
    """Edit: set the trainers' replicas, then ``wait`` seconds until the next edit; the pods
    deleted until then take ``linger`` seconds to go once they are being deleted."""

    replicas: int
    wait: int
    linger: int


EDITS = st.lists(
    st.builds(
        Edit,
        replicas=st.integers(1, 5),
        wait=st.integers(0, 18).map(lambda n: n * PERIOD),
        linger=st.integers(0, 24).map(lambda n: n * PERIOD),
    ),
    min_size=1,
    max_size=5,
)


class Kubelet:
    """Kubelet: finishes each deletion ``linger`` seconds after the pass that first saw it
    (the linger of the edit in force then), and starts every new pod."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.linger = 0
        self.due: dict[str, int] = {}

    def tick(self, now: int) -> None:
        """tick: what the cluster does between passes, then the operator's pass at ``now``."""
        for name, pod in list(self.cluster.pods.items()):
            if "deletionTimestamp" in pod.raw["metadata"]:
                due = self.due.setdefault(name, now + self.linger)
                if now >= due:
                    pod.raw["status"]["phase"] = "Failed"  # its containers stopped
        self.cluster.collect()
        self.cluster.run_all(now)
        self.cluster.step(now)


def _scaled(edits: list[Edit], grace: int) -> Cluster:
    """_scaled: the seed job running 3 trainers (scaleInGracePeriod ``grace``), the ``edits``
    made one after the other, then passes until every deletion is done and every pod runs."""
    cluster = running(3, scale_in_grace_period=grace)
    kubelet = Kubelet(cluster)
    start = 20
    for edit in edits:
        scale(cluster, edit.replicas)
        kubelet.linger = edit.linger
        for now in range(start, start + edit.wait + PERIOD, PERIOD):
            kubelet.tick(now)
        start += edit.wait + PERIOD
    for now in range(start, start + grace + 200, PERIOD):
        kubelet.tick(now)
    return cluster


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=EDITS, grace=st.sampled_from([0, 10, 60]))
def test_scaling_while_old_pods_are_still_going_counts_no_restart_and_fails_no_scale(
    edits: list[Edit], grace: int
) -> None:
    cluster = _scaled(edits, grace)
    assert cluster.counted == [] and cluster.status.get("RestartCount", {}).get("trainer", 0) == 0
    assert cluster.status.get("restarts", []) == []
    outcomes = {reason for _, reason, _, _ in history(cluster)}
    assert not outcomes & {"ScaleFailed", "ScaleTimeout"}, history(cluster)
    want = edits[-1].replicas
    trainers = cluster.live("trainer")
    indices = sorted(int(cluster.pods[n].raw["metadata"]["labels"][LABEL_INDEX]) for n in trainers)
    assert len(indices) == want and len(set(indices)) == want
    assert cluster.status["phase"] == "Running" and sorted(hosts(cluster)) == trainers
    assert cluster.status["currentReplicas"]["trainer"] == want
