"""Metadata shared by every object the operator renders: owner reference, labels, name checks."""

from __future__ import annotations

import re
from typing import Any

from aitj.core import api

OWNER_API_VERSION = f"{api.GROUP}/{api.VERSION}"

# A pod's hostname and subdomain must be DNS-1123 labels; a Service name a DNS-1035 label.
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_LABEL_MAX = 63


def owner_reference(job: api.Job) -> dict[str, Any]:
    """owner_reference makes the job the controller of an object, so deleting the job deletes it."""
    return {
        "apiVersion": OWNER_API_VERSION,
        "kind": api.KIND,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def object_meta(job: api.Job, name: str) -> dict[str, Any]:
    """object_meta is the metadata of a job-owned object other than a pod."""
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": {api.LABEL_JOB: job.name},
        "ownerReferences": [owner_reference(job)],
    }


def require_dns1123_label(value: str, what: str) -> None:
    """require_dns1123_label raises ValueError naming ``what`` unless ``value`` is a DNS label."""
    if len(value) > DNS_LABEL_MAX or not _DNS1123_LABEL.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be a DNS label (at most {DNS_LABEL_MAX} characters of a-z, 0-9 "
            f"and '-'; it is {len(value)}): shorten the job or replica name"
        )


def require_dns1035_label(value: str, what: str) -> None:
    """require_dns1035_label is require_dns1123_label that also demands a leading letter."""
    if len(value) > DNS_LABEL_MAX or not _DNS1035_LABEL.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be a DNS-1035 label (at most {DNS_LABEL_MAX} characters of "
            f"a-z, 0-9 and '-', starting with a letter; it is {len(value)})"
        )
