"""plugin.discovery's ConfigMap fits the apiserver's 1 MiB, or the job is refused at admission
(issue 24, section 3): before, 10,000 workers made a 1.87 MB ConfigMap that failed every pass.
The model's bound (``validation.discovery_bytes``) is the CRD's CEL rule (hack/gen_crd.py; the
apiserver's side runs in tests/e2e/test_crd.py through tests/invalid_manifests.py). Here: the
largest job the bound admits, with the longest names and slots it allows, renders a ConfigMap
that fits, and one pod more is refused."""

from __future__ import annotations

from typing import Any

import pytest

from aitj.core import naming
from aitj.core.api import InvalidJob, parse_job
from aitj.core.api.validation import CONFIGMAP_MAX_BYTES, DISCOVERY_BUDGET, SLOT_DIGITS, discovery_bytes
from aitj.core.render import render_discovery_configmap
from tests.seeds import seed_job

JOB = "j" + "x" * 30  # a long job name, so the replica's pod names are at the DNS limit
REPLICA = "t" * 20


def most_admitted() -> int:
    """most_admitted: the most pods of REPLICA (with the seed's launcher) the bound admits."""
    launcher = discovery_bytes(JOB, "launcher", 1)
    return max(n for n in range(1, 10_001) if discovery_bytes(JOB, REPLICA, n) + launcher <= DISCOVERY_BUDGET)


def job(pods: int) -> dict[str, Any]:
    doc = seed_job()
    doc["metadata"]["name"] = JOB
    specs = doc["spec"]["replicaSpecs"]
    specs[REPLICA] = specs.pop("trainer")
    specs[REPLICA].update(replicas=pods, maxReplicas=pods)
    return doc


def test_the_largest_job_admitted_renders_a_discovery_configmap_that_fits() -> None:
    n = most_admitted()
    parsed = parse_job(job(n))
    pods = [naming.pod_name(JOB, "uid", REPLICA, i, 1) for i in range(n)]
    assert max(len(p) for p in pods) == 63  # the longest pod names there are
    launcher = [naming.pod_name(JOB, "uid", "launcher", 0, 1)]
    hosts = [(naming.pod_host(JOB, p), 10**SLOT_DIGITS - 1) for p in pods]
    cm = render_discovery_configmap(parsed, hosts, {REPLICA: pods, "launcher": launcher})
    size = sum(len(k) + len(v.encode()) for k, v in cm["data"].items())  # what the apiserver limits
    assert CONFIGMAP_MAX_BYTES * 0.9 < size <= CONFIGMAP_MAX_BYTES


def test_one_pod_more_is_refused_naming_the_replica_specs() -> None:
    with pytest.raises(InvalidJob) as refused:
        parse_job(job(most_admitted() + 1))
    (error,) = refused.value.errors
    assert error.path == "spec.replicaSpecs" and "would not fit a ConfigMap (1 MiB)" in error.message


def test_without_discovery_there_is_no_such_bound() -> None:
    doc = job(10_000)
    del doc["spec"]["plugin"]["discovery"]
    assert parse_job(doc).spec.replica(REPLICA).replicas == 10_000
