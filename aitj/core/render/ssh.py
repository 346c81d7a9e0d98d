"""plugin.ssh: one key pair per job, so the launcher can ``ssh`` into every worker.

Where the files end up, and why an init step:

- The Secret ``<job>-ssh`` holds ``id_rsa``, ``id_rsa.pub``, ``authorized_keys`` and ``config``.
- Every pod gets an init container, ``aitj-ssh-setup``, run first, from the image of the pod's
  first container (so no extra image, and the tools are whatever that image has: ``sh``, ``cp``,
  ``cat``, ``chmod``). It copies the Secret into a memory-backed emptyDir as a ``.ssh``
  directory with OpenSSH's modes (directory 0700, key, authorized_keys and config 0600).
- The pod's first app container (the one whose image the init step runs, where the launcher's
  ``ssh`` and a worker's ``sshd`` run) mounts that directory at ``/root/.ssh``. No other
  container does: a sidecar (a log shipper, a proxy) or a user init container has no use for the
  job's private key, and each mount would be one more process able to read it.

A Secret cannot be mounted at ``/root/.ssh`` directly: its mount point is world-writable
(``drwxrwxrwt``), and sshd's StrictModes (on by default) then refuses ``authorized_keys``
("bad ownership or modes for directory /root/.ssh"); with ``fsGroup`` set the key also turns
group-readable and ``ssh`` ignores it ("UNPROTECTED PRIVATE KEY FILE"). Copying fixes both
without touching the image's sshd_config.

What the image already had in ``/root/.ssh`` is kept: it is copied first, our key files
replace same-named ones, our ``authorized_keys`` line is put before the image's lines, and our
``config`` before the image's (ssh_config takes the first value it reads, so ours wins for
the options it sets and the image's other options still apply).
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Mapping
from typing import Any

from aitj.core import api, naming
from aitj.core.render._meta import object_meta

SSH_DIR = "/root/.ssh"  # the plugin assumes the job's processes run as root, as Horovod images do
SSH_INIT_CONTAINER = "aitj-ssh-setup"
SSH_SECRET_VOLUME = "aitj-ssh-secret"
SSH_VOLUME = "aitj-ssh"
SSH_SUBPATH = "ssh"  # a directory the init step creates and owns, so its mode is ours to set
SSH_SECRET_MOUNT = "/etc/aitj/ssh-secret"  # in the init container only
SSH_VOLUME_MOUNT = "/etc/aitj/ssh-volume"  # in the init container only

PRIVATE_KEY = "id_rsa"
PUBLIC_KEY = "id_rsa.pub"
AUTHORIZED_KEYS = "authorized_keys"
CONFIG = "config"

# The ssh client's liveness checks (ssh_config_file): a silent server is given up after
# SERVER_ALIVE_INTERVAL * SERVER_ALIVE_COUNT seconds (SERVER_ALIVE), a connect after CONNECT_TIMEOUT.
SERVER_ALIVE_INTERVAL = 5
SERVER_ALIVE_COUNT = 3
SERVER_ALIVE = SERVER_ALIVE_INTERVAL * SERVER_ALIVE_COUNT
CONNECT_TIMEOUT = 10

# The app's CPU and memory requests are copied to the init container so a namespace
# ResourceQuota admits the pod; GPUs and other extended resources are not.
_INIT_RESOURCES = ("cpu", "memory")


def ssh_config_file(job: api.Job) -> str:
    """ssh_config_file is the ssh client config: trust any host key, use the job's key.

    Host keys are not checked, and not remembered: a replacement pod comes back with a new host
    key and often a recycled IP, which a known_hosts file would turn into a refusal.

    A session whose worker pod is gone ends within SERVER_ALIVE seconds: the launcher runs each
    worker in an ssh session (horovodrun, mpiexec, our torchrun launcher), and learns the worker
    ended only when that session does. A pod deleted on another node can vanish without its
    end reaching the launcher (its network is torn down a few milliseconds after its processes
    are killed, and the last packet, queued behind a neighbour lookup, goes with it: seen on real
    nodes, 2026-11-28, a worker the recovery watchdog restarted that horovodrun's driver waited
    for until the next fault). A connect to an address that no longer answers gives up after
    CONNECT_TIMEOUT seconds, not the kernel's two minutes.
    """
    return (
        f"# Written by the aitj operator for job {job.namespace}/{job.name} (plugin.ssh).\n"
        "Host *\n"
        "    StrictHostKeyChecking no\n"
        "    UserKnownHostsFile /dev/null\n"
        "    LogLevel ERROR\n"
        f"    IdentityFile {SSH_DIR}/{PRIVATE_KEY}\n"
        f"    ServerAliveInterval {SERVER_ALIVE_INTERVAL}\n"
        f"    ServerAliveCountMax {SERVER_ALIVE_COUNT}\n"
        f"    ConnectTimeout {CONNECT_TIMEOUT}\n"
    )


def render_ssh_secret(job: api.Job, private_pem: str, public_openssh: str) -> dict[str, Any]:
    """render_ssh_secret returns the job's immutable ssh Secret from a key pair.

    The pair comes from ``aitj.controller.sshkeys.generate_keypair``; it is an input so that rendering
    stays pure. The Secret is immutable: a job keeps one key for its whole life.
    """
    if "PRIVATE KEY-----" not in private_pem:
        raise ValueError("ssh private key must be PEM text (-----BEGIN ... PRIVATE KEY-----)")
    public = public_openssh.strip()
    if not public.startswith("ssh-") or "\n" in public:
        raise ValueError("ssh public key must be one OpenSSH line (ssh-rsa AAAA... [comment])")
    files = {
        PRIVATE_KEY: private_pem if private_pem.endswith("\n") else private_pem + "\n",
        PUBLIC_KEY: public + "\n",
        AUTHORIZED_KEYS: public + "\n",
        CONFIG: ssh_config_file(job),
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(job, naming.ssh_secret_name(job.name)),
        "type": "Opaque",
        "immutable": True,
        "data": {key: base64.b64encode(text.encode()).decode("ascii") for key, text in files.items()},
    }


def ssh_setup_script(secret_dir: str, ssh_dir: str, image_ssh_dir: str) -> str:
    """ssh_setup_script is the init step's POSIX sh program; idempotent, so a rerun is harmless.

    Parameters are paths so tests can run it on a temporary directory; the pod uses
    ``(SSH_SECRET_MOUNT, SSH_VOLUME_MOUNT/SSH_SUBPATH, SSH_DIR)``.
    """
    src, dst, img = shlex.quote(secret_dir), shlex.quote(ssh_dir), shlex.quote(image_ssh_dir)
    return f"""\
set -eu
umask 077
src={src}
dst={dst}
img={img}
mkdir -p "$dst"
if [ -d "$img" ]; then cp -R "$img/." "$dst/"; fi
cp "$src/{PRIVATE_KEY}" "$dst/{PRIVATE_KEY}"
cp "$src/{PUBLIC_KEY}" "$dst/{PUBLIC_KEY}"
if [ -f "$img/{AUTHORIZED_KEYS}" ]; then
  cat "$src/{AUTHORIZED_KEYS}" "$img/{AUTHORIZED_KEYS}" > "$dst/{AUTHORIZED_KEYS}"
else
  cat "$src/{AUTHORIZED_KEYS}" > "$dst/{AUTHORIZED_KEYS}"
fi
if [ -f "$img/{CONFIG}" ]; then
  cat "$src/{CONFIG}" "$img/{CONFIG}" > "$dst/{CONFIG}"
else
  cat "$src/{CONFIG}" > "$dst/{CONFIG}"
fi
chmod 700 "$dst"
chmod 600 "$dst/{PRIVATE_KEY}" "$dst/{AUTHORIZED_KEYS}" "$dst/{CONFIG}"
chmod 644 "$dst/{PUBLIC_KEY}"
"""


def ssh_volumes(job: api.Job) -> list[dict[str, Any]]:
    """ssh_volumes are the Secret (read by the init step only) and the prepared directory."""
    return [
        {
            "name": SSH_SECRET_VOLUME,
            "secret": {"secretName": naming.ssh_secret_name(job.name), "defaultMode": 0o400},
        },
        {"name": SSH_VOLUME, "emptyDir": {"medium": "Memory"}},
    ]


def ssh_mount() -> dict[str, Any]:
    """ssh_mount mounts the prepared directory at /root/.ssh (writable: ssh may write there)."""
    return {"name": SSH_VOLUME, "mountPath": SSH_DIR, "subPath": SSH_SUBPATH}


def ssh_init_container(app: Mapping[str, Any]) -> dict[str, Any]:
    """ssh_init_container is the init step, built from the pod's first app container ``app``.

    It takes that container's image, pull policy and securityContext (so the files belong to
    the user the app runs as) and its CPU and memory, which leaves the pod's effective request
    unchanged.
    """
    container: dict[str, Any] = {
        "name": SSH_INIT_CONTAINER,
        "image": app.get("image"),
        "command": [
            "/bin/sh",
            "-c",
            ssh_setup_script(SSH_SECRET_MOUNT, f"{SSH_VOLUME_MOUNT}/{SSH_SUBPATH}", SSH_DIR),
        ],
        "volumeMounts": [
            {"name": SSH_SECRET_VOLUME, "mountPath": SSH_SECRET_MOUNT, "readOnly": True},
            {"name": SSH_VOLUME, "mountPath": SSH_VOLUME_MOUNT},
        ],
    }
    for key in ("imagePullPolicy", "securityContext"):
        if app.get(key) is not None:
            container[key] = app[key]
    resources = app.get("resources") or {}
    kept = {
        kind: {name: q for name, q in (resources.get(kind) or {}).items() if name in _INIT_RESOURCES}
        for kind in ("requests", "limits")
    }
    kept = {kind: values for kind, values in kept.items() if values}
    if kept:
        container["resources"] = kept
    return container
