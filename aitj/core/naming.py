"""Names of the objects the operator creates.

Pure. A pod's name is ``<job>-<replica>-<5 chars>-<index>`` as in the CCE seed
(``test-horovod-elastic-trainer-q7gmp-0``). The 5-character part is derived from
(job uid, replica, index, restart generation), never random: an action repeated after an
operator crash asks for the very same name and meets AlreadyExists instead of creating a
duplicate, while a restart (a new generation) gets a new name, so an old name never returns.
"""

from __future__ import annotations

import functools
import hashlib

# The alphabet Kubernetes uses for generateName suffixes: no vowels, no look-alike digits.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


# Each new view of a pod (every pod event) is checked against the name its labels call for
# (observed.PodView.made_by), and a pass that creates pods names them: a hash each time. A
# function of its arguments alone: kept for the few thousand pods most recently named.
@functools.lru_cache(maxsize=8192)
def name_part(job_uid: str, replica: str, index: int, generation: int) -> str:
    """name_part returns the deterministic 5-character middle of a pod name."""
    digest = hashlib.sha256(f"{job_uid}/{replica}/{index}/{generation}".encode()).digest()
    value = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(5):
        value, rem = divmod(value, len(_ALPHABET))
        chars.append(_ALPHABET[rem])
    return "".join(chars)


def pod_name(job_name: str, job_uid: str, replica: str, index: int, generation: int) -> str:
    """pod_name returns ``<job>-<replica>-<5 chars>-<index>``."""
    return f"{job_name}-{replica}-{name_part(job_uid, replica, index, generation)}-{index}"


def service_name(job_name: str) -> str:
    """service_name is the job's headless Service; pods use it as their subdomain."""
    return job_name


def ssh_secret_name(job_name: str) -> str:
    return f"{job_name}-ssh"


def launcher_account_name(job_name: str) -> str:
    """launcher_account_name: the ServiceAccount, Role and RoleBinding of the job's master pods
    (aitj.core.render.access)."""
    return f"{job_name}-launcher"


def discovery_configmap_name(job_name: str) -> str:
    return f"{job_name}-discovery"


def pod_host(job_name: str, pod_name: str) -> str:
    """pod_host is a pod's stable DNS name, ``<pod>.<service>``, as the discovery host list uses it.

    Pods get ``hostname`` = pod name and ``subdomain`` = the job's headless Service, so the name
    resolves from any pod in the job's namespace through the pod's DNS search path. The short
    form is independent of the cluster domain and resolves on the first search-list try.
    """
    return f"{pod_name}.{service_name(job_name)}"
