"""``Client``: AITrainingJobs from Python: submit, get, list, wait, scale, logs, delete.

Thin: every method is one or a few API calls (plain JSON, no model objects), its answer read
by the pure ``aitj.client.job``, its failure raised as one of ``aitj.client.errors``. The
``aitj`` command line's job verbs call these methods; docs/client.md has examples.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, TypeVar

from aitj.client.connect import Connection
from aitj.client.errors import AitjError, Invalid, JobEnded, NotFound, Timeout
from aitj.client.job import (
    LogLine,
    TrainingJob,
    chosen,
    container_of,
    no_pod_message,
    scale_patch,
    waited_for,
)
from aitj.client.transport import merged, translated
from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.render.submit import Submission, problems, render_submission

T = TypeVar("T")
Doc = dict[str, Any]
Docs = list[Doc]  # aliases: inside Client, "list" is its method
Jobs = list[TrainingJob]


class Client:
    """Client: one cluster, and a namespace the methods use when given none.

    >>> from aitj.client import Client, Connection
    >>> jobs = Client(Connection(context="kind-dev"), namespace="team-a")
    >>> job = jobs.get("mnist")
    >>> job.phase, job.restarts, job.replicas["trainer"]
    ('Running', 1, 3)
    """

    def __init__(self, connection: Connection | None = None, *, namespace: str | None = None) -> None:
        self.connection = connection or Connection()
        self.api = self.connection.api_client()
        self.namespace = namespace or self.connection.namespace()
        self.server = str(self.api.configuration.host)
        from kubernetes import client

        self._core: Any = client.CoreV1Api(self.api)
        self._custom: Any = client.CustomObjectsApi(self.api)

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    def _call(self, what: str, call: Callable[[float | None], T]) -> T:
        """_call runs one request, given the request timeout; a failure raises the typed error."""
        with translated(what, self.server, self.connection.request_timeout):
            return call(self.connection.request_timeout)

    def _json(self, what: str, call: Callable[[float | None], Any]) -> Doc:
        data: Doc = json.loads(self._call(what, lambda t: call(t).data))
        return data

    # -----------------------------------------------------------------------------------------
    # Reading

    def get(self, name: str, namespace: str | None = None) -> TrainingJob:
        """get: the job ``name``. Raises ``NotFound`` (its ``elsewhere`` names the namespaces
        that hold a job of that name, when only the namespace was wrong)."""
        return TrainingJob.from_json(self.get_json(name, namespace))

    def get_json(self, name: str, namespace: str | None = None) -> Doc:
        """get_json: the job ``name`` as the API returns it."""
        ns = self._ns(namespace)
        try:
            return self._json(
                f"reading AITrainingJob {ns}/{name}",
                lambda t: self._custom.get_namespaced_custom_object(
                    api.GROUP, api.VERSION, ns, api.PLURAL, name, _preload_content=False, _request_timeout=t
                ),
            )
        except NotFound:
            raise self._unknown(name, ns) from None

    def _unknown(self, name: str, ns: str) -> NotFound:
        """_unknown: no job ``name`` in ``ns``; the namespaces where one is, if any (and if the
        caller may list them)."""
        try:
            elsewhere = tuple(sorted(j.namespace for j in self.list(all_namespaces=True) if j.name == name))
        except AitjError:
            elsewhere = ()
        hint = ""
        if len(elsewhere) == 1:
            hint = f"; there is one in namespace {elsewhere[0]} (use -n {elsewhere[0]})"
        elif elsewhere:
            hint = f"; there are some in namespaces {', '.join(elsewhere)} (use -n {elsewhere[0]})"
        return NotFound(f"no AITrainingJob {name!r} in namespace {ns!r}{hint}", elsewhere=elsewhere)

    def list(
        self, namespace: str | None = None, *, all_namespaces: bool = False, selector: str | None = None
    ) -> Jobs:
        """list: the jobs of the namespace (or of every one), by namespace and name; ``selector``
        a label selector (``team=nlp,tier!=test``)."""
        return [TrainingJob.from_json(j) for j in self.list_json(namespace, all_namespaces, selector)]

    def list_json(
        self, namespace: str | None = None, all_namespaces: bool = False, selector: str | None = None
    ) -> Docs:
        """list_json: ``list``'s jobs as the API returns them."""
        ns = self._ns(namespace)
        where = "every namespace" if all_namespaces else ns
        try:
            listed = self._json(
                f"listing AITrainingJobs in {where}",
                lambda t: (
                    self._custom.list_cluster_custom_object(
                        api.GROUP,
                        api.VERSION,
                        api.PLURAL,
                        label_selector=selector or "",
                        _preload_content=False,
                        _request_timeout=t,
                    )
                    if all_namespaces
                    else self._custom.list_namespaced_custom_object(
                        api.GROUP,
                        api.VERSION,
                        ns,
                        api.PLURAL,
                        label_selector=selector or "",
                        _preload_content=False,
                        _request_timeout=t,
                    )
                ),
            )
        except NotFound:
            raise self._no_crd() from None
        items: Docs = listed.get("items") or []
        return sorted(items, key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"]["name"]))

    def _no_crd(self) -> NotFound:
        return NotFound(
            f"the AITrainingJob CRD is not installed on {self.server} (kubectl apply --server-side -f crds/)"
        )

    def pods(
        self, name: str | None = None, namespace: str | None = None, *, all_namespaces: bool = False
    ) -> Docs:
        """pods: the pods labelled with job ``name`` (None: with any job's), as the API returns them."""
        ns = self._ns(namespace)
        selector = api.LABEL_JOB if name is None else f"{api.LABEL_JOB}={name}"
        what = f"listing the pods of {'every job' if name is None else name} in "
        listed = self._json(
            what + ("every namespace" if all_namespaces else ns),
            lambda t: (
                self._core.list_pod_for_all_namespaces(
                    label_selector=selector, _preload_content=False, _request_timeout=t
                )
                if all_namespaces
                else self._core.list_namespaced_pod(
                    ns, label_selector=selector, _preload_content=False, _request_timeout=t
                )
            ),
        )
        items: Docs = listed.get("items") or []
        return items

    def events(self, job: TrainingJob) -> Docs:
        """events: the Events about ``job`` (its uid: a namesake's old Events are left out)."""
        selector = f"involvedObject.kind={api.KIND},involvedObject.name={job.name}"
        listed = self._json(
            f"listing the Events of {job.namespace}/{job.name}",
            lambda t: self._core.list_namespaced_event(
                job.namespace, field_selector=selector, _preload_content=False, _request_timeout=t
            ),
        )
        return [
            e
            for e in listed.get("items") or []
            if (e.get("involvedObject") or {}).get("uid") in (job.uid, None)
        ]

    # -----------------------------------------------------------------------------------------
    # Writing

    def submit(
        self, job: Submission | Mapping[str, Any], namespace: str | None = None, *, dry_run: bool = False
    ) -> TrainingJob:
        """submit: creates the job, from a ``Submission`` (Arena's flags: image, command,
        workers ...) or a whole manifest. ``dry_run``: admission checks it, nothing is stored.
        Raises ``Invalid`` (each field path and why), ``Conflict`` (the name is taken)."""
        if isinstance(job, Submission):
            wrong = problems(job)
            if wrong:
                raise Invalid("; ".join(wrong))
            body = render_submission(job)
        else:
            body = json.loads(json.dumps(job))  # a copy: the namespace is set below
        meta = body.setdefault("metadata", {})
        ns = meta["namespace"] = self._ns(namespace or meta.get("namespace"))
        try:
            created = self._json(
                f"creating AITrainingJob {ns}/{meta.get('name')}",
                lambda t: self._custom.create_namespaced_custom_object(
                    api.GROUP,
                    api.VERSION,
                    ns,
                    api.PLURAL,
                    body,
                    dry_run="All" if dry_run else None,
                    _preload_content=False,
                    _request_timeout=t,
                ),
            )
        except NotFound as e:
            if "namespaces" in str(e):  # the namespace, not the kind, is missing
                raise
            raise self._no_crd() from None
        return TrainingJob.from_json(created)

    def scale(
        self,
        name: str,
        replicas: int,
        namespace: str | None = None,
        *,
        replica: str = api.SCALE_REPLICA,
        pods: Collection[str] = (),
        scale_timeout: int | None = None,
    ) -> TrainingJob:
        """scale: sets the worker count of ``replica`` to ``replicas`` (the operator then scales
        out or in: docs/scaling.md). ``pods``: those a scale-in removes first. Returns the job
        as edited (follow it with ``wait``, or ``status.scaling``). Raises ``NotFound`` for an
        unknown replica, ``Conflict`` if the job changed meanwhile, ``Invalid`` past its bounds."""
        ns = self._ns(namespace)
        job = self.get(name, ns)
        if replica not in job.replicas:
            have = ", ".join(sorted(job.replicas))
            raise NotFound(f"the job {ns}/{name} has no replica spec {replica!r} (it has: {have})")
        ops = scale_patch(job, replica, replicas, pods=pods, scale_timeout=scale_timeout)
        return TrainingJob.from_json(self.patch(name, ops, ns))

    def patch(self, name: str, ops: Docs, namespace: str | None = None) -> Doc:
        """patch: one JSON patch (RFC 6902) to the job; its answer as the API returns it."""
        ns = self._ns(namespace)
        return self._json(
            f"editing AITrainingJob {ns}/{name}",
            lambda t: self._custom.patch_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                ns,
                api.PLURAL,
                name,
                ops,
                _content_type="application/json-patch+json",
                _preload_content=False,
                _request_timeout=t,
            ),
        )

    def delete(
        self, name: str, namespace: str | None = None, *, wait: bool = False, timeout: float = 120
    ) -> None:
        """delete: deletes the job (its pods go with it); with ``wait``, returns once it is gone
        (``Timeout`` after ``timeout`` seconds)."""
        ns = self._ns(namespace)
        try:
            self._call(
                f"deleting AITrainingJob {ns}/{name}",
                lambda t: self._custom.delete_namespaced_custom_object(
                    api.GROUP,
                    api.VERSION,
                    ns,
                    api.PLURAL,
                    name,
                    propagation_policy="Background",
                    _preload_content=False,
                    _request_timeout=t,
                ),
            )
        except NotFound:
            raise self._unknown(name, ns) from None
        deadline = time.monotonic() + timeout
        while wait:
            try:
                self.get_json(name, ns)
            except NotFound:
                return
            if time.monotonic() > deadline:
                raise Timeout(f"AITrainingJob {ns}/{name} still exists {timeout:g}s after its deletion")
            time.sleep(0.5)

    # -----------------------------------------------------------------------------------------
    # Following

    def wait(
        self,
        name: str,
        namespace: str | None = None,
        *,
        phases: Collection[str] = api.FINISHED_PHASES,
        timeout: float = 600,
        poll: float = 1.0,
    ) -> TrainingJob:
        """wait: the job once it is in one of ``phases`` (default: finished). Raises ``JobEnded``
        if it finishes in another phase, ``Timeout`` after ``timeout`` seconds.

        >>> Client().wait("mnist", phases={"Running"}, timeout=300).phase
        'Running'
        """
        deadline = time.monotonic() + timeout
        while True:
            job = self.get(name, namespace)
            reached = waited_for(job, phases)
            if reached:
                return job
            if reached is False:
                why = job.condition.message if job.condition and job.condition.message else ""
                raise JobEnded(f"{job.namespace}/{job.name} ended {job.phase}: {why}".rstrip(": "), job.phase)
            if time.monotonic() > deadline:
                wanted = " or ".join(sorted(phases))
                raise Timeout(
                    f"{job.namespace}/{job.name} is {job.phase or 'new'}, not {wanted}, after {timeout:g}s"
                )
            time.sleep(poll)

    def log_lines(
        self,
        pod: str,
        container: str,
        namespace: str | None = None,
        *,
        tail: int | None = None,
        follow: bool = False,
    ) -> Iterator[str]:
        """log_lines: one container's log, line by line (followed until its stream ends)."""
        ns = self._ns(namespace)
        response = self._call(
            f"reading the log of {ns}/{pod} ({container})",
            lambda t: self._core.read_namespaced_pod_log(
                pod,
                ns,
                container=container,
                tail_lines=tail,
                follow=follow,
                _preload_content=False,
                _request_timeout=None if follow else t,
            ),
        )
        pending = b""
        for chunk in response.stream(4096):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode(errors="replace")
        if pending:
            yield pending.decode(errors="replace")

    def logs(
        self,
        name: str,
        namespace: str | None = None,
        *,
        replica: str | None = None,
        index: int | None = None,
        container: str | None = None,
        tail: int | None = None,
        follow: bool = False,
    ) -> Iterator[LogLine]:
        """logs: the log lines of the job's live pods (of ``replica`` and ``index`` when given),
        pod by pod in replica and index order; with ``follow``, every pod at once, as lines
        come, until all streams end. A pod whose log cannot be read yields one ``LogLine``
        with ``error`` set; the others go on. Raises ``NotFound`` when no pod matches.

        >>> for line in Client().logs("mnist", replica="launcher", tail=5):
        ...     print(line.prefix + line.text)
        """
        ns = self._ns(namespace)
        self.get_json(name, ns)  # an unknown job (or namespace) is its own error, not "no pods"
        raw = self.pods(name, ns)
        views = chosen(raw, replica, index)
        if not views:
            raise NotFound(no_pod_message(ns, name, raw, replica, index))
        by_name = {p["metadata"]["name"]: p for p in raw}

        def lines(view: PodView) -> Iterator[LogLine]:
            which = container_of(by_name[view.name], container)
            try:
                for text in self.log_lines(view.name, which, ns, tail=tail, follow=follow):
                    yield LogLine(view.name, view.replica or "", view.index, text)
            except AitjError as e:
                yield LogLine(view.name, view.replica or "", view.index, "", error=str(e))

        if not follow or len(views) == 1:
            for view in views:
                yield from lines(view)
            return
        yield from merged([lines(v) for v in views])
