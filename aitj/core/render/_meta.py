"""Metadata shared by every object the operator renders: owner reference, labels, name checks."""

from __future__ import annotations

from typing import Any

from aitj.core import api


def owner_reference(job: api.Job) -> dict[str, Any]:
    """owner_reference makes the job the controller of an object, so deleting the job deletes it."""
    return {
        "apiVersion": api.API_VERSION,
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
    if not api.is_dns1123_label(value):
        raise ValueError(
            f"{what} {value!r} must be a DNS label (at most {api.DNS_LABEL_MAX} characters of a-z, 0-9 "
            f"and '-'; it is {len(value)}): shorten the job or replica name"
        )


def require_dns1035_label(value: str, what: str) -> None:
    """require_dns1035_label is require_dns1123_label that also demands a leading letter."""
    if not api.is_dns1035_label(value):
        raise ValueError(
            f"{what} {value!r} must be a DNS-1035 label (at most {api.DNS_LABEL_MAX} characters of "
            f"a-z, 0-9 and '-', starting with a letter; it is {len(value)})"
        )
