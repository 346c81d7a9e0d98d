"""plugin.ssh and plugin.discovery: the Secret, the ConfigMap, the ssh init step, slots."""

from __future__ import annotations

import base64
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aitj.core import api, naming
from aitj.core.api import parse_job
from aitj.core.render import (
    DISCOVER_HOSTS_SCRIPT,
    hosts_file,
    is_gpu_resource,
    render_discovery_configmap,
    render_ssh_secret,
    slots_for,
    ssh_config_file,
    ssh_setup_script,
)
from tests.seeds import SEED_MANIFEST as SEED

UID = "0b6e1c3a-5d2f-4e8b-9a71-2c4d6f8e0a13"
PRIVATE = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"
PUBLIC = "ssh-rsa AAAAB3NzaC1yc2E aitj"


def job(name: str = "test-horovod-elastic", namespace: str = "default") -> api.Job:
    spec = api.JobSpec(
        framework_type="horovod",
        fault_tolerant=True,
        complete_policy=api.Policy.ANY,
        fail_policy=api.Policy.ANY,
        clean_pod_policy=api.CleanPodPolicy.NONE,
        ssh=True,
        discovery=True,
        priority="normal",
        time_limit=None,
        replicas=(),
    )
    return api.Job(namespace=namespace, name=name, uid=UID, generation=1, spec=spec, status=api.JobStatus())


def seed_template(replica: str) -> dict[str, Any]:
    template: dict[str, Any] = yaml.safe_load(SEED.read_text())["spec"]["replicaSpecs"][replica]["template"]
    return template


def container(resources: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {"name": name, "image": "i", "resources": resources}


def owner_is_the_job(obj: dict[str, Any]) -> bool:
    refs = obj["metadata"]["ownerReferences"]
    return len(refs) == 1 and refs[0]["uid"] == UID and refs[0]["controller"] is True


# --- slots --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "slots"),
    [
        pytest.param(seed_template("trainer"), 1, id="the seed trainer has one v100_32g_cgpu card"),
        pytest.param(seed_template("launcher"), 1, id="the seed launcher has no GPU, so 1"),
        pytest.param(
            {"spec": {"containers": [container({"limits": {"nvidia.com/gpu": 4}})]}},
            4,
            id="nvidia.com/gpu limits count when there is no request",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [
                        container({"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}})
                    ]
                }
            },
            2,
            id="a request and a limit of the same GPUs count once",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [
                        container({"limits": {"nvidia.com/gpu": 2}}, "a"),
                        container({"limits": {"nvidia.com/gpu": 3}}, "b"),
                    ]
                }
            },
            5,
            id="GPUs add up over containers",
        ),
        pytest.param(
            {"spec": {"containers": [container({"requests": {"baidu.com/a800_80g_cgpu": "8"}})]}},
            8,
            id="any baidu.com model cgpu counts",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [
                        container(
                            {
                                "limits": {
                                    "baidu.com/v100_32g_cgpu_core": "50",
                                    "baidu.com/v100_32g_cgpu_memory": "16",
                                }
                            }
                        )
                    ]
                }
            },
            1,
            id="cgpu core and memory shares are not cards",
        ),
        pytest.param(
            {
                "spec": {
                    "initContainers": [container({"limits": {"nvidia.com/gpu": 8}}, "init")],
                    "containers": [container({"limits": {"cpu": "4"}})],
                }
            },
            1,
            id="init containers do not count",
        ),
        pytest.param(
            {"containers": [container({"limits": {"nvidia.com/gpu": 2}})]},
            2,
            id="a bare pod spec is accepted",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "resources": None}]}}, 1, id="null resources are none"
        ),
        pytest.param({"spec": {}}, 1, id="no containers at all is 1"),
    ],
)
def test_slots_for(pod: dict[str, Any], slots: int) -> None:
    assert slots_for(pod) == slots


@pytest.mark.parametrize(
    ("name", "counted"),
    [
        pytest.param("nvidia.com/gpu", True, id="nvidia.com/gpu is a GPU"),
        pytest.param("baidu.com/v100_32g_cgpu", True, id="baidu.com/v100_32g_cgpu is a GPU"),
        pytest.param("baidu.com/v100_32g_cgpu_core", False, id="_cgpu_core is not"),
        pytest.param("baidu.com/v100_32g_cgpu_memory", False, id="_cgpu_memory is not"),
        pytest.param("example.com/v100_cgpu", False, id="another domain's cgpu is not"),
        pytest.param("nvidia.com/gpu.shared", False, id="a look-alike name is not"),
        pytest.param("cpu", False, id="cpu is not"),
    ],
)
def test_is_gpu_resource(name: str, counted: bool) -> None:
    assert is_gpu_resource(name) is counted


@pytest.mark.parametrize(
    "quantity",
    [
        pytest.param("500m", id="milli GPUs"),
        pytest.param("1.5", id="fractions"),
        pytest.param("", id="empty"),
    ],
)
def test_a_gpu_quantity_that_is_not_whole_is_refused(quantity: str) -> None:
    with pytest.raises(ValueError, match="whole number"):
        slots_for({"spec": {"containers": [container({"limits": {"nvidia.com/gpu": quantity}})]}})


# --- discovery ConfigMap ------------------------------------------------------------------------


def test_discovery_configmap() -> None:
    hosts = [
        (naming.pod_host("test-horovod-elastic", f"test-horovod-elastic-trainer-q7gmp-{i}"), 1)
        for i in range(2)
    ]
    cm = render_discovery_configmap(job(), hosts)
    assert cm["apiVersion"] == "v1"
    assert cm["kind"] == "ConfigMap"
    assert cm["metadata"]["name"] == "test-horovod-elastic-discovery"
    assert cm["metadata"]["namespace"] == "default"
    assert cm["metadata"]["labels"] == {api.LABEL_JOB: "test-horovod-elastic"}
    assert owner_is_the_job(cm)
    assert cm["data"] == {
        "discover_hosts.sh": DISCOVER_HOSTS_SCRIPT,
        "hosts": (
            "test-horovod-elastic-trainer-q7gmp-0.test-horovod-elastic:1\n"
            "test-horovod-elastic-trainer-q7gmp-1.test-horovod-elastic:1\n"
        ),
        "wanted": "0\n",  # this job has no replicas
    }


def test_the_configmap_says_how_many_hosts_the_job_asks_for_whatever_runs_now() -> None:
    seed = parse_job(yaml.safe_load(SEED.read_text()))  # 3 trainers (workers) and a launcher (master)
    assert render_discovery_configmap(seed, [])["data"]["wanted"] == "3\n"
    manifest = yaml.safe_load(SEED.read_text())
    manifest["spec"]["replicaSpecs"]["trainer"]["replicas"] = 5
    assert render_discovery_configmap(parse_job(manifest), [("a.b", 1)])["data"]["wanted"] == "5\n"


def test_the_script_is_the_same_whatever_the_hosts() -> None:
    a = render_discovery_configmap(job(), [])
    b = render_discovery_configmap(job(), [("x.y", 8)])
    assert a["data"]["discover_hosts.sh"] == b["data"]["discover_hosts.sh"]
    assert DISCOVER_HOSTS_SCRIPT.startswith("#!/bin/sh\n")


@pytest.mark.parametrize(
    ("hosts", "text"),
    [
        pytest.param([], "", id="no hosts is an empty file"),
        pytest.param([("b.s", 2), ("a.s", 1)], "b.s:2\na.s:1\n", id="hosts keep the caller's order"),
    ],
)
def test_hosts_file(hosts: list[tuple[str, int]], text: str) -> None:
    assert hosts_file(hosts) == text


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        pytest.param([("", 1)], "non-empty", id="an empty host is refused"),
        pytest.param([("a:b", 1)], "':'", id="a host with a colon is refused"),
        pytest.param([("a b", 1)], "whitespace", id="a host with a space is refused"),
        pytest.param([("a\n", 1)], "whitespace", id="a host with a newline is refused"),
        pytest.param([("a", 1), ("a", 2)], "twice", id="a host listed twice is refused"),
        pytest.param([("a", 0)], "slots", id="zero slots are refused"),
        pytest.param([("a", True)], "slots", id="a boolean is not a slot count"),
    ],
)
def test_bad_hosts_are_refused(hosts: list[tuple[str, Any]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        hosts_file(hosts)


# --- ssh Secret ---------------------------------------------------------------------------------


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_ssh_secret() -> None:
    secret = render_ssh_secret(job(), PRIVATE, PUBLIC)
    assert secret["apiVersion"] == "v1"
    assert secret["kind"] == "Secret"
    assert secret["type"] == "Opaque"
    assert secret["immutable"] is True
    assert secret["metadata"]["name"] == "test-horovod-elastic-ssh"
    assert secret["metadata"]["labels"] == {api.LABEL_JOB: "test-horovod-elastic"}
    assert owner_is_the_job(secret)
    assert decoded(secret) == {
        "id_rsa": PRIVATE,
        "id_rsa.pub": PUBLIC + "\n",
        "authorized_keys": PUBLIC + "\n",
        "config": ssh_config_file(job()),
    }


@pytest.mark.parametrize(
    ("private", "public"),
    [
        pytest.param("not a key", PUBLIC, id="a private key that is not PEM is refused"),
        pytest.param(PRIVATE, "AAAAB3 no type", id="a public key without its type is refused"),
        pytest.param(PRIVATE, PUBLIC + "\n" + PUBLIC, id="two public keys are refused"),
    ],
)
def test_bad_key_material_is_refused(private: str, public: str) -> None:
    with pytest.raises(ValueError, match="ssh"):
        render_ssh_secret(job(), private, public)


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
@pytest.mark.parametrize(
    ("option", "value"),
    [
        pytest.param("stricthostkeychecking", "false", id="host keys are not checked"),
        pytest.param("userknownhostsfile", "/dev/null", id="host keys are not remembered"),
        pytest.param("loglevel", "ERROR", id="no 'Permanently added' noise in the launcher's log"),
        pytest.param("identityfile", "/root/.ssh/id_rsa", id="the job's key is offered"),
        pytest.param("serveraliveinterval", "5", id="a session whose worker is gone is asked after"),
        pytest.param("serveralivecountmax", "3", id="and given up 15 s on"),
        pytest.param("connecttimeout", "10", id="a connect to a vanished address gives up"),
    ],
)
def test_openssh_reads_the_config_as_meant(tmp_path: Path, option: str, value: str) -> None:
    config = tmp_path / "config"
    config.write_text(ssh_config_file(job()))
    out = subprocess.run(
        ["ssh", "-F", str(config), "-G", "worker-0.svc"], capture_output=True, text=True, check=True
    ).stdout
    assert f"{option} {value}" in out.splitlines()


# --- the ssh init step, run for real on a temporary directory -----------------------------------


def run_setup(tmp_path: Path, image_files: dict[str, str] | None) -> Path:
    src, dst, img = tmp_path / "secret", tmp_path / "volume" / "ssh", tmp_path / "image-ssh"
    src.mkdir()
    for key, text in decoded(render_ssh_secret(job(), PRIVATE, PUBLIC)).items():
        (src / key).write_text(text)
        (src / key).chmod(0o400)
    if image_files is not None:
        img.mkdir()
        for key, text in image_files.items():
            (img / key).write_text(text)
    script = ssh_setup_script(str(src), str(dst), str(img))
    for _ in range(2):  # a rerun must leave the same result
        subprocess.run(["/bin/sh", "-c", script], check=True, capture_output=True)
    return dst


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    "image_files",
    [pytest.param(None, id="an image without /root/.ssh"), pytest.param({}, id="an image with an empty one")],
)
def test_ssh_setup_writes_files_with_openssh_modes(
    tmp_path: Path, image_files: dict[str, str] | None
) -> None:
    dst = run_setup(tmp_path, image_files)
    assert {p.name: mode(p) for p in dst.iterdir()} == {
        "id_rsa": 0o600,
        "id_rsa.pub": 0o644,
        "authorized_keys": 0o600,
        "config": 0o600,
    }
    assert mode(dst) == 0o700
    assert (dst / "id_rsa").read_text() == PRIVATE
    assert (dst / "authorized_keys").read_text() == PUBLIC + "\n"
    assert (dst / "config").read_text() == ssh_config_file(job())


def test_ssh_setup_keeps_what_the_image_had(tmp_path: Path) -> None:
    image = {
        "authorized_keys": "ssh-ed25519 AAAAC3 admin\n",
        "config": "Host bastion\n    Port 2222\n",
        "known_hosts": "bastion ssh-ed25519 AAAAC3\n",
        "id_rsa": "the image's own key",
    }
    dst = run_setup(tmp_path, image)
    assert (dst / "authorized_keys").read_text() == PUBLIC + "\n" + image["authorized_keys"]
    assert (dst / "config").read_text() == ssh_config_file(job()) + image["config"]
    assert (dst / "known_hosts").read_text() == image["known_hosts"]
    assert (dst / "id_rsa").read_text() == PRIVATE
