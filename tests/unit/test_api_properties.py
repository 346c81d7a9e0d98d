"""Property: parse_job agrees with the oracle of tests/manifest_strategies.py on drawn manifests."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from aitj.core.api import InvalidJob, Job, parse_job
from tests.manifest_strategies import ABSENT, Drawn, manifests


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(manifests())
def test_parse_job_refuses_exactly_what_the_oracle_refuses_and_names_each_field(drawn: Drawn) -> None:
    try:
        job = parse_job(drawn.manifest)
    except InvalidJob as e:
        paths = {err.path for err in e.errors}
        assert drawn.errors, f"the oracle finds no mistake, the model says: {e}"
        missing = drawn.errors - paths
        assert not missing, f"the model does not name {sorted(missing)}: {e}"
        return
    assert not drawn.errors, f"the model accepts a manifest the oracle refuses at {sorted(drawn.errors)}"
    for key in ("completePolicy", "failPolicy", "cleanPodPolicy", "faultTolerant", "timeLimit"):
        given_value = drawn.values[key]
        assert _job_value(job, key) == (_default(key) if given_value is ABSENT else given_value)
    for name, expected in drawn.values.items():
        if not isinstance(expected, dict):
            continue
        replica = job.spec.replica(name)
        actual = {
            "replica_type": replica.replica_type.value,
            "replicas": replica.replicas,
            "min_replicas": replica.min_replicas,
            "max_replicas": replica.max_replicas,
            "complete_policy": replica.complete_policy.value,
            "fail_policy": replica.fail_policy.value,
            "rules": len(replica.rules),
        }
        assert actual == expected


def _job_value(job: Job, key: str) -> object:
    spec = job.spec
    value = {
        "completePolicy": spec.complete_policy,
        "failPolicy": spec.fail_policy,
        "cleanPodPolicy": spec.clean_pod_policy,
        "faultTolerant": spec.fault_tolerant,
        "timeLimit": spec.time_limit,
    }[key]
    return getattr(value, "value", value)


def _default(key: str) -> object:
    return {
        "completePolicy": "All",
        "failPolicy": "Any",
        "cleanPodPolicy": "All",
        "faultTolerant": False,
    }.get(key)
