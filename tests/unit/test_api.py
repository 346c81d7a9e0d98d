"""parse_job and update_errors: the AITrainingJob model (aitj/core/api/)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from aitj.core import api
from aitj.core.api import (
    MODEL_ONLY_CHECKS,
    CleanPodPolicy,
    ExceptionalEvent,
    FieldError,
    InvalidJob,
    JobStatus,
    Policy,
    ReplicaType,
    RestartPolicy,
    RestartScope,
    parse_job,
    update_errors,
)
from tests.invalid_manifests import CASES, MODEL_ONLY, UPDATE_CASES, Case, UpdateCase, setting
from tests.seeds import SEED_MANIFEST, seed_job


def errors_of(doc: Any) -> list[FieldError]:
    with pytest.raises(InvalidJob) as info:
        parse_job(doc)
    return info.value.errors


def minimal(**replica: Any) -> dict[str, Any]:
    """minimal is the smallest valid job: one replica spec with a one-container template."""
    template = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": "tiny", "namespace": "ns"},
        "spec": {"replicaSpecs": {"trainer": {"template": template, **replica}}},
    }


def seed_with(path: str, value: Any) -> dict[str, Any]:
    """seed_with is the seed with one field set (``a.b[0].c`` paths)."""
    doc = seed_job()
    setting(path, value)(doc)
    return doc


def minimal_with(path: str, value: Any) -> dict[str, Any]:
    doc = minimal()
    setting(path, value)(doc)
    return doc


# --- the seed ----------------------------------------------------------------------------------

SEED = parse_job(yaml.safe_load(SEED_MANIFEST.read_text()))
LAUNCHER = SEED.spec.replica("launcher")
TRAINER = SEED.spec.replica("trainer")


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        pytest.param(SEED.name, "test-horovod-elastic", id="the job is named as in the seed"),
        pytest.param(SEED.namespace, "default", id="the namespace is the seed's"),
        pytest.param(SEED.spec.framework_type, "horovod", id="frameworkType is horovod"),
        pytest.param(SEED.spec.fault_tolerant, True, id="the seed is fault-tolerant"),
        pytest.param(
            SEED.spec.complete_policy, Policy.ANY, id="the job completes when any replica type does"
        ),
        pytest.param(SEED.spec.fail_policy, Policy.ANY, id="the job fails when any replica type does"),
        pytest.param(SEED.spec.clean_pod_policy, CleanPodPolicy.NONE, id="no pods are cleaned at the end"),
        pytest.param(
            (SEED.spec.ssh, SEED.spec.discovery), (True, True), id="ssh and discovery plugins are on"
        ),
        pytest.param(SEED.spec.priority, "normal", id="priority is normal"),
        pytest.param(SEED.spec.time_limit, None, id="there is no time limit"),
        pytest.param(
            [r.name for r in SEED.spec.replicas], ["trainer", "launcher"], id="workers come before the master"
        ),
        pytest.param(LAUNCHER.replica_type, ReplicaType.MASTER, id="the launcher is the master"),
        pytest.param(
            (LAUNCHER.replicas, LAUNCHER.min_replicas, LAUNCHER.max_replicas), (1, 1, 1), id="one launcher"
        ),
        pytest.param(
            (TRAINER.replicas, TRAINER.min_replicas, TRAINER.max_replicas),
            (3, 1, 5),
            id="three trainers, elastic from one to five",
        ),
        pytest.param(TRAINER.complete_policy, Policy.NONE, id="trainers never decide completion"),
        pytest.param(TRAINER.fail_policy, Policy.NONE, id="trainers never decide failure"),
        pytest.param(LAUNCHER.complete_policy, Policy.ALL, id="the launcher completes when its pod does"),
        pytest.param(
            TRAINER.restart_policy,
            RestartPolicy.ON_NODE_FAIL_WITH_EXIT_CODE,
            id="trainers restart on node failures and exit codes",
        ),
        pytest.param(TRAINER.restart_scope, RestartScope.POD, id="a restart recreates one pod"),
        pytest.param(TRAINER.restart_limit, 100, id="a hundred restarts are allowed"),
        pytest.param(TRAINER.restart_time_limit, 60, id="an old pod gets sixty seconds to terminate"),
        pytest.param(TRAINER.restart_timeout, 864000, id="a replacement gets ten days to run"),
        pytest.param(TRAINER.scale_timeout, 600, id="scaleTimeout takes its default of 600 seconds"),
        pytest.param(
            LAUNCHER.rules[0].exit_codes,
            frozenset({101, 129}),
            id="the launcher's first rule is exit codes 129,101",
        ),
        pytest.param(
            LAUNCHER.rules[0].restart_policy,
            RestartPolicy.EXIT_CODE,
            id="an exit-code rule has policy ExitCode",
        ),
        pytest.param(
            LAUNCHER.rules[1].events,
            frozenset({ExceptionalEvent.NODE_NOT_READY}),
            id="its second is nodeNotReady",
        ),
        pytest.param(
            TRAINER.rules[0].events,
            frozenset({ExceptionalEvent.NODE_NOT_READY, ExceptionalEvent.POD_FORCE_DELETED}),
            id="the trainer's rule covers nodeNotReady and PodForceDeleted",
        ),
        pytest.param(
            TRAINER.rules[0].source, "exceptionalEvent nodeNotReady,PodForceDeleted", id="rules keep source"
        ),
        pytest.param(
            TRAINER.template["spec"]["schedulerName"], "volcano", id="the template is kept as written, raw"
        ),
    ],
)
def test_the_seed_parses_to_what_it_says(actual: object, expected: object) -> None:
    assert actual == expected


def test_the_seed_yaml_reads_unquoted_129_101_as_a_string() -> None:
    raw = yaml.safe_load(SEED_MANIFEST.read_text())
    assert raw["spec"]["replicaSpecs"]["launcher"]["faultTolerantPolicy"][0]["exitCodes"] == "129,101"


def test_parse_job_does_not_change_its_input() -> None:
    raw = seed_job()
    before = copy.deepcopy(raw)
    parse_job(raw)
    assert raw == before


def _edited(edit: Any) -> dict[str, Any]:
    doc = seed_job()
    doc["metadata"].update(uid="u-1", resourceVersion="7", generation=1)
    edit(doc)
    return doc


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(status={"phase": "Running", "RestartCount": {"trainer": 2}}),
        lambda d: d["metadata"].update(resourceVersion="8", annotations={"note": "x"}),
        lambda d: d["metadata"].update(generation=2),
    ],
    ids=["status", "version and annotations", "generation alone"],
)
def test_a_job_whose_spec_is_unchanged_parses_again_as_parse_job_does(edit: Any) -> None:
    before = _edited(lambda d: None)
    after = _edited(edit)
    again = api.parse_again(after, before, parse_job(before))
    assert again == parse_job(after)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["spec"]["replicaSpecs"]["trainer"].update(replicas=4),
        lambda d: d["metadata"].update(name="other"),
        lambda d: d.update(kind="Job"),
    ],
    ids=["the spec", "the name", "the kind"],
)
def test_anything_validated_that_changed_is_parsed_whole(edit: Any) -> None:
    before = _edited(lambda d: None)
    assert api.parse_again(_edited(edit), before, parse_job(before)) is None


# --- defaults and accepted variants ----------------------------------------------------------

DEFAULTS = parse_job(minimal())
ONLY = DEFAULTS.spec.replica("trainer")


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        pytest.param(DEFAULTS.spec.fault_tolerant, False, id="faultTolerant defaults to false"),
        pytest.param(DEFAULTS.spec.complete_policy, Policy.ALL, id="the job completePolicy defaults to All"),
        pytest.param(DEFAULTS.spec.fail_policy, Policy.ANY, id="the job failPolicy defaults to Any"),
        pytest.param(DEFAULTS.spec.clean_pod_policy, CleanPodPolicy.ALL, id="cleanPodPolicy defaults to All"),
        pytest.param(
            (DEFAULTS.spec.ssh, DEFAULTS.spec.discovery), (False, False), id="plugins default to off"
        ),
        pytest.param(DEFAULTS.spec.framework_type, "", id="frameworkType defaults to empty"),
        pytest.param(DEFAULTS.spec.priority, None, id="priority defaults to unset"),
        pytest.param(ONLY.replica_type, ReplicaType.WORKER, id="replicaType defaults to worker"),
        pytest.param(
            (ONLY.replicas, ONLY.min_replicas, ONLY.max_replicas), (1, 1, 1), id="one replica, bounds follow"
        ),
        pytest.param(ONLY.complete_policy, Policy.ALL, id="the replica completePolicy defaults to All"),
        pytest.param(ONLY.fail_policy, Policy.ANY, id="the replica failPolicy defaults to Any"),
        pytest.param(ONLY.restart_policy, RestartPolicy.NEVER, id="restartPolicy defaults to Never"),
        pytest.param(ONLY.restart_scope, RestartScope.POD, id="restartScope defaults to Pod"),
        pytest.param(ONLY.restart_limit, None, id="restartLimit defaults to unlimited"),
        pytest.param(ONLY.restart_time_limit, 60, id="restartTimeLimit defaults to 60 seconds"),
        pytest.param(ONLY.restart_timeout, None, id="restartTimeout defaults to no limit"),
        pytest.param(ONLY.scale_timeout, 600, id="scaleTimeout defaults to 600 seconds"),
        pytest.param(ONLY.rules, (), id="there are no rules by default"),
        pytest.param(
            (DEFAULTS.uid, DEFAULTS.generation, DEFAULTS.status), ("", 0, JobStatus()), id="no uid yet"
        ),
    ],
)
def test_an_unset_field_takes_its_documented_default(actual: object, expected: object) -> None:
    assert actual == expected


def replica_of(doc: dict[str, Any], name: str = "trainer") -> api.ReplicaSpec:
    return parse_job(doc).spec.replica(name)


def with_rule(rule: dict[str, Any], **replica: Any) -> dict[str, Any]:
    return minimal(faultTolerantPolicy=[rule], **replica)


@pytest.mark.parametrize(
    ("doc", "check"),
    [
        pytest.param(
            with_rule({"exitCodes": 137, "restartPolicy": "ExitCode"}),
            lambda j: j.spec.replica("trainer").rules[0].exit_codes == {137},
            id="exitCodes may be a bare integer",
        ),
        pytest.param(
            with_rule({"exitCodes": " 130 - 132 , 1", "restartPolicy": "ExitCode"}),
            lambda j: j.spec.replica("trainer").rules[0].exit_codes == {1, 130, 131, 132},
            id="exitCodes may hold ranges and spaces",
        ),
        pytest.param(
            with_rule({"exceptionalEvent": "PodEvicted, PodPreempted", "restartPolicy": "OnNodeFail"}),
            lambda j: (
                j.spec.replica("trainer").rules[0].events
                == {ExceptionalEvent.POD_EVICTED, ExceptionalEvent.POD_PREEMPTED}
            ),
            id="our added events PodEvicted and PodPreempted are known",
        ),
        pytest.param(
            with_rule({"exitCodes": "1", "restartPolicy": "ExitCode"}, restartScope="Replica"),
            lambda j: j.spec.replica("trainer").rules[0].restart_scope is RestartScope.REPLICA,
            id="a rule without restartScope takes the replica's",
        ),
        pytest.param(
            with_rule({"exitCodes": "1", "restartPolicy": "ExitCode", "restartScope": "All"}),
            lambda j: j.spec.replica("trainer").rules[0].restart_scope is RestartScope.ALL,
            id="a rule's own restartScope wins",
        ),
        pytest.param(
            minimal(replicas=3.0),
            lambda j: j.spec.replica("trainer").replicas == 3,
            id="an integral number like 3.0 is an integer, as on the apiserver",
        ),
        pytest.param(
            minimal(replicas=None, restartLimit=None),
            lambda j: (
                (j.spec.replica("trainer").replicas, j.spec.replica("trainer").restart_limit) == (1, None)
            ),
            id="a null field is absent and takes its default, as the apiserver prunes it",
        ),
        pytest.param(
            minimal(replicas=4),
            lambda j: (
                (j.spec.replica("trainer").min_replicas, j.spec.replica("trainer").max_replicas) == (4, 4)
            ),
            id="unset bounds follow replicas",
        ),
        pytest.param(
            minimal(completePolicy="Rank0", failPolicy="Rank0"),
            lambda j: j.spec.replica("trainer").complete_policy is Policy.RANK0,
            id="Rank0 is allowed within a replica",
        ),
        pytest.param(
            minimal_with("spec.plugin", {"ssh": None}),
            lambda j: (j.spec.ssh, j.spec.discovery) == (True, False),
            id="a plugin key present with no value turns the plugin on",
        ),
        pytest.param(
            minimal_with("metadata", {"name": "j", "uid": "u-1", "generation": 7}),
            lambda j: (j.uid, j.generation, j.namespace) == ("u-1", 7, "default"),
            id="uid and generation come from metadata and the namespace defaults to default",
        ),
        pytest.param(
            minimal_with("status", {"phase": "Running"}),
            lambda j: j.status.to_json() == {"phase": "Running"},
            id="status is kept as written",
        ),
    ],
)
def test_accepted_variants_parse_into_the_model(doc: dict[str, Any], check: Any) -> None:
    assert check(parse_job(doc))


def test_replicas_are_ordered_workers_first_then_masters_each_by_name() -> None:
    doc = minimal()
    template = doc["spec"]["replicaSpecs"]["trainer"]["template"]
    doc["spec"]["replicaSpecs"] = {
        "zeta": {"template": template},
        "boss": {"template": template, "replicaType": "master"},
        "alpha": {"template": template, "replicaType": "worker"},
    }
    assert [r.name for r in parse_job(doc).spec.replicas] == ["alpha", "zeta", "boss"]


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_an_invalid_manifest_is_refused_naming_the_field(case: Case) -> None:
    errors = errors_of(case.manifest())
    named = [e for e in errors if e.path == case.path]
    assert named, f"no error names {case.path}: {errors}"
    assert any(case.fragment in e.message for e in named), f"{case.fragment!r} not in {named}"
    assert not any(e.message.startswith(tuple(MODEL_ONLY_CHECKS)) for e in named)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in MODEL_ONLY])
def test_a_model_only_check_refuses_and_says_it_is_one(case: Case) -> None:
    errors = errors_of(case.manifest())
    named = [e for e in errors if e.path == case.path]
    assert named, f"no error names {case.path}: {errors}"
    assert any(e.message.startswith(case.fragment) for e in named)
    assert case.fragment in MODEL_ONLY_CHECKS


def test_the_table_has_at_least_thirty_cases_with_distinct_ids() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)


def test_every_mistake_is_reported_not_just_the_first() -> None:
    doc = seed_job()
    doc["spec"]["completePolicy"] = "Rank0"
    doc["spec"]["replicaSpecs"]["trainer"]["replicas"] = 0
    doc["spec"]["replicaSpecs"]["launcher"]["faultTolerantPolicy"][0]["exitCodes"] = "300"
    paths = {e.path for e in errors_of(doc)}
    assert {
        "spec.completePolicy",
        "spec.replicaSpecs.trainer.replicas",
        "spec.replicaSpecs.launcher.faultTolerantPolicy[0].exitCodes",
    } <= paths


def test_invalid_job_prints_every_error_with_its_path() -> None:
    doc = seed_job()
    doc["spec"]["failPolicy"] = "Some"
    doc["spec"]["priority"] = "urgent"
    text = str(errors_and_exception(doc))
    assert 'spec.failPolicy: Unsupported value: "Some"' in text
    assert 'spec.priority: Unsupported value: "urgent"' in text


def errors_and_exception(doc: dict[str, Any]) -> InvalidJob:
    with pytest.raises(InvalidJob) as info:
        parse_job(doc)
    assert isinstance(info.value, ValueError)
    return info.value


@pytest.mark.parametrize(
    ("doc", "path", "fragment"),
    [
        pytest.param([], "<root>", "must be an object", id="a list is not a job"),
        pytest.param(
            seed_with("apiVersion", "kubeflow.org/v1"),
            "apiVersion",
            'supported values: "kongming.cce.baiudbce.com/v1"',
            id="another group's apiVersion is refused",
        ),
        pytest.param(seed_with("kind", "TFJob"), "kind", 'Unsupported value: "TFJob"', id="another kind"),
        pytest.param(seed_with("metadata", {}), "metadata.name", "Required value", id="a job needs a name"),
        pytest.param(
            seed_with("metadata.name", "a" * 64),
            "metadata.name",
            "Too long",
            id="a job name longer than 63 characters is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.template", "pod"),
            "spec.replicaSpecs.trainer.template",
            "must be of type object",
            id="a template that is no object is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.template", {"metadata": {}}),
            "spec.replicaSpecs.trainer.template.spec",
            "Required value",
            id="a template without a pod spec is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.faultTolerantPolicy", {"exitCodes": 1}),
            "spec.replicaSpecs.trainer.faultTolerantPolicy",
            "must be of type array",
            id="faultTolerantPolicy that is no list is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.faultTolerantPolicy[0]", "nodeNotReady"),
            "spec.replicaSpecs.trainer.faultTolerantPolicy[0]",
            "must be of type object",
            id="a rule that is no object is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.faultTolerantPolicy[0].exceptionalEvent", 7),
            "spec.replicaSpecs.trainer.faultTolerantPolicy[0].exceptionalEvent",
            "must be of type string",
            id="an event that is no string is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.restartLimit", True),
            "spec.replicaSpecs.trainer.restartLimit",
            "must be of type integer",
            id="a boolean is no integer",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer", None),
            "spec.replicaSpecs.trainer",
            "must be of type object",
            id="a null replica spec is refused",
        ),
        pytest.param(
            seed_with("spec.plugin.ssh", [""] * 9),
            "spec.plugin.ssh",
            "must have at most 8 items",
            id="a plugin list longer than 8 is refused",
        ),
        pytest.param(
            seed_with("spec.replicaSpecs.trainer.template.spec.containers[0]", {"image": "x"}),
            "spec.replicaSpecs.trainer.template.spec.containers[0].name",
            "Required value",
            id="a container without a name is refused",
        ),
    ],
)
def test_shapes_the_schema_refuses_are_refused_by_the_model_too(doc: Any, path: str, fragment: str) -> None:
    errors = errors_of(doc)
    assert any(e.path == path and fragment in e.message for e in errors), errors


# --- updates -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in UPDATE_CASES])
def test_an_edit_of_a_live_job_is_allowed_or_refused_naming_the_field(case: UpdateCase) -> None:
    old = seed_job()
    case.before(old)
    new = copy.deepcopy(old)
    case.edit(new)
    errors = update_errors(parse_job(old), parse_job(new))
    if case.path is None:
        assert errors == []
    else:
        assert any(e.path == case.path and case.fragment in e.message for e in errors), errors


# --- the helpers other modules share -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dns1123", "dns1035"),
    [
        pytest.param("trainer", True, True, id="a plain name is both"),
        pytest.param("0-trainer", True, False, id="a leading digit is a DNS-1123 label only"),
        pytest.param("a" * 63, True, True, id="63 characters fit"),
        pytest.param("a" * 64, False, False, id="64 do not"),
        pytest.param("trainer-", False, False, id="no trailing dash"),
        pytest.param("Trainer", False, False, id="no upper case"),
        pytest.param("", False, False, id="not empty"),
    ],
)
def test_names_are_checked_as_kubernetes_dns_labels(value: str, dns1123: bool, dns1035: bool) -> None:
    assert (api.is_dns1123_label(value), api.is_dns1035_label(value)) == (dns1123, dns1035)


@pytest.mark.parametrize(
    ("value", "phase"),
    [
        pytest.param("Running", api.Phase.RUNNING, id="a phase"),
        pytest.param("running", None, id="phases are case-sensitive"),
        pytest.param(None, None, id="absent"),
        pytest.param(3, None, id="not a string"),
    ],
)
def test_a_status_phase_is_read_or_taken_as_unknown(value: object, phase: api.Phase | None) -> None:
    assert api.parse_phase(value) is phase
