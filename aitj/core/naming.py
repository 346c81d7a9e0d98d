"""Names of the objects the operator creates.

Pure. A pod's name is ``<job>-<replica>-<5 chars>-<index>`` as in the CCE seed
(``test-horovod-elastic-trainer-q7gmp-0``). The 5-character part is derived from
(job uid, replica, index, restart generation), never random: an action repeated after an
operator crash asks for the very same name and meets AlreadyExists instead of creating a
duplicate, while a restart (a new generation) gets a new name, so an old name never returns.

It is derived with the job's key (``status.ownership.key``, random, written by the operator
before the job's first pod: HMAC-SHA256), so that nobody who cannot read the job can tell the
name of a pod the job will have: a pod is the job's only under a name derived from it
(docs/security.md). A job whose status has no key (an operator before keys) has its pods named
from the plain sha256 of the same inputs (``key`` None).
"""

from __future__ import annotations

import functools
import hashlib
import hmac

# The alphabet Kubernetes uses for generateName suffixes: no vowels, no look-alike digits.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


# Each new view of a pod (every pod event) is checked against the name its labels call for
# (observed.PodView.made_by), and a pass that creates pods names them: a hash each time. A
# function of its arguments alone: kept for the few thousand pods most recently named.
@functools.lru_cache(maxsize=8192)
def name_part(job_uid: str, replica: str, index: int, generation: int, key: str | None = None) -> str:
    """name_part returns the deterministic 5-character middle of a pod name (keyed with the
    job's ``key``, unkeyed when None)."""
    text = f"{job_uid}/{replica}/{index}/{generation}".encode()
    if key is None:
        digest = hashlib.sha256(text).digest()
    else:
        digest = hmac.new(key.encode(), text, hashlib.sha256).digest()
    value = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(5):
        value, rem = divmod(value, len(_ALPHABET))
        chars.append(_ALPHABET[rem])
    return "".join(chars)


def pod_name(
    job_name: str, job_uid: str, replica: str, index: int, generation: int, key: str | None = None
) -> str:
    """pod_name returns ``<job>-<replica>-<5 chars>-<index>`` (the 5 characters keyed with the
    job's ``key``; unkeyed when None)."""
    return f"{job_name}-{replica}-{name_part(job_uid, replica, index, generation, key)}-{index}"


def object_proof(key: str, kind: str, name: str) -> str:
    """object_proof: the proof the operator writes on one of the job's objects other than pods
    (annotation ``aitj.kongming.cce.baiudbce.com/proof``): HMAC-SHA256 of its kind and name
    under the job's key, in hex (32 characters). Only a reader of the job's status can make it."""
    return hmac.new(key.encode(), f"{kind}/{name}".encode(), hashlib.sha256).hexdigest()[:32]


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
