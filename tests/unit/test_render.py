"""render_pod and render_service, on the CCE seed manifest and variants of it."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aitj.core import api, naming
from aitj.core.render import Placement, PodIdentity, render_pod, render_service
from tests.seeds import SEED_MANIFEST as SEED

UID = "0b6e1c3a-5d2f-4e8b-9a71-2c4d6f8e0a13"
FINALIZER = "aitj.kongming.cce.baiudbce.com/pods"
SVC = "test-horovod-elastic"


def seed_manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load(SEED.read_text())
    return manifest


def build_replica(name: str, raw: dict[str, Any]) -> api.ReplicaSpec:
    return api.ReplicaSpec(
        name=name,
        replica_type=api.ReplicaType(raw["replicaType"]),
        replicas=raw["replicas"],
        min_replicas=raw.get("minReplicas", raw["replicas"]),
        max_replicas=raw.get("maxReplicas", raw["replicas"]),
        complete_policy=api.Policy(raw.get("completePolicy", "All")),
        fail_policy=api.Policy(raw.get("failPolicy", "Any")),
        restart_policy=api.RestartPolicy(raw.get("restartPolicy", "Never")),
        restart_scope=api.RestartScope(raw.get("restartScope", "Pod")),
        restart_limit=raw.get("restartLimit"),
        restart_time_limit=raw.get("restartTimeLimit", 60),
        restart_timeout=raw.get("restartTimeout"),
        scale_timeout=600,
        rules=(),
        template=raw["template"],
    )


def build_job(manifest: dict[str, Any]) -> api.Job:
    """build_job is a stand-in for api.parse_job, enough for rendering."""
    spec = manifest["spec"]
    raw_replicas = spec["replicaSpecs"]
    order = sorted(raw_replicas, key=lambda n: (raw_replicas[n]["replicaType"] == "master", n))
    plugin = spec.get("plugin") or {}
    return api.Job(
        namespace=manifest["metadata"]["namespace"],
        name=manifest["metadata"]["name"],
        uid=UID,
        generation=1,
        spec=api.JobSpec(
            framework_type=spec.get("frameworkType", ""),
            fault_tolerant=spec.get("faultTolerant", False),
            complete_policy=api.Policy(spec.get("completePolicy", "All")),
            fail_policy=api.Policy(spec.get("failPolicy", "Any")),
            clean_pod_policy=api.CleanPodPolicy(spec.get("cleanPodPolicy", "All")),
            ssh="ssh" in plugin,
            discovery="discovery" in plugin,
            priority=spec.get("priority"),
            time_limit=spec.get("timeLimit"),
            replicas=tuple(build_replica(n, raw_replicas[n]) for n in order),
        ),
        status=api.JobStatus(),
    )


def seed_job(**spec_changes: Any) -> api.Job:
    job = build_job(seed_manifest())
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, **spec_changes))


def with_template(job: api.Job, replica: str, edit: Any) -> api.Job:
    """with_template returns the job with ``edit(template)`` applied to a copy of one template."""
    replicas = []
    for r in job.spec.replicas:
        if r.name == replica:
            template = copy.deepcopy(r.template)
            edit(template)
            r = dataclasses.replace(r, template=template)
        replicas.append(r)
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, replicas=tuple(replicas)))


def pod(
    job: api.Job,
    replica: str = "trainer",
    index: int = 0,
    generation: int = 0,
    restart_counts: dict[str, int] | None = None,
    priority_class: str | None = None,
    extra_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    name = naming.pod_name(job.name, job.uid, replica, index, generation)
    return render_pod(
        job,
        PodIdentity(job.spec.replica(replica), index, generation, name),
        restart_counts or {},
        finalizer=FINALIZER,
        extra_annotations=extra_annotations or {},
        placement=Placement(priority_class=priority_class),
    )


def all_containers(p: dict[str, Any]) -> list[dict[str, Any]]:
    spec = p["spec"]
    return list(spec.get("initContainers") or []) + list(spec["containers"])


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {var["name"]: var.get("value", "") for var in container["env"]}


def expand(text: str, defined: dict[str, str]) -> str:
    """expand does what the kubelet does to $(VAR): known names replaced, unknown left as is."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: defined.get(m[1], m[0]), text)


# --- identity -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replica", "index", "pattern"),
    [
        pytest.param(
            "trainer", 0, r"test-horovod-elastic-trainer-[a-z0-9]{5}-0", id="a trainer is named like the seed"
        ),
        pytest.param(
            "trainer", 2, r"test-horovod-elastic-trainer-[a-z0-9]{5}-2", id="the index ends the name"
        ),
        pytest.param("launcher", 0, r"test-horovod-elastic-launcher-[a-z0-9]{5}-0", id="the launcher too"),
    ],
)
def test_pod_name_hostname_and_subdomain(replica: str, index: int, pattern: str) -> None:
    p = pod(seed_job(), replica, index, generation=3)
    name = p["metadata"]["name"]
    assert re.fullmatch(pattern, name)
    assert name == naming.pod_name("test-horovod-elastic", UID, replica, index, 3)
    assert p["metadata"]["namespace"] == "default"
    assert p["spec"]["hostname"] == name
    assert p["spec"]["subdomain"] == SVC
    assert p["apiVersion"] == "v1"
    assert p["kind"] == "Pod"


def test_a_new_generation_gets_a_new_name_for_the_same_index() -> None:
    job = seed_job()
    assert pod(job, generation=0)["metadata"]["name"] != pod(job, generation=1)["metadata"]["name"]


def test_the_job_is_the_controlling_owner() -> None:
    assert pod(seed_job())["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kongming.cce.baiudbce.com/v1",
            "kind": "AITrainingJob",
            "name": "test-horovod-elastic",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


@pytest.mark.parametrize(
    ("template_labels", "priority", "expected"),
    [
        pytest.param(
            None,
            "normal",
            {
                api.LABEL_JOB: "test-horovod-elastic",
                api.LABEL_REPLICA: "trainer",
                api.LABEL_INDEX: "1",
                api.LABEL_GENERATION: "4",
                api.LABEL_PRIORITY: "normal",
            },
            id="the seed gets job, replica, index, generation and priority labels",
        ),
        pytest.param(
            {"team": "nlp"},
            None,
            {
                "team": "nlp",
                api.LABEL_JOB: "test-horovod-elastic",
                api.LABEL_REPLICA: "trainer",
                api.LABEL_INDEX: "1",
                api.LABEL_GENERATION: "4",
            },
            id="template labels are kept and no priority label without a priority",
        ),
        pytest.param(
            {api.LABEL_JOB: "someone-else", api.LABEL_INDEX: "9"},
            "high",
            {
                api.LABEL_JOB: "test-horovod-elastic",
                api.LABEL_REPLICA: "trainer",
                api.LABEL_INDEX: "1",
                api.LABEL_GENERATION: "4",
                api.LABEL_PRIORITY: "high",
            },
            id="our labels win over template labels of the same key",
        ),
    ],
)
def test_labels(
    template_labels: dict[str, str] | None, priority: str | None, expected: dict[str, str]
) -> None:
    job = with_template(
        seed_job(priority=priority), "trainer", lambda t: t["metadata"].update(labels=template_labels)
    )
    assert pod(job, index=1, generation=4)["metadata"]["labels"] == expected


@pytest.mark.parametrize(
    ("template_finalizers", "expected"),
    [
        pytest.param(None, [FINALIZER], id="the operator's finalizer is added"),
        pytest.param(["x/y"], ["x/y", FINALIZER], id="template finalizers are kept"),
        pytest.param([FINALIZER], [FINALIZER], id="the finalizer is not added twice"),
    ],
)
def test_finalizers(template_finalizers: list[str] | None, expected: list[str]) -> None:
    job = with_template(seed_job(), "trainer", lambda t: t["metadata"].update(finalizers=template_finalizers))
    assert pod(job)["metadata"]["finalizers"] == expected


@pytest.mark.parametrize(
    ("template_annotations", "extra", "expected"),
    [
        pytest.param(None, {}, None, id="no annotations when nobody asks for any"),
        pytest.param({"a": "1"}, {}, {"a": "1"}, id="template annotations are kept"),
        pytest.param(
            {"a": "1", "b": "2"}, {"b": "3"}, {"a": "1", "b": "3"}, id="the caller's annotations win"
        ),
    ],
)
def test_annotations(
    template_annotations: dict[str, str] | None, extra: dict[str, str], expected: dict[str, str] | None
) -> None:
    job = with_template(
        seed_job(), "trainer", lambda t: t["metadata"].update(annotations=template_annotations)
    )
    assert pod(job, extra_annotations=extra)["metadata"].get("annotations") == expected


def test_template_metadata_that_would_clash_is_dropped() -> None:
    job = with_template(
        seed_job(), "trainer", lambda t: t["metadata"].update(name="x", generateName="y-", namespace="other")
    )
    meta = pod(job)["metadata"]
    assert "generateName" not in meta
    assert "creationTimestamp" not in meta
    assert meta["namespace"] == "default"
    assert meta["name"].startswith("test-horovod-elastic-trainer-")


# --- spec ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template_policy",
    [
        pytest.param("Never", id="Never stays Never"),
        pytest.param("OnFailure", id="OnFailure is forced to Never"),
        pytest.param("Always", id="Always is forced to Never"),
        pytest.param(None, id="an unset restartPolicy becomes Never"),
    ],
)
def test_restart_policy_is_forced_to_never(template_policy: str | None) -> None:
    job = with_template(seed_job(), "launcher", lambda t: t["spec"].update(restartPolicy=template_policy))
    assert pod(job, "launcher")["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("replica", "field", "value"),
    [
        pytest.param("trainer", "schedulerName", "volcano", id="the trainer's schedulerName passes through"),
        pytest.param(
            "launcher", "schedulerName", "volcano", id="the launcher's schedulerName passes through"
        ),
        pytest.param("launcher", "dnsPolicy", "ClusterFirstWithHostNet", id="dnsPolicy passes through"),
        pytest.param("trainer", "terminationGracePeriodSeconds", 300, id="the grace period passes through"),
        pytest.param("launcher", "securityContext", {}, id="securityContext passes through"),
    ],
)
def test_pod_fields_pass_through(replica: str, field: str, value: Any) -> None:
    assert pod(seed_job(), replica)["spec"][field] == value


@pytest.mark.parametrize(
    ("priority_class", "template_spec", "expected_class", "expected_priority"),
    [
        pytest.param("aitj-normal", {}, "aitj-normal", None, id="a mapped priority class is set"),
        pytest.param(
            "aitj-high",
            {"priorityClassName": "mine", "priority": 7},
            "aitj-high",
            None,
            id="the mapped class replaces the template's, and its stale priority number goes",
        ),
        pytest.param(
            None, {"priorityClassName": "mine"}, "mine", None, id="without a mapping the template's stays"
        ),
        pytest.param(None, {}, None, None, id="without either there is no priority class"),
    ],
)
def test_priority_class(
    priority_class: str | None,
    template_spec: dict[str, Any],
    expected_class: str | None,
    expected_priority: int | None,
) -> None:
    job = with_template(seed_job(), "trainer", lambda t: t["spec"].update(template_spec))
    spec = pod(job, priority_class=priority_class)["spec"]
    assert spec.get("priorityClassName") == expected_class
    assert spec.get("priority") == expected_priority


def _required_terms(p: dict[str, Any]) -> list[dict[str, Any]]:
    affinity = p["spec"].get("affinity", {}).get("nodeAffinity", {})
    return list(
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    )


@pytest.mark.parametrize(
    ("placement", "where", "expected"),
    [
        pytest.param(
            Placement(avoid_nodes=("n2", "n1")),
            lambda p: _required_terms(p),
            [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2", "n1"]}]}],
            id="nodes to avoid by name: a metadata.name NotIn field",
        ),
        pytest.param(
            Placement(exclude_hostnames=("h2", "h1", "h2")),
            lambda p: _required_terms(p),
            [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["h1", "h2"]}
                    ]
                }
            ],
            id="hostnames to exclude: a kubernetes.io/hostname NotIn expression, sorted, once each",
        ),
        pytest.param(
            Placement(volcano_pod_group="pg"),
            lambda p: p["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name"),
            "pg",
            id="the Volcano PodGroup: the group-name annotation",
        ),
        pytest.param(
            Placement(gang_pod_group="job-gang-1"),
            lambda p: p["spec"].get("schedulingGroup"),
            {"podGroupName": "job-gang-1"},
            id="the native gang's PodGroup: spec.schedulingGroup",
        ),
        pytest.param(
            Placement(priority_class="aitj-high"),
            lambda p: p["spec"].get("priorityClassName"),
            "aitj-high",
            id="the priority class",
        ),
    ],
)
def test_one_placement_shapes_where_the_pod_goes(
    placement: Placement, where: Callable[[dict[str, Any]], Any], expected: Any
) -> None:
    job = with_template(seed_job(), "trainer", lambda t: t["spec"].update(schedulerName="volcano"))
    name = naming.pod_name(job.name, job.uid, "trainer", 0, 0)
    identity = PodIdentity(job.spec.replica("trainer"), 0, 0, name)
    anywhere = render_pod(job, identity, {}, finalizer=FINALIZER)
    placed = render_pod(job, identity, {}, finalizer=FINALIZER, placement=placement)
    assert where(placed) == expected
    assert where(anywhere) != expected  # the default Placement asks for none of it


def test_the_template_is_not_modified() -> None:
    job = seed_job()
    before = copy.deepcopy([r.template for r in job.spec.replicas])
    for replica in ("trainer", "launcher"):
        pod(job, replica, priority_class="aitj-normal", extra_annotations={"a": "b"})
    assert [r.template for r in job.spec.replicas] == before


def test_rendering_twice_gives_the_same_pod() -> None:
    job = seed_job()
    assert pod(job, "launcher", 0, 2, {"launcher": 1}) == pod(job, "launcher", 0, 2, {"launcher": 1})


@pytest.mark.parametrize(
    ("name", "replica"),
    [
        pytest.param("j" * 50, "trainer", id="a pod name longer than a hostname may be is refused"),
        pytest.param("job.with.dots", "trainer", id="a job name with dots cannot be a hostname"),
    ],
)
def test_names_that_cannot_be_dns_labels_are_refused(name: str, replica: str) -> None:
    job = dataclasses.replace(seed_job(), name=name)
    with pytest.raises(ValueError, match="DNS"):
        pod(job, replica)


# --- environment --------------------------------------------------------------------------------

OUR_NAMES = [
    "TRAININGJOB_NAME",
    "TRAININGJOB_NAMESPACE",
    "TRAININGJOB_FRAMEWORK",
    "TRAININGJOB_REPLICA_NAME",
    "TRAININGJOB_REPLICA_TYPE",
    "TRAININGJOB_REPLICA_INDEX",
    "TRAININGJOB_REPLICA_RESTARTCOUNT",
    "TRAININGJOB_SERVICE",
    "TRAININGJOB_TRAINER_REPLICAS",
    "TRAININGJOB_TRAINER_MIN_REPLICAS",
    "TRAININGJOB_TRAINER_MAX_REPLICAS",
    "TRAININGJOB_TRAINER_SLOTS",
    "TRAININGJOB_LAUNCHER_REPLICAS",
    "TRAININGJOB_LAUNCHER_MIN_REPLICAS",
    "TRAININGJOB_LAUNCHER_MAX_REPLICAS",
    "TRAININGJOB_LAUNCHER_SLOTS",
    # plugin.discovery (the seed has it): Volcano's (aitj.core.render.volcano)
    "VC_TRAINER_HOSTS",
    "VC_TRAINER_NUM",
    "VC_LAUNCHER_HOSTS",
    "VC_LAUNCHER_NUM",
]


@pytest.mark.parametrize(
    ("replica", "ssh", "containers"),
    [
        pytest.param("launcher", True, ["aitj-ssh-setup", "job-barrier", "aitj-0"], id="launcher with ssh"),
        pytest.param("launcher", False, ["job-barrier", "aitj-0"], id="launcher without ssh"),
        pytest.param("trainer", True, ["aitj-ssh-setup", "aitj-0"], id="trainer with ssh"),
        pytest.param("trainer", False, ["aitj-0"], id="trainer without ssh"),
    ],
)
def test_every_container_gets_our_environment_first(replica: str, ssh: bool, containers: list[str]) -> None:
    p = pod(seed_job(ssh=ssh), replica)
    assert [c["name"] for c in all_containers(p)] == containers
    for container in all_containers(p):
        assert [var["name"] for var in container["env"][: len(OUR_NAMES)]] == OUR_NAMES, container["name"]


@pytest.mark.parametrize(
    ("replica", "index", "restart_counts", "expected"),
    [
        pytest.param(
            "trainer",
            2,
            {"trainer": 5, "launcher": 1},
            {
                "TRAININGJOB_NAME": "test-horovod-elastic",
                "TRAININGJOB_NAMESPACE": "default",
                "TRAININGJOB_FRAMEWORK": "horovod",
                "TRAININGJOB_REPLICA_NAME": "trainer",
                "TRAININGJOB_REPLICA_TYPE": "worker",
                "TRAININGJOB_REPLICA_INDEX": "2",
                "TRAININGJOB_REPLICA_RESTARTCOUNT": "5",
                "TRAININGJOB_SERVICE": SVC,
                "TRAININGJOB_TRAINER_REPLICAS": "3",
                "TRAININGJOB_TRAINER_MIN_REPLICAS": "1",
                "TRAININGJOB_TRAINER_MAX_REPLICAS": "5",
                "TRAININGJOB_TRAINER_SLOTS": "1",
                "TRAININGJOB_LAUNCHER_REPLICAS": "1",
                "TRAININGJOB_LAUNCHER_MIN_REPLICAS": "1",
                "TRAININGJOB_LAUNCHER_MAX_REPLICAS": "1",
                "TRAININGJOB_LAUNCHER_SLOTS": "1",
            },
            id="a trainer's values, with its own replica's restart count",
        ),
        pytest.param(
            "launcher",
            0,
            {"trainer": 5},
            {
                "TRAININGJOB_REPLICA_NAME": "launcher",
                "TRAININGJOB_REPLICA_TYPE": "master",
                "TRAININGJOB_REPLICA_INDEX": "0",
                "TRAININGJOB_REPLICA_RESTARTCOUNT": "0",
            },
            id="a replica missing from the restart counts has restarted 0 times",
        ),
    ],
)
def test_environment_values(
    replica: str, index: int, restart_counts: dict[str, int], expected: dict[str, str]
) -> None:
    for container in all_containers(pod(seed_job(), replica, index, restart_counts=restart_counts)):
        env = env_of(container)
        assert {k: env[k] for k in expected} == expected


def test_slots_in_the_environment_follow_the_gpu_request() -> None:
    def four_gpus(t: dict[str, Any]) -> None:
        t["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 4}}

    job = with_template(seed_job(), "trainer", four_gpus)
    assert env_of(pod(job, "launcher")["spec"]["containers"][0])["TRAININGJOB_TRAINER_SLOTS"] == "4"


def test_the_seed_init_container_args_resolve() -> None:
    barrier = next(c for c in all_containers(pod(seed_job(), "launcher")) if c["name"] == "job-barrier")
    defined: dict[str, str] = {}
    for var in barrier["env"]:
        if "value" in var:  # not the VC_ variables, read from the ConfigMap (valueFrom)
            defined[var["name"]] = expand(var["value"], defined)
    args = [expand(arg, defined) for arg in barrier["args"]]
    assert "--name=test-horovod-elastic" in args
    assert "--namespace=default" in args
    assert not any("$(" in arg for arg in args)


def test_the_seed_container_with_null_env_gets_ours_only() -> None:
    launcher = pod(seed_job(ssh=False), "launcher")["spec"]["containers"][0]
    assert [var["name"] for var in launcher["env"]] == OUR_NAMES


def test_user_env_follows_ours_unchanged() -> None:
    trainer = pod(seed_job(), "trainer")["spec"]["containers"][0]
    assert trainer["env"][len(OUR_NAMES) :] == [
        {"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"},
    ]


def test_a_name_the_user_sets_is_theirs() -> None:
    def set_name(t: dict[str, Any]) -> None:
        t["spec"]["containers"][0]["env"] = [
            {"name": "A", "value": "1"},
            {"name": "TRAININGJOB_NAME", "value": "mine"},
        ]

    env = pod(with_template(seed_job(), "trainer", set_name), "trainer")["spec"]["containers"][0]["env"]
    names = [var["name"] for var in env]
    assert names.count("TRAININGJOB_NAME") == 1
    assert env[-2:] == [{"name": "A", "value": "1"}, {"name": "TRAININGJOB_NAME", "value": "mine"}]
    assert names[0] == "TRAININGJOB_NAMESPACE"


# --- plugins ------------------------------------------------------------------------------------


def mounts_at(container: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [m for m in container.get("volumeMounts") or [] if m["mountPath"] == path]


def volume(p: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((v for v in p["spec"].get("volumes") or [] if v["name"] == name), None)


SSH_MOUNT = {"name": "aitj-ssh", "mountPath": "/root/.ssh", "subPath": "ssh"}


def with_sidecar(t: dict[str, Any]) -> None:
    t["spec"]["containers"].append({"name": "log-shipper", "image": "fluent-bit"})
    t["spec"].setdefault("initContainers", []).append({"name": "fetch-data", "image": "busybox"})


@pytest.mark.parametrize(
    ("replica", "container", "mounted"),
    [
        pytest.param("launcher", "aitj-0", True, id="the launcher's app container runs ssh: it gets the key"),
        pytest.param("trainer", "aitj-0", True, id="a trainer's app container runs sshd: it gets the key"),
        pytest.param("launcher", "job-barrier", False, id="the launcher's own init container does not"),
        pytest.param("launcher", "log-shipper", False, id="a sidecar of the launcher does not"),
        pytest.param("trainer", "log-shipper", False, id="a sidecar of a trainer does not"),
        pytest.param("trainer", "fetch-data", False, id="a trainer's own init container does not"),
        pytest.param("trainer", "aitj-ssh-setup", False, id="the init step has the Secret, not /root/.ssh"),
    ],
)
def test_ssh_puts_the_key_only_where_ssh_runs(replica: str, container: str, mounted: bool) -> None:
    p = pod(with_template(seed_job(), replica, with_sidecar), replica)
    (found,) = [c for c in all_containers(p) if c["name"] == container]
    assert mounts_at(found, "/root/.ssh") == ([SSH_MOUNT] if mounted else [])


@pytest.mark.parametrize("replica", ["trainer", "launcher"])
def test_ssh_volumes_are_the_secret_and_the_prepared_directory(replica: str) -> None:
    p = pod(seed_job(), replica)
    assert all_containers(p)[0]["name"] == "aitj-ssh-setup"
    assert volume(p, "aitj-ssh-secret") == {
        "name": "aitj-ssh-secret",
        "secret": {"secretName": "test-horovod-elastic-ssh", "defaultMode": 0o400},
    }
    assert volume(p, "aitj-ssh") == {"name": "aitj-ssh", "emptyDir": {"medium": "Memory"}}
    assert volume(p, "cache-volume") is not None


@pytest.mark.parametrize(
    ("replica", "expected_resources", "pull"),
    [
        pytest.param(
            "launcher",
            {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
            "Always",
            id="the launcher's init step takes its cpu and memory",
        ),
        pytest.param("trainer", None, "Always", id="the trainer's init step takes no GPU shares"),
    ],
)
def test_the_ssh_init_step_runs_the_app_image(
    replica: str, expected_resources: dict[str, Any] | None, pull: str
) -> None:
    p = pod(seed_job(), replica)
    init = p["spec"]["initContainers"][0]
    assert init["image"] == p["spec"]["containers"][0]["image"]
    assert init["imagePullPolicy"] == pull
    assert init.get("resources") == expected_resources
    assert init["command"][:2] == ["/bin/sh", "-c"]
    assert mounts_at(init, "/root/.ssh") == []


def test_without_ssh_there_is_no_ssh_anything() -> None:
    p = pod(seed_job(ssh=False), "trainer")
    assert "initContainers" not in p["spec"]
    assert volume(p, "aitj-ssh") is None
    assert volume(p, "aitj-ssh-secret") is None
    assert mounts_at(p["spec"]["containers"][0], "/root/.ssh") == []


def test_a_user_mount_at_root_ssh_is_left_alone() -> None:
    def own_ssh(t: dict[str, Any]) -> None:
        t["spec"]["containers"][0]["volumeMounts"].append({"name": "mine", "mountPath": "/root/.ssh/"})

    container = pod(with_template(seed_job(), "trainer", own_ssh))["spec"]["containers"][0]
    assert [m["name"] for m in container["volumeMounts"]] == ["cache-volume", "mine", "aitj-volcano-hosts"]


@pytest.mark.parametrize(
    ("replica", "discovery", "mounted"),
    [
        pytest.param("launcher", True, True, id="the launcher gets /etc/edl"),
        pytest.param("trainer", True, False, id="a trainer does not"),
        pytest.param("launcher", False, False, id="nobody does without the plugin"),
    ],
)
def test_discovery_mount(replica: str, discovery: bool, mounted: bool) -> None:
    p = pod(seed_job(discovery=discovery), replica)
    expected = [{"name": "aitj-discovery", "mountPath": "/etc/edl", "readOnly": True}] if mounted else []
    for container in all_containers(p):
        if container["name"] != "aitj-ssh-setup":
            assert mounts_at(container, "/etc/edl") == expected, container["name"]
    expected_volume = (
        {
            "name": "aitj-discovery",
            "configMap": {"name": "test-horovod-elastic-discovery", "defaultMode": 0o755},
        }
        if mounted
        else None
    )
    assert volume(p, "aitj-discovery") == expected_volume


# --- service ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(("apiVersion",), "v1", id="a core v1 object"),
        pytest.param(("kind",), "Service", id="a Service"),
        pytest.param(("metadata", "name"), SVC, id="named after the job, the pods' subdomain"),
        pytest.param(("metadata", "namespace"), "default", id="in the job's namespace"),
        pytest.param(
            ("metadata", "labels"), {api.LABEL_JOB: "test-horovod-elastic"}, id="labelled with the job"
        ),
        pytest.param(("spec", "clusterIP"), "None", id="headless"),
        pytest.param(
            ("spec", "selector"), {api.LABEL_JOB: "test-horovod-elastic"}, id="selecting the job's pods"
        ),
        pytest.param(("spec", "publishNotReadyAddresses"), True, id="resolving pods before they are Ready"),
    ],
)
def test_service(path: tuple[str, ...], expected: Any) -> None:
    value: Any = render_service(seed_job())
    for key in path:
        value = value[key]
    assert value == expected


def test_service_is_owned_by_the_job_and_selects_what_pods_carry() -> None:
    job = seed_job()
    svc = render_service(job)
    assert svc["metadata"]["ownerReferences"][0]["uid"] == UID
    assert svc["metadata"]["name"] == pod(job)["spec"]["subdomain"]
    labels = pod(job)["metadata"]["labels"]
    assert all(labels[k] == v for k, v in svc["spec"]["selector"].items())


def test_a_job_name_that_cannot_name_a_service_is_refused() -> None:
    with pytest.raises(ValueError, match="DNS-1035"):
        render_service(dataclasses.replace(seed_job(), name="1-starts-with-a-digit"))
