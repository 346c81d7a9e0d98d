"""The Events the executor posts on a job (``aitj.controller.executor.calls``): an Event's
body, and the dry-run probe that asks whether the job's namespace is being deleted."""

from __future__ import annotations

import uuid
from typing import Any

from aitj.controller.executor.contract import Target
from aitj.core import api
from aitj.core.planner.types import Event


def event_body(job: Target, event: Event, stamp: str) -> dict[str, Any]:
    """event_body: ``event`` on ``job`` at ``stamp``, named ``event.name`` when it has one (so
    that a second post of it finds it there), else a fresh name."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event.name or f"{job.name}.{uuid.uuid4().hex[:12]}",
            "namespace": job.namespace,
        },
        "involvedObject": {
            "apiVersion": f"{api.GROUP}/{api.VERSION}",
            "kind": api.KIND,
            "name": job.name,
            "namespace": job.namespace,
            "uid": job.uid,
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message[:1024],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "source": {"component": "aitj-operator"},
        "reportingComponent": "aitj-operator",
    }


def ending_probe(job: Target) -> dict[str, Any]:
    """ending_probe: the Event created with ``dryRun=All`` before the write that ends ``job``:
    nothing is stored, and NamespaceLifecycle refuses it in a namespace being deleted
    (``Calls._namespace_open`` says why it is asked)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{job.name}.", "namespace": job.namespace},
        "involvedObject": {"kind": api.KIND, "name": job.name, "namespace": job.namespace},
        "type": "Normal",
        "reason": "Ending",
        "source": {"component": "aitj-operator"},
    }
