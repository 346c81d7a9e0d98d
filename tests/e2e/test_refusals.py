"""A status write refused by a real ValidatingAdmissionPolicy (issue 24, section 3): the
operator backs off instead of planning again at 2 Hz, says why (an Event, and
``status.passFailure`` through the minimal write the policy lets through), and recovers once
the policy is gone. Its calls are counted by the apiserver (``apiserver_request_total``)."""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core import api
from tests.clusters import KubeCluster
from tests.e2e import policies
from tests.jobs import create_job, events_for, get_job, seed_variant
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
POLICY = "aitj-test-refuse-running"
SAID = "this namespace runs no training job"
SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
# The window the calls are counted over. Backing off (1, 2, 4, 8 s ...) the operator tries at
# most 5 times in it; planning again every 0.5 s, as a stale write is, it tried about 30 times.
WINDOW_SECONDS = 16.0
MOST_REFUSED = 6


def requests(cluster: KubeCluster) -> Counter[tuple[str, str, str, str]]:
    """requests: the apiserver's request counts by (verb, resource, subresource, code)."""
    method, url, headers, body, post = cluster.api.param_serialize(
        "GET", "/metrics", auth_settings=["BearerToken"]
    )
    text = cluster.api.call_api(method, url, headers, body, post).response.data.decode()
    out: Counter[tuple[str, str, str, str]] = Counter()
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
            what = tuple(labels.get(k, "") for k in ("verb", "resource", "subresource", "code"))
            out[what] += int(float(m["value"]))
    return out


@pytest.fixture
def ns(namespace: str, crd: None) -> str:
    """ns: a namespace of the test's own (the shared ``namespace`` fixture), with the CRD."""
    return namespace


def refuse_running(cluster: KubeCluster, ns: str) -> None:
    """refuse_running: a ValidatingAdmissionPolicy, bound to ``ns``, that refuses any status
    write leaving a job Running (so the operator's full status write of a job that runs is
    refused, while its Pending or Creating status can still be written)."""
    running = "!has(object.status) || !has(object.status.phase) || object.status.phase != 'Running'"
    policies.apply(cluster, policies.status_refusal(POLICY, ns, running, SAID))


def lift(cluster: KubeCluster) -> None:
    admission = client.AdmissionregistrationV1Api(cluster.api)
    for remove in (
        admission.delete_validating_admission_policy_binding,
        admission.delete_validating_admission_policy,
    ):
        try:
            remove(POLICY)
        except ApiException as e:
            if e.status != 404:
                raise


def in_force(cluster: KubeCluster, ns: str) -> bool:
    """in_force: the policy refuses a status write (a dry run, on a job no operator pass writes
    Running: its pods cannot be scheduled, for a node selector nothing matches)."""
    try:
        client.CustomObjectsApi(cluster.api).patch_namespaced_custom_object_status(
            api.GROUP, api.VERSION, ns, api.PLURAL, "probe", {"status": {"phase": "Running"}}, dry_run="All"
        )
    except ApiException as e:
        return e.status == 422 and SAID in (e.body or "")
    return False


def test_a_status_write_refused_by_an_admission_policy_backs_off_says_why_and_recovers(
    cluster: KubeCluster, ns: str, live_operator: OperatorProcess
) -> None:
    probe = seed_variant("probe")
    for replica in probe["spec"]["replicaSpecs"].values():
        replica["template"]["spec"]["nodeSelector"] = {"aitj-test/none": "none"}
    create_job(cluster, ns, probe)
    refuse_running(cluster, ns)
    try:
        wait_for(lambda: in_force(cluster, ns), 30, "the policy in force")
        create_job(cluster, ns, seed_variant("refused"))

        def refused_event() -> bool:
            return any(
                e.reason == "StatusRefused" and SAID in e.message for e in events_for(cluster, ns, "refused")
            )

        wait_for(refused_event, 90, "a StatusRefused Event quoting the policy")
        before = requests(cluster)
        time.sleep(WINDOW_SECONDS)  # the window the calls are counted over
        during = requests(cluster) - before
        refused = during[("PATCH", api.PLURAL, "status", "422")]
        assert 1 <= refused <= MOST_REFUSED, during
        assert during[("POST", "pods", "", "201")] == 0, during  # nothing recreated meanwhile
        failure = (get_job(cluster, ns, "refused").get("status") or {}).get("passFailure") or {}
        assert failure.get("reason") == "StatusRefused" and SAID in failure.get("message", ""), failure
    finally:
        lift(cluster)

    def recovered() -> bool:
        status = get_job(cluster, ns, "refused").get("status") or {}
        return status.get("phase") == "Running" and "passFailure" not in status

    wait_for(recovered, 90, "the job Running, its passFailure gone, once the policy is lifted")
