"""The job's headless Service: stable per-pod DNS names, ``<pod>.<service>``."""

from __future__ import annotations

from typing import Any

from aitj.core import api, naming
from aitj.core.render._meta import object_meta, require_dns1035_label


def render_service(job: api.Job) -> dict[str, Any]:
    """render_service returns the headless Service selecting every pod of the job.

    No ports: a headless Service needs none for DNS, and the job's processes use whatever ports
    they like. ``publishNotReadyAddresses`` makes a pod resolvable as soon as it has an IP, not
    when it turns Ready: sshd and rendezvous must be reachable before any readiness probe passes,
    and training pods usually have none.
    """
    name = naming.service_name(job.name)
    require_dns1035_label(name, "Service name (the job name)")
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(job, name),
        "spec": {
            "clusterIP": "None",
            "selector": {api.LABEL_JOB: job.name},
            "publishNotReadyAddresses": True,
        },
    }
