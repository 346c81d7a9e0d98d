"""The calls of one pass: ``Calls``, the ``PlanSink`` whose ``send_<step>`` methods make the
API calls of each step of a Plan for one job (the package docstring is the contract each of
them keeps). ``KubeExecutor.execute`` (``aitj.controller.executor.kube_executor``) walks a Plan
through one ``Calls`` per pass."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as TransportError

from aitj.controller import metrics
from aitj.controller.executor.answers import body_of, read_metadata, version_test_failed
from aitj.controller.executor.clients import CREATE, DELETE, Clients
from aitj.controller.executor.contract import (
    CreatedPod,
    ForeignObject,
    GangRefused,
    NamespaceTerminating,
    PlanSink,
    PodRefused,
    Sent,
    StaleJob,
    StatusRefused,
    StepFailed,
    Target,
)
from aitj.controller.executor.events import ending_probe, event_body
from aitj.controller.executor.wire import JSON_PATCH, MERGE_PATCH
from aitj.controller.gangapi import gang_refused
from aitj.controller.kubeclient import error_fields, error_text, release
from aitj.controller.logs import log
from aitj.core import api, render
from aitj.core.observed import ANNOTATION_HOSTS, TRACKING_FINALIZER
from aitj.core.planner import objects
from aitj.core.planner.failed_pass import Report
from aitj.core.planner.lifecycle import PodRefusal
from aitj.core.planner.types import (
    Event,
    Manifest,
    ObjectKind,
    ObjectRef,
    Outcome,
    PodCreate,
    PodDelete,
    PodNudge,
    ReplicasPatch,
)
from aitj.core.wire import format_time, mapping


class Calls(PlanSink):
    """Calls: one Plan being sent for one job; a method per step (``PlanSink``), each making
    the API calls of its step with ``clients``."""

    def __init__(self, clients: Clients, job: Target, sent: Sent) -> None:
        self.ex, self.core, self.job, self.sent, self.written = clients, clients.core, job, sent, sent.written
        self.wire = clients.wire
        self.log = log.bind(namespace=job.namespace, job=job.name)

    def send_ensure(self, manifests: Sequence[Manifest]) -> None:
        """send_ensure creates each object; AlreadyExists reads whose it is (``_exists``). A
        native gang PodGroup refused for want of its Workload stops the pass as GangRefused
        (the reconciler says what that means)."""
        for m in manifests:
            try:
                made = self._create(f"{m.kind} {m.name}", self._call(CREATE[m.kind]), m.body)
            except StepFailed as e:
                if m.kind is ObjectKind.GANG_POD_GROUP and gang_refused(e.__cause__):
                    raise GangRefused(str(e)) from e.__cause__
                raise
            if made is False:
                self._exists(m.kind, m.name)
            elif not isinstance(made, bool):
                self.written.owned.append((m.kind, made))

    def send_removes(self, refs: Sequence[ObjectRef]) -> None:
        """send_removes deletes each object under its observed uid; NotFound, and a uid
        Conflict (another object under the name since), are success."""
        for ref in refs:
            delete = self._call(DELETE[ref.kind])
            if ref.uid:
                opts = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=ref.uid))
                self._delete(f"{ref.kind} {ref.name}", delete, ref.name, body=opts)
            else:
                self._delete(f"{ref.kind} {ref.name}", delete, ref.name)
            self.written.gone_owned.append(ref)

    def send_creates(self, creates: Sequence[PodCreate]) -> None:
        """send_creates creates the pods in batches of 1, 2, 4, ... (``fanout.slow_start``),
        the pods of a batch at once; a batch with a failed create is the last, and its first
        failure stops the step. Counts and logs the pods made, and returns them
        (``Sent.created``)."""
        self.ex.fanout.each(creates, self._create_pod)

    def _create_pod(self, c: PodCreate) -> None:
        """_create_pod: one pod of ``send_creates``. A 4xx refusal is PodRefused (what it said
        goes to ``lifecycle.plan_refused``)."""
        try:
            made = self._create(f"pod {c.name}", self.wire.create_pod, c.body)
        except StepFailed as e:
            cause = e.__cause__
            if isinstance(cause, ApiException) and (bare := _without_in_place(c, cause)) is not None:
                self.log.info("in-place restart rules refused: pod created without them", pod=c.name)
                return self._create_pod(bare)  # once: it has none now
            if isinstance(cause, ApiException) and 400 <= (cause.status or 0) < 500:
                said = PodRefusal(c.name, c.replica, cause.status, error_text(cause), error_fields(cause))
                raise PodRefused(str(e), said) from cause
            raise
        if not isinstance(made, bool):
            self.written.pods.append(made)
        if made is not False:
            self.sent.created.append(CreatedPod(c.replica, c.index, c.generation, self.ex.clock()))
            metrics.per_job(metrics.PODS_CREATED, self.job.namespace, self.job.name, c.replica).inc()
            self.log.info(
                "pod created", pod=c.name, replica=c.replica, index=c.index, generation=c.generation
            )

    def send_discovery(self, m: Manifest) -> None:
        """send_discovery replaces the job's discovery ConfigMap at the version observed; with
        none observed, or NotFound, creates it (``send_ensure``)."""
        if not m.version:
            self.send_ensure((m,))
            return
        body = {**m.body, "metadata": {**m.body["metadata"], "resourceVersion": m.version}}
        try:
            response = self.core.replace_namespaced_config_map(
                m.name, self.job.namespace, body, _preload_content=False
            )
        except ApiException as e:
            if e.status != 404:
                raise StepFailed(f"writing the discovery host list: {error_text(e)}") from e
            self.send_ensure((m,))
            return
        self._owned_written(m, response)

    def send_nudges(self, nudges: Sequence[PodNudge]) -> None:
        """send_nudges annotates each pod with its digest; NotFound and a uid Conflict are fine
        (the pod is gone or replaced: its successor mounts the new lists when it starts)."""
        for n in nudges:
            patch = {"metadata": {"uid": n.uid, "annotations": {ANNOTATION_HOSTS: n.digest}}}
            self._patch_pod(n.name, patch, "nudging pod {} to show the new host list")

    def send_restart_events(self, events: Sequence[Event]) -> None:
        """send_restart_events posts each restart's Event (best effort; named: once)."""
        self.send_events(events)

    def send_status(self, typed: api.JobStatus) -> None:
        """send_status writes the whole status, if the job is still the version planned from."""
        if self._ends(typed):
            self._namespace_open()  # a job deleted with its namespace has not ended
        # The planner returns the whole status: replace it in one write, as a JSON patch (the
        # typed client would send a merge patch, which cannot drop keys the planner dropped).
        # The patch first tests that the job is still the version the pass planned from: a
        # pass planned from a stale copy must not overwrite a newer status (say, drop the
        # condition another pass just appended).
        status = typed.to_json()
        version = self.job.resource_version
        patch: list[dict[str, Any]] = []
        if version:
            patch.append({"op": "test", "path": "/metadata/resourceVersion", "value": version})
        patch.append({"op": "add", "path": "/status", "value": dict(status)})
        try:
            response = self.wire.patch_job_status(self.job.namespace, self.job.name, patch, JSON_PATCH)
        except ApiException as e:
            if e.status == 404:
                return  # the job is gone
            if e.status == 422 and version and version_test_failed(e):
                raise StaleJob(f"{self.job.namespace}/{self.job.name} changed since version {version}") from e
            if e.status in (403, 422):  # refused for what it says, or who says it: a retry soon is no use
                raise StatusRefused(f"writing status: {error_text(e)}") from e
            raise StepFailed(f"writing status: {error_text(e)}") from e
        self._job_written(response)
        self.sent.status_written = True

    def send_report(self, report: Report) -> None:
        """send_report posts the Event of a report on failed passes, then merge-patches
        ``status.passFailure`` alone (``aitj.core.planner.failed_pass`` says why). Best effort:
        a refusal or no answer is logged, never raised (the pass has failed already)."""
        if report.event is not None:
            self._event(report.event)
        value = report.failure.to_json() if report.failure is not None else None
        try:
            response = self.wire.patch_job_status(
                self.job.namespace, self.job.name, {"status": {"passFailure": value}}, MERGE_PATCH
            )
        except ApiException as e:
            self.log.warning("pass failure not recorded in the status", error=error_text(e))
            return
        except (TransportError, OSError) as e:
            self.log.warning("pass failure not recorded in the status", error=str(e))
            return
        self._job_written(response)

    def send_spec_replicas(self, patches: Sequence[ReplicasPatch]) -> None:
        """send_spec_replicas: one JSON patch that tests each value before replacing it, so a
        newer edit of the user's wins (the test fails, and the next pass plans the new spec)."""
        ops: list[dict[str, Any]] = []
        for p in patches:
            path = f"/spec/replicaSpecs/{p.replica}/replicas"  # replica names are DNS labels
            ops += [
                {"op": "test", "path": path, "value": p.expected},
                {"op": "replace", "path": path, "value": p.value},
            ]
        try:
            response = self.ex.custom.patch_namespaced_custom_object(
                *self._job_path(), ops, _content_type="application/json-patch+json", _preload_content=False
            )
        except ApiException as e:
            if e.status in (404, 409, 422):  # gone, or changed since (test failed), or refused
                self.log.warning("replicas not set back", error=error_text(e))
                return
            raise StepFailed(f"setting replicas back: {error_text(e)}") from e
        self._job_written(response)
        self.log.info("replicas set back", replicas={p.replica: p.value for p in patches})

    def send_deletes(self, deletes: Sequence[PodDelete]) -> None:
        """send_deletes deletes each pod under its uid precondition, counting by reason."""
        for d in deletes:
            delete = functools.partial(self.wire.delete_pod, uid=d.uid, grace=d.grace_period_seconds)
            if self._delete(f"pod {d.name}", delete, d.name, pod=True):
                metrics.PODS_DELETED.labels(d.reason.value).inc()
                self.log.info("pod deleted", pod=d.name, reason=d.message, grace=d.grace_period_seconds)

    def send_release(self, pods: Sequence[str]) -> None:
        """send_release removes the tracking finalizer from each pod; NotFound is fine."""
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
        for pod in pods:
            self._patch_pod(pod, patch, "releasing pod {}")

    def send_budgets(self, manifests: Sequence[Manifest]) -> None:
        """send_budgets writes each PodDisruptionBudget (``_patch_owned``)."""
        for m in manifests:
            self._patch_owned(m, self.ex.policy.patch_namespaced_pod_disruption_budget)

    def send_podgroup(self, m: Manifest) -> None:
        """send_podgroup writes the Volcano PodGroup (``_patch_owned``)."""
        self._patch_owned(m, self.ex.volcano.patch_namespaced_pod_group)

    def send_probes(self, manifests: Sequence[Manifest]) -> None:
        """send_probes creates each object again (``send_ensure``), every one of them: one
        still held by another stops the pass (ForeignObject) only once the rest were tried, so
        a name its holder freed is taken even while another stays held."""
        held: ForeignObject | None = None
        for m in manifests:
            try:
                self.send_ensure((m,))
            except ForeignObject as e:
                held = held or e
        if held is not None:
            raise held

    def send_events(self, events: Sequence[Event]) -> None:
        """send_events posts each Event (best effort)."""
        for event in events:
            self._event(event)

    def _ends(self, status: api.JobStatus) -> bool:
        """_ends: ``status`` is the write that ends the job (a final phase, the job's last is not)."""
        before = self.job.status.phase if isinstance(self.job, api.Job) else None
        return status.phase in api.FINISHED_PHASES and before not in api.FINISHED_PHASES

    def _namespace_open(self) -> None:
        """_namespace_open: raise NamespaceTerminating when the job's namespace is being deleted.

        Namespace deletion removes the job's pods, maybe before the job, and the planner would
        judge their loss and end the job (Failed, counted in aitj_jobs_finished_total): a job
        deleted with its namespace is not a failed one. Asked before the write that ends a job,
        once per job: a dry-run create of an Event (``dryRun=All``: admission runs, nothing is
        stored; the operator may create Events), which the NamespaceLifecycle admission refuses
        in a namespace being deleted. Any other answer lets the job end."""
        job = self.job
        body = ending_probe(job)
        try:
            self.wire.create_event(job.namespace, body, dry_run=True)
        except ApiException as e:
            if e.status == 403 and "being terminated" in error_text(e):
                raise NamespaceTerminating(job.namespace) from e

    def send_outcome(self, outcome: Outcome) -> None:
        """send_outcome counts and logs the job's end."""
        job = self.job
        metrics.job_finished(job.namespace, job.name, str(outcome.phase), outcome.reason)
        self.log.info(
            "job finished", phase=str(outcome.phase), reason=outcome.reason, message=outcome.message
        )

    # ---- pieces ----------------------------------------------------------------------------
    def _patch_owned(self, m: Manifest, patch: Callable[..., Any]) -> None:
        """_patch_owned merge-patches the job's object's spec and fingerprint under the uid
        observed (``Manifest.uid``: another object under the name since is a Conflict, which
        fails the step); with none observed, or NotFound, creates it (``send_ensure``)."""
        if not m.uid:
            self.send_ensure((m,))
            return
        meta = mapping(m.body.get("metadata"))
        body = {
            "metadata": {"uid": m.uid, "annotations": dict(mapping(meta.get("annotations")))},
            "spec": m.body["spec"],
        }
        try:
            response = patch(
                m.name,
                self.job.namespace,
                body,
                _content_type="application/merge-patch+json",
                _preload_content=False,
            )
        except ApiException as e:
            if e.status != 404:
                raise StepFailed(f"writing {m.kind} {m.name}: {error_text(e)}") from e
            self.send_ensure((m,))
            return
        self._owned_written(m, response)

    def _owned_written(self, m: Manifest, response: Any) -> None:
        """_owned_written keeps an object of the job as a write returned it (its new version
        and fingerprint, for the next pass)."""
        written = body_of(response)
        if written is not None:
            self.written.owned.append((m.kind, written))

    def _exists(self, kind: ObjectKind, name: str) -> None:
        """_exists: a create of ``kind`` ``name`` met AlreadyExists: read its metadata (never a
        Secret's data) for the cache, and stop the pass when it is not the job's: the job is not
        its controller, or it lacks the proof of the job's key (objects.controls: one planted
        under the job's name with the job's ownerReference, in the moment before the create)."""
        found = read_metadata(self.ex.api_client, self.job.namespace, kind, name, self.ex.gang.version)
        if found is None:
            return  # gone since: the next pass makes it
        self.written.owned.append((kind, found))
        state = objects.state_of(mapping(found.get("metadata")))
        ref = ObjectRef(kind, name)
        job = self.job
        ours = objects.controls(job, ref, state) if isinstance(job, api.Job) else state.controller == job.uid
        if not ours:
            raise ForeignObject(f"{objects.message(ref, state)}")

    def _job_path(self) -> tuple[str, str, str, str, str]:
        """_job_path: the custom-object arguments that name the job."""
        return api.GROUP, api.VERSION, self.job.namespace, api.PLURAL, self.job.name

    def _call(self, where: tuple[str, str]) -> Callable[..., Any]:
        """_call: the generated client's method ``where`` names (``CREATE``, ``DELETE``), its
        answer left unread (``_preload_content=False``: no model objects are built)."""
        api_name, method = where
        return functools.partial(getattr(getattr(self.ex, api_name), method), _preload_content=False)

    def _create(
        self, what: str, create: Callable[..., Any], body: Mapping[str, Any]
    ) -> Mapping[str, Any] | bool:
        """_create: the object made as the server returned it (True when it returned none to
        read), False when it already existed."""
        try:
            response = create(self.job.namespace, body)
        except ApiException as e:
            if e.status == 409:
                return False
            if e.status == 403 and "being terminated" in error_text(e):
                raise NamespaceTerminating(self.job.namespace) from e
            raise StepFailed(f"creating {what}: {error_text(e)}") from e
        return body_of(response) or True

    def _delete(
        self, what: str, delete: Callable[..., Any], name: str, *, pod: bool = False, **options: Any
    ) -> bool:
        """_delete: True when deleted, False when gone already (or, with a uid precondition,
        replaced by a newer object of the same name: 409). A pod's answer is written through."""
        try:
            response = delete(name, self.job.namespace, **options)
        except ApiException as e:
            if e.status == 404 and pod:
                self.written.gone_pods.append(name)
            if e.status in (404, 409):
                return False
            raise StepFailed(f"deleting {what}: {error_text(e)}") from e
        if pod:
            self._pod_written(response)
        else:
            release(response)
        return True

    def _job_written(self, response: Any) -> None:
        """_job_written keeps the job as a write returned it."""
        body = body_of(response)
        if body is not None:
            self.written.jobs.append(body)

    def _patch_pod(self, name: str, patch: Mapping[str, Any], what: str) -> None:
        """_patch_pod patches one pod and keeps what the call returned. NotFound: the pod is
        gone (noted); a Conflict, which only a patch naming the pod's uid can meet: it was
        replaced, and its successor needs nothing. Anything else fails the step, saying
        ``what`` (formatted with the pod's name)."""
        try:
            response = self.wire.patch_pod(name, self.job.namespace, patch)
        except ApiException as e:
            if e.status == 404:
                self.written.gone_pods.append(name)
            elif e.status != 409:
                raise StepFailed(f"{what.format(name)}: {error_text(e)}") from e
            return
        self._pod_written(response)

    def _pod_written(self, response: Any) -> None:
        """_pod_written keeps a pod as a call returned it."""
        body = body_of(response)
        if body is not None and body.get("kind") == "Pod":
            self.written.pods.append(body)

    def _event(self, event: Event) -> None:
        """_event posts a Kubernetes Event on the job (best effort: never fails the pass). With
        a ``name``, once: a second post with the same name finds it there."""
        job = self.job
        body = event_body(job, event, format_time(self.ex.clock()))
        try:
            self.wire.create_event(job.namespace, body)
        except ApiException as e:
            if event.name is not None and e.status == 409:
                return  # recorded by an earlier pass
            self.log.warning("event not recorded", reason=event.reason, error=error_text(e))


def _without_in_place(c: PodCreate, refusal: ApiException) -> PodCreate | None:
    """_without_in_place: the pod of ``c`` without its in-place restart rules, when the
    apiserver refused them (a cluster that does not serve them, issue 28); else None."""
    if refusal.status != 422 or not render.in_place_refused(error_fields(refusal)):
        return None
    bare = render.without_in_place(c.body)
    return dataclasses.replace(c, body=bare) if bare is not None else None
