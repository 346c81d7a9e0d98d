"""Leader election's decisions, table-tested: the flags' rules, what a candidate does with the
Lease as read, when a Lease held by another counts as expired (this process's clock, from when
it first saw that version), and what each write puts in the Lease. The loop itself runs
against the real apiserver (tests/e2e/test_leader_election.py)."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from aitj.cli import main
from aitj.controller import leader
from aitj.controller.leader import Act, Record, Seen, decide, election_config, lease_spec, observe
from aitj.controller.operator import drained_within
from tests.seeds import REPO

ME = "op-a_1"
OTHER = "op-b_7"
NOW = dt.datetime(2026, 11, 22, 17, 30, 0, 123456, tzinfo=dt.UTC)
STAMP = "2026-11-22T17:30:00.123456Z"


def record(holder: str = OTHER, version: str = "10", seconds: int = 4, transitions: int = 2) -> Record:
    return Record(holder, seconds, version, transitions, "2026-11-22T17:00:00.000000Z")


@pytest.mark.parametrize(
    ("periods", "error"),
    [
        ((4, 3.0, 0.5), None),
        ((15, 10.0, 2.0), None),
        ((4, 4.0, 0.5), "lease duration must exceed the renew deadline"),
        ((4, 3.0, 2.5), "renew deadline must exceed 1.2 x the retry period"),
        ((4, 3.0, 0.0), "retry period must be positive"),
    ],
)
def test_the_periods_follow_client_go_rules(periods: tuple[int, float, float], error: str | None) -> None:
    lease, renew, retry = periods

    def make() -> leader.ElectionConfig:
        return election_config(
            namespace="ns",
            name="aitj",
            identity=ME,
            lease_seconds=lease,
            renew_deadline=renew,
            retry_period=retry,
        )

    if error is None:
        assert make().renew_deadline == renew
    else:
        with pytest.raises(ValueError, match=error):
            make()


@pytest.mark.parametrize(
    ("what", "rec", "seen", "now", "act"),
    [
        ("no Lease: create it", None, None, 0.0, Act.CREATE),
        ("mine: renew", record(ME), Seen("10", 0.0), 100.0, Act.RENEW),
        ("released (no holder): take it at once", record(""), Seen("10", 5.0), 5.0, Act.TAKE),
        ("another's, just seen: wait", record(), Seen("10", 5.0), 5.0, Act.WAIT),
        ("another's, seen 3.9 s ago: wait", record(), Seen("10", 5.0), 8.9, Act.WAIT),
        ("another's, seen 4 s ago unchanged: expired, take", record(), Seen("10", 5.0), 9.0, Act.TAKE),
        ("another's, its own longer duration counts", record(seconds=15), Seen("10", 5.0), 9.0, Act.WAIT),
        ("another's, version never seen before: wait", record(version="11"), Seen("10", 0.0), 99.0, Act.WAIT),
        ("another's, no duration written: ours counts", record(seconds=0), Seen("10", 0.0), 4.0, Act.TAKE),
    ],
)
def test_a_candidate_decides_from_the_lease_and_its_own_clock(
    what: str, rec: Record | None, seen: Seen | None, now: float, act: Act
) -> None:
    assert decide(ME, rec, seen, now, 4) is act, what


def test_the_lease_expires_only_after_its_duration_without_a_new_version_however_the_clocks_differ() -> None:
    # The holder's renewTime is never compared with this clock: only versions and local times.
    seen = observe(None, record(version="10"), 100.0)
    seen = observe(seen, record(version="10"), 103.0)
    assert seen == Seen("10", 100.0)
    assert decide(ME, record(version="10"), seen, 103.0, 4) is Act.WAIT
    seen = observe(seen, record(version="11"), 103.5)  # renewed: the wait starts again
    assert decide(ME, record(version="11"), seen, 107.0, 4) is Act.WAIT
    assert decide(ME, record(version="11"), seen, 107.5, 4) is Act.TAKE
    assert observe(seen, None, 108.0) is None


@pytest.mark.parametrize(
    ("act", "rec", "acquired", "transitions"),
    [
        (Act.CREATE, None, STAMP, 0),
        (Act.TAKE, record(), STAMP, 3),
        (Act.TAKE, record(""), STAMP, 3),
        (Act.RENEW, record(ME), "2026-11-22T17:00:00.000000Z", 2),
    ],
)
def test_each_write_holds_this_identity_and_counts_a_transition_only_when_the_holder_changes(
    act: Act, rec: Record | None, acquired: str, transitions: int
) -> None:
    assert lease_spec(act, ME, rec, 4, NOW) == {
        "holderIdentity": ME,
        "leaseDurationSeconds": 4,
        "acquireTime": acquired,
        "renewTime": STAMP,
        "leaseTransitions": transitions,
    }


def test_a_released_lease_has_no_holder_and_a_one_second_duration() -> None:
    spec = leader.released_spec(record(ME), NOW)
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 2


def test_a_lease_is_read_off_its_json() -> None:
    body: dict[str, Any] = {
        "metadata": {"name": "aitj", "resourceVersion": "42"},
        "spec": {"holderIdentity": OTHER, "leaseDurationSeconds": 4, "leaseTransitions": 5},
    }
    assert Record.from_body(body) == Record(OTHER, 4, "42", 5, None)
    assert Record.from_body({"metadata": {"resourceVersion": "1"}}) == Record("", 0, "1", 0, None)


def test_the_identity_is_hostname_and_pid_and_the_namespace_the_pods_own(tmp_path: Path) -> None:
    assert leader.default_identity("aitj-operator-5d9f-x2x", 1) == "aitj-operator-5d9f-x2x_1"
    ns = tmp_path / "namespace"
    ns.write_text("aitj-system\n")
    assert leader.default_namespace(ns) == "aitj-system"
    assert leader.default_namespace(tmp_path / "absent") == "default"


def test_run_refuses_a_renew_deadline_not_under_the_lease_duration_with_one_line() -> None:
    result = CliRunner().invoke(
        main, ["run", "--leader-elect", "--leader-elect-lease-duration=2", "--leader-elect-renew-deadline=3"]
    )
    assert result.exit_code == 2
    assert "leader election: the lease duration must exceed the renew deadline" in result.output


def test_the_ha_overlay_runs_two_electing_replicas_on_different_nodes_with_only_the_lease_verbs_used() -> (
    None
):
    ha = REPO / "manifests" / "ha"
    role = yaml.safe_load((ha / "role.yaml").read_text())
    grants = {(v, tuple(r.get("resourceNames") or ())) for r in role["rules"] for v in r["verbs"]}
    assert {r["apiGroups"][0] for r in role["rules"]} == {"coordination.k8s.io"}
    # The Elector reads (get), makes (create) and writes (update: take, renew, release) the Lease.
    name = (leader.DEFAULT_LEASE_NAME,)
    assert grants == {("create", ()), ("get", name), ("update", name)}
    kustomization = yaml.safe_load((ha / "kustomization.yaml").read_text())
    ops = {op["path"]: op["value"] for op in yaml.safe_load(kustomization["patches"][0]["patch"])}
    assert ops["/spec/replicas"] == 2
    assert ops["/spec/template/spec/containers/0/args/-"] == "--leader-elect"
    (term,) = ops["/spec/template/spec/affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    pdb = yaml.safe_load((ha / "poddisruptionbudget.yaml").read_text())
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"] == term["labelSelector"]


def test_a_leader_releases_the_lease_only_once_every_pass_thread_has_ended() -> None:
    busy = threading.Event()
    pool = concurrent.futures.ThreadPoolExecutor(2)
    pool.submit(busy.wait, 30)  # a call still hanging on a pass thread
    pool.shutdown(wait=False, cancel_futures=True)  # as the reconciler's close leaves it
    assert drained_within(pool, 0.1) is False
    busy.set()
    assert drained_within(pool, 5.0) is True
