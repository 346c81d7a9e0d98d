"""Objects under a job's names that are not the job's, on the real control plane (issue 24,
section 1; docs/semantics.md, "A job's objects are the ones it controls").

A user's discovery ConfigMap, ssh Secret or PodDisruptionBudget made before the job, under the
name the operator derives from the job's, is left exactly as it is (data, selector,
resourceVersion), never deleted, and never mounted by the job's pods; the job carries a
condition and a Warning Event naming it (reason ObjectNotOwned). Once the user deletes theirs,
the job makes its own and goes on. These also exercise the operator's ``get`` on configmaps,
secrets and poddisruptionbudgets (the read after AlreadyExists), which the RBAC audit
(tests/e2e/test_rbac_audit.py) wants used.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.core import api, naming
from aitj.core.render import pdb_name
from aitj.devcluster import faults
from tests.clusters import KubeCluster
from tests.jobs import create_job, events_for, get_job, job_pods, running, seed_variant, set_path, wait_phase
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
NAME = "held"
REASON = "ObjectNotOwned"
THEIRS = {"app": "theirs"}


def _read(cluster: KubeCluster, kind: str, namespace: str, name: str) -> Any:
    """_read: the object, None when there is none."""
    api_ = client.PolicyV1Api(cluster.api) if kind == "pod_disruption_budget" else cluster.core
    try:
        return getattr(api_, f"read_namespaced_{kind}")(name, namespace)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _controller(obj: Any) -> str:
    """_controller: the uid of the object's controller ownerReference ("" when none)."""
    refs = [r for r in obj.metadata.owner_references or () if r.controller]
    return str(refs[0].uid) if refs else ""


def _told(cluster: KubeCluster, namespace: str, what: str) -> bool:
    """_told: the job's condition and one of its Warning Events name ``what`` (reason
    ObjectNotOwned)."""
    conditions = (get_job(cluster, namespace, NAME).get("status") or {}).get("conditions") or []
    in_condition = any(c.get("reason") == REASON and what in (c.get("message") or "") for c in conditions)
    in_event = any(
        e.reason == REASON and e.type == "Warning" and what in (e.message or "")
        for e in events_for(cluster, namespace, NAME)
    )
    return in_condition and in_event


def _configmap(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"hosts": "theirs:1"}}


def _secret(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "stringData": {"config": "ProxyCommand theirs"}}


Make = Callable[[str, dict[str, str]], dict[str, Any]]


@pytest.mark.parametrize(
    ("kind", "name", "make", "labels"),
    [
        pytest.param(
            "config_map", naming.discovery_configmap_name(NAME), _configmap, THEIRS, id="a user's ConfigMap"
        ),
        # With the job's label the operator's watch sees it: still not the job's (its controller).
        pytest.param(
            "config_map",
            naming.discovery_configmap_name(NAME),
            _configmap,
            {api.LABEL_JOB: NAME},
            id="a user's ConfigMap carrying the job's label",
        ),
        pytest.param("secret", naming.ssh_secret_name(NAME), _secret, THEIRS, id="a user's ssh Secret"),
    ],
)
def test_an_object_the_pods_use_held_by_a_user_holds_the_job_back_untouched(
    cluster: KubeCluster,
    namespace: str,
    live_operator: OperatorProcess,
    kind: str,
    name: str,
    make: Make,
    labels: dict[str, str],
) -> None:
    getattr(cluster.core, f"create_namespaced_{kind}")(namespace, make(name, labels))
    before = _read(cluster, kind, namespace, name)
    create_job(cluster, namespace, seed_variant(NAME))
    what = f"{'ConfigMap' if kind == 'config_map' else 'Secret'} {name}"
    wait_for(lambda: _told(cluster, namespace, what), 60, f"a condition and an Event naming {what}")

    after = _read(cluster, kind, namespace, name)
    assert after.metadata.resource_version == before.metadata.resource_version, "written to"
    assert after.data == before.data and not after.metadata.owner_references
    assert not job_pods(cluster, namespace, NAME), "a pod was made that would mount the user's object"

    getattr(cluster.core, f"delete_namespaced_{kind}")(name, namespace)
    uid = get_job(cluster, namespace, NAME)["metadata"]["uid"]
    made = wait_for(
        lambda: (o := _read(cluster, kind, namespace, name)) is not None and _controller(o) == uid and o,
        60,
        f"the job's own {what}",
    )
    assert made.metadata.uid != before.metadata.uid
    wait_phase(cluster, namespace, NAME, "Running")


def test_a_budget_held_by_a_user_is_never_written_nor_deleted(
    cluster: KubeCluster, namespace: str, live_operator: OperatorProcess
) -> None:
    policy: Any = client.PolicyV1Api(cluster.api)
    theirs: dict[str, Any] = {}
    for replica in ("launcher", "trainer"):
        body: dict[str, Any] = {
            "metadata": {"name": pdb_name(NAME, replica)},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": THEIRS}},
        }
        theirs[replica] = policy.create_namespaced_pod_disruption_budget(namespace, body)
    create_job(cluster, namespace, seed_variant(NAME, clean=set_path("spec.cleanPodPolicy", "All")))
    wait_phase(cluster, namespace, NAME, "Running")  # a budget only slows a drain: the job runs
    for replica in ("launcher", "trainer"):
        what = f"PodDisruptionBudget {pdb_name(NAME, replica)}"
        wait_for(partial(_told, cluster, namespace, what), 60, f"a condition and an Event naming {what}")

    def untouched(replica: str) -> None:
        now = _read(cluster, "pod_disruption_budget", namespace, pdb_name(NAME, replica))
        assert now is not None, f"the user's budget {replica} was deleted"
        # Its generation, not its resourceVersion: the disruption controller writes its status.
        was = theirs[replica]
        assert now.metadata.generation == was.metadata.generation and now.spec == was.spec
        assert now.metadata.annotations == was.metadata.annotations
        assert now.metadata.labels == was.metadata.labels and not now.metadata.owner_references
        assert now.spec.selector.match_labels == THEIRS

    untouched("launcher")
    untouched("trainer")

    # The user deletes one: the job makes its own, and leaves the other alone.
    policy.delete_namespaced_pod_disruption_budget(pdb_name(NAME, "trainer"), namespace)
    uid = get_job(cluster, namespace, NAME)["metadata"]["uid"]
    wait_for(
        lambda: (
            (o := _read(cluster, "pod_disruption_budget", namespace, pdb_name(NAME, "trainer"))) is not None
            and _controller(o) == uid
        ),
        60,
        "the job's own trainer budget",
    )
    untouched("launcher")

    # The job ends: its own budget goes, the user's stays as it was.
    launcher = wait_for(
        lambda: running(job_pods(cluster, namespace, NAME, "launcher")), 60, "the launcher running"
    )[0].metadata.name
    faults.pod_exit(cluster.api, namespace, launcher, 0)
    wait_phase(cluster, namespace, NAME, "Succeeded")
    wait_for(
        lambda: _read(cluster, "pod_disruption_budget", namespace, pdb_name(NAME, "trainer")) is None,
        60,
        "the job's own budget deleted at its end",
    )
    wait_for(lambda: not job_pods(cluster, namespace, NAME), 60, "every pod of the job gone")
    untouched("launcher")
