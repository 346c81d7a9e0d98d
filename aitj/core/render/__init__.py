"""Rendering: the manifests the operator creates, as plain dicts ready for the API.

Pure (import-linter enforces it: no kopf, kubernetes or prometheus_client), and free of
randomness and clocks: the planner decides what should exist and calls these; the executor
sends the result. Key material comes in as input (``aitj.controller.sshkeys`` makes it).

- ``render_pod`` (``pod.py``): a replica's pod (``PodIdentity``), placed as its ``Placement``
  says; environment in ``env.py``.
- ``render_service`` (``service.py``): the headless Service behind the pods' DNS names.
- ``render_ssh_secret`` (``ssh.py``): plugin.ssh, and the pod parts it needs.
- ``render_discovery_configmap``, ``slots_for``, ``gpus`` (``discovery.py``): plugin.discovery
  (and the GPU count the metrics use).
- ``render_pdb``, ``max_unavailable`` (``pdb.py``): a PodDisruptionBudget per replica type.
- ``avoid_nodes`` (``avoid.py``): a pod kept off given nodes (those that show a fault signal).
- ``gang.py`` (imported from there): the native gang objects.
- ``render_submission`` (``submit.py``, imported from there): the job ``aitj submit`` makes from flags.

What a pod ends up with, for users: docs/pods.md.
"""

from aitj.core.render.avoid import avoid_nodes
from aitj.core.render.discovery import (
    DISCOVER_HOSTS_SCRIPT,
    DISCOVERY_MOUNT_PATH,
    gpus,
    hosts_file,
    is_gpu_resource,
    render_discovery_configmap,
    slots_for,
)
from aitj.core.render.env import job_env, replica_env_prefix
from aitj.core.render.pdb import ANNOTATION_MAX_UNAVAILABLE, max_unavailable, pdb_name, pdb_spec, render_pdb
from aitj.core.render.pod import (
    ANYWHERE,
    Placement,
    PodIdentity,
    in_place_refused,
    pod_labels,
    render_pod,
    without_in_place,
)
from aitj.core.render.service import render_service
from aitj.core.render.ssh import SSH_DIR, render_ssh_secret, ssh_config_file, ssh_setup_script

__all__ = [
    "ANNOTATION_MAX_UNAVAILABLE",
    "ANYWHERE",
    "DISCOVERY_MOUNT_PATH",
    "DISCOVER_HOSTS_SCRIPT",
    "SSH_DIR",
    "Placement",
    "PodIdentity",
    "avoid_nodes",
    "gpus",
    "hosts_file",
    "in_place_refused",
    "is_gpu_resource",
    "job_env",
    "max_unavailable",
    "pdb_name",
    "pdb_spec",
    "pod_labels",
    "render_discovery_configmap",
    "render_pdb",
    "render_pod",
    "render_service",
    "render_ssh_secret",
    "replica_env_prefix",
    "slots_for",
    "ssh_config_file",
    "ssh_setup_script",
    "without_in_place",
]
