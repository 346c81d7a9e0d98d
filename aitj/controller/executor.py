"""The thin layer: carries out a Plan against the API server. The only module that writes.

Order and error handling follow ``aitj.core.planner.types`` (read its docstring): every step is
idempotent, so a pass that fails half-way is repaired by the next one. Calls use
``_preload_content=False`` so the client does not build model objects from responses it does
not read (most of its CPU on hot paths).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from aitj.controller import metrics, sshkeys
from aitj.controller.kubeclient import error_text
from aitj.controller.logs import log
from aitj.core import api, naming, render
from aitj.core.observed import TRACKING_FINALIZER
from aitj.core.planner.status import Condition, advance
from aitj.core.planner.types import Plan, ReplicasPatch, ResourceAction


class JobIdentity(Protocol):
    """What names a job: an ``api.Job`` or a ``JobRef`` for a job whose spec did not parse."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str
    uid: str


class Executor(Protocol):
    def execute(self, job: api.Job, plan: Plan) -> None: ...
    def fail_invalid(self, body: Mapping[str, Any], message: str) -> None: ...
    def release(self, namespace: str, pod: str) -> None: ...


@dataclass
class OperatorConfig:
    """OperatorConfig: settings of ``aitj run`` that shape what is created."""

    priority_classes: Mapping[str, str] = field(default_factory=dict)  # job priority -> PriorityClass


class StaleJob(RuntimeError):
    """The job changed since the snapshot this pass planned from; plan again from the new one."""


class NamespaceTerminating(RuntimeError):
    """The job's namespace is being deleted: nothing can be created in it any more."""


class StepFailed(RuntimeError):
    """A step of the plan failed; the rest of the pass was skipped and the job is requeued."""


class KubeExecutor:
    """KubeExecutor carries out plans with the official client."""

    def __init__(
        self,
        api_client: client.ApiClient,
        config: OperatorConfig | None = None,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.api = api_client
        # Typed as Any: the generated client wants model objects, we send plain dicts.
        self.core: Any = client.CoreV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.config = config or OperatorConfig()
        self.clock = clock
        # (job uid, kind) already known to exist: no GET per pass, no key pair per pass.
        self._ensured: set[tuple[str, str]] = set()

    # ---- the plan --------------------------------------------------------------------------
    def execute(self, job: api.Job, plan: Plan) -> None:
        bound = log.bind(namespace=job.namespace, job=job.name)
        if plan.resources is ResourceAction.ENSURE:
            self._ensure_resources(job)
        elif plan.resources is ResourceAction.DELETE:
            self._delete(
                lambda: self.core.delete_namespaced_service(
                    naming.service_name(job.name), job.namespace, _preload_content=False
                )
            )
        for create in plan.creates:
            replica = job.spec.replica(create.replica)
            body = render.render_pod(
                job,
                replica,
                create.index,
                create.generation,
                create.restart_counts,
                priority_class=self.config.priority_classes.get(job.spec.priority or ""),
                finalizer=TRACKING_FINALIZER,
                extra_annotations=create.annotations,
            )
            try:
                self.core.create_namespaced_pod(job.namespace, body, _preload_content=False)
                metrics.PODS_CREATED.labels(create.replica).inc()
                bound.info(
                    "pod created",
                    pod=create.name,
                    replica=create.replica,
                    index=create.index,
                    generation=create.generation,
                )
            except ApiException as e:
                if e.status == 403 and "being terminated" in error_text(e):
                    raise NamespaceTerminating(job.namespace) from e
                if e.status != 409:
                    raise StepFailed(f"creating pod {create.name}: {error_text(e)}") from e
        if plan.hosts is not None and job.spec.discovery:
            hosts = [
                (naming.pod_host(job.name, h.pod), render.slots_for(job.spec.replica(h.replica).template))
                for h in plan.hosts
            ]
            self._write_discovery(job, hosts)
        if plan.status is not None:
            self._write_status(job, plan.status, expect_version=job.resource_version)
        if plan.spec_replicas:
            self._set_replicas(job, plan.spec_replicas)
        for delete in plan.deletes:
            opts = client.V1DeleteOptions(
                grace_period_seconds=delete.grace_period_seconds,
                preconditions=client.V1Preconditions(uid=delete.uid),
            )
            if self._delete(
                lambda d=delete, o=opts: self.core.delete_namespaced_pod(  # type: ignore[misc]
                    d.name, job.namespace, body=o, _preload_content=False
                )
            ):
                metrics.PODS_DELETED.labels(delete.kind).inc()
                bound.info(
                    "pod deleted", pod=delete.name, reason=delete.reason, grace=delete.grace_period_seconds
                )
        for name in plan.release:
            self.release(job.namespace, name)
        for event in plan.events:
            self.event(job, event.type, event.reason, event.message, name=event.name)
        for r in plan.restarts:
            metrics.RESTARTS.labels(job.namespace, job.name, r.replica, r.cause, str(r.scope)).inc()
            if r.latency_seconds is not None:
                metrics.RESTART_DETECTION.labels(r.cause).observe(r.latency_seconds)
            bound.warning(
                "restart",
                replica=r.replica,
                index=r.index,
                pod=r.pod,
                cause=r.cause,
                rule=r.rule,
                scope=str(r.scope),
                latency_s=r.latency_seconds,
            )
        if plan.outcome is not None:
            metrics.JOBS_FINISHED.labels(str(plan.outcome.phase)).inc()
            bound.info(
                "job finished",
                phase=str(plan.outcome.phase),
                reason=plan.outcome.reason,
                message=plan.outcome.message,
            )

    # ---- pieces ----------------------------------------------------------------------------
    def release(self, namespace: str, pod: str) -> None:
        """release removes the tracking finalizer from a pod (NotFound is fine)."""
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
        try:
            self.core.patch_namespaced_pod(pod, namespace, patch, _preload_content=False)
        except ApiException as e:
            if e.status != 404:
                raise StepFailed(f"releasing pod {pod}: {error_text(e)}") from e

    def _ensure_resources(self, job: api.Job) -> None:
        wanted: list[tuple[str, Callable[[], dict[str, Any]], Callable[[dict[str, Any]], Any]]] = [
            (
                "service",
                lambda: render.render_service(job),
                lambda b: self.core.create_namespaced_service(job.namespace, b, _preload_content=False),
            ),
        ]
        if job.spec.ssh:
            wanted.append(
                (
                    "ssh",
                    lambda: render.render_ssh_secret(job, *sshkeys.generate_keypair(f"aitj@{job.name}")),
                    lambda b: self.core.create_namespaced_secret(job.namespace, b, _preload_content=False),
                )
            )
        if job.spec.discovery:
            wanted.append(
                (
                    "discovery",
                    lambda: render.render_discovery_configmap(job, []),
                    lambda b: self.core.create_namespaced_config_map(
                        job.namespace, b, _preload_content=False
                    ),
                )
            )
        for kind, build, create in wanted:
            if (job.uid, kind) in self._ensured:
                continue
            try:
                create(build())
            except ApiException as e:
                if e.status != 409:
                    raise StepFailed(f"creating the job's {kind} object: {error_text(e)}") from e
            self._ensured.add((job.uid, kind))

    def _write_discovery(self, job: api.Job, hosts: list[tuple[str, int]]) -> None:
        body = render.render_discovery_configmap(job, hosts)
        name = naming.discovery_configmap_name(job.name)
        try:
            self.core.replace_namespaced_config_map(name, job.namespace, body, _preload_content=False)
        except ApiException as e:
            if e.status != 404:
                raise StepFailed(f"writing the discovery host list: {error_text(e)}") from e
            self.core.create_namespaced_config_map(job.namespace, body, _preload_content=False)

    def _write_status(self, job: JobIdentity, status: Mapping[str, Any], expect_version: str = "") -> None:
        # The planner returns the whole status: replace it in one write, as a JSON patch (the
        # typed client would send a merge patch, which cannot drop keys the planner dropped).
        # With expect_version, the patch first tests that the job is still the version the
        # pass planned from: a pass planned from a stale copy must not overwrite a newer status
        # (say, drop the condition another pass just appended).
        patch: list[dict[str, Any]] = []
        if expect_version:
            patch.append({"op": "test", "path": "/metadata/resourceVersion", "value": expect_version})
        patch.append({"op": "add", "path": "/status", "value": dict(status)})
        try:
            self.custom.patch_namespaced_custom_object_status(
                api.GROUP,
                api.VERSION,
                job.namespace,
                api.PLURAL,
                job.name,
                patch,
                _content_type="application/json-patch+json",
                _preload_content=False,
            )
        except ApiException as e:
            if e.status == 404:
                return  # the job is gone
            if e.status == 422 and expect_version:
                raise StaleJob(f"{job.namespace}/{job.name} changed since version {expect_version}") from e
            raise StepFailed(f"writing status: {error_text(e)}") from e

    def _set_replicas(self, job: api.Job, patches: Sequence[ReplicasPatch]) -> None:
        """_set_replicas sets replicas back after a rolled-back scale-out: one JSON patch that
        tests each value before replacing it, so a newer edit of the user's wins (the test
        fails, and the next pass plans the new spec)."""
        ops: list[dict[str, Any]] = []
        for p in patches:
            path = f"/spec/replicaSpecs/{p.replica}/replicas"  # replica names are DNS labels
            ops += [
                {"op": "test", "path": path, "value": p.expected},
                {"op": "replace", "path": path, "value": p.value},
            ]
        try:
            self.custom.patch_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                job.namespace,
                api.PLURAL,
                job.name,
                ops,
                _content_type="application/json-patch+json",
                _preload_content=False,
            )
        except ApiException as e:
            if e.status in (404, 409, 422):  # gone, or changed since (test failed), or refused
                log.warning(
                    "replicas not set back", namespace=job.namespace, job=job.name, error=error_text(e)
                )
                return
            raise StepFailed(f"setting replicas back: {error_text(e)}") from e
        log.info(
            "replicas set back",
            namespace=job.namespace,
            job=job.name,
            replicas={p.replica: p.value for p in patches},
        )

    def fail_invalid(self, body: Mapping[str, Any], message: str) -> None:
        """fail_invalid records, once, that the job's spec cannot be run and why."""
        meta = body.get("metadata", {})
        status = dict(body.get("status") or {})
        history = status.get("conditions") or []
        conditions = advance(
            history, Condition(api.Phase.FAILED, "InvalidSpec", message), _stamp(self.clock())
        )
        if conditions == history:
            return  # already said
        status.update(phase=api.Phase.FAILED.value, conditions=conditions)
        ref = JobRef(meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
        self._write_status(ref, status)
        self.event(ref, "Warning", "InvalidSpec", message)

    def event(
        self, job: JobIdentity, type_: str, reason: str, message: str, *, name: str | None = None
    ) -> None:
        """event records a Kubernetes Event on the job (best effort: never fails the pass). With
        ``name``, once: a second call with the same name finds it there."""
        now = self.clock()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name or f"{job.name}.{uuid.uuid4().hex[:12]}", "namespace": job.namespace},
            "involvedObject": {
                "apiVersion": f"{api.GROUP}/{api.VERSION}",
                "kind": api.KIND,
                "name": job.name,
                "namespace": job.namespace,
                "uid": job.uid,
            },
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "firstTimestamp": _stamp(now),
            "lastTimestamp": _stamp(now),
            "count": 1,
            "source": {"component": "aitj-operator"},
            "reportingComponent": "aitj-operator",
        }
        try:
            self.core.create_namespaced_event(job.namespace, body, _preload_content=False)
        except ApiException as e:
            if name is not None and e.status == 409:
                return  # recorded by an earlier pass
            log.warning("event not recorded", reason=reason, error=error_text(e))

    def _delete(self, call: Callable[[], Any]) -> bool:
        try:
            call()
        except ApiException as e:
            if e.status in (404, 409):  # gone already, or a newer pod with the same name (uid precondition)
                return False
            raise StepFailed(f"deleting: {error_text(e)}") from e
        return True

    def job_exists(self, namespace: str, name: str) -> bool:
        try:
            self.custom.get_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, api.PLURAL, name, _preload_content=False
            )
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True


def _stamp(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
