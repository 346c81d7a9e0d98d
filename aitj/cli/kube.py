"""The reads and the one write (a create) the job commands make, with their errors as one line.

A helper of the commands (``jobs``, ``submit``, ``logs``), not a command: each error a person
can cause or meet ends the command with ``error: <one sentence>`` on stderr and exit 1:
no cluster reachable, no kubeconfig, the CRD not installed, an unknown job (naming the
namespaces where a job of that name does exist, when it is only the namespace that is wrong),
and whatever the apiserver refuses, in its own words.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from rich.console import Console

from aitj.controller.kubeclient import api_client, context_namespace, error_text
from aitj.core import api

T = TypeVar("T")
Doc = dict[str, Any]


def fail(message: str) -> NoReturn:
    """fail ends the command: ``error: message`` on stderr (as written, one line), exit 1."""
    Console(stderr=True, highlight=False).print(f"error: {message}", markup=False, soft_wrap=True)
    sys.exit(1)


class Kube:
    """Kube: one command's view of the cluster its kubeconfig names, in one namespace."""

    def __init__(self, kubeconfig: Path | None, namespace: str | None) -> None:
        from kubernetes import client
        from kubernetes.config import ConfigException

        try:
            self.api = api_client(kubeconfig)
        except (ConfigException, OSError) as e:
            fail(f"no cluster configured: {e} (give --kubeconfig, or set KUBECONFIG)")
        self.server = str(self.api.configuration.host)
        self.core: Any = client.CoreV1Api(self.api)
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.namespace = namespace or context_namespace(kubeconfig)

    def call(self, what: str, call: Callable[[], T], not_found: Callable[[], NoReturn] | None = None) -> T:
        """call runs one API call; a failure ends the command with one line saying ``what`` failed."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return call()
        except ApiException as e:
            if e.status == 404 and not_found is not None:
                not_found()
            fail(f"{what}: {error_text(e)}")
        except HTTPError as e:
            reason = getattr(e, "reason", None) or e
            fail(f"cannot reach the cluster at {self.server}: {reason}")

    def _json(
        self, what: str, call: Callable[[], Any], not_found: Callable[[], NoReturn] | None = None
    ) -> Doc:
        data: Doc = json.loads(self.call(what, lambda: call().data, not_found))
        return data

    def _no_crd(self) -> NoReturn:
        fail(
            f"the AITrainingJob CRD is not installed on {self.server} (kubectl apply --server-side -f crds/)"
        )

    def job(self, name: str) -> Doc:
        """job: the AITrainingJob ``name`` of the namespace; an unknown one ends the command."""
        return self._json(
            f"reading AITrainingJob {self.namespace}/{name}",
            lambda: self.custom.get_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, api.PLURAL, name, _preload_content=False
            ),
            lambda: self._unknown(name),
        )

    def _unknown(self, name: str) -> NoReturn:
        """_unknown: no such job here; say where a job of that name is, if anywhere."""
        elsewhere = sorted(
            str(j["metadata"].get("namespace"))
            for j in self.jobs(all_namespaces=True)
            if j["metadata"].get("name") == name
        )
        hint = ""
        if len(elsewhere) == 1:
            hint = f"; there is one in namespace {elsewhere[0]} (use -n {elsewhere[0]})"
        elif elsewhere:
            hint = f"; there are some in namespaces {', '.join(elsewhere)} (use -n {elsewhere[0]})"
        fail(f"no AITrainingJob {name!r} in namespace {self.namespace!r}{hint}")

    def jobs(self, *, all_namespaces: bool = False) -> list[Doc]:
        """jobs: the AITrainingJobs of the namespace (or of all), by namespace and name."""
        if all_namespaces:
            listed = self._json(
                "listing AITrainingJobs",
                lambda: self.custom.list_cluster_custom_object(
                    api.GROUP, api.VERSION, api.PLURAL, _preload_content=False
                ),
                self._no_crd,
            )
        else:
            listed = self._json(
                f"listing AITrainingJobs in {self.namespace}",
                lambda: self.custom.list_namespaced_custom_object(
                    api.GROUP, api.VERSION, self.namespace, api.PLURAL, _preload_content=False
                ),
                self._no_crd,
            )
        items: list[Doc] = listed.get("items") or []
        return sorted(items, key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"]["name"]))

    def pods(self, job: str, namespace: str | None = None) -> list[Doc]:
        """pods: the pods labelled with the job's name."""
        ns = namespace or self.namespace
        listed = self._json(
            f"listing the pods of {ns}/{job}",
            lambda: self.core.list_namespaced_pod(
                ns, label_selector=f"{api.LABEL_JOB}={job}", _preload_content=False
            ),
        )
        items: list[Doc] = listed.get("items") or []
        return items

    def all_pods(self, *, all_namespaces: bool) -> list[Doc]:
        """all_pods: every pod any job owns, in the namespace or in all (one call for ``list``)."""
        if all_namespaces:
            listed = self._json(
                "listing pods",
                lambda: self.core.list_pod_for_all_namespaces(
                    label_selector=api.LABEL_JOB, _preload_content=False
                ),
            )
        else:
            listed = self._json(
                f"listing pods in {self.namespace}",
                lambda: self.core.list_namespaced_pod(
                    self.namespace, label_selector=api.LABEL_JOB, _preload_content=False
                ),
            )
        items: list[Doc] = listed.get("items") or []
        return items

    def events(self, job: Doc) -> list[Doc]:
        """events: the Events about the job (its uid, so a namesake's old Events are left out)."""
        meta = job["metadata"]
        selector = f"involvedObject.kind={api.KIND},involvedObject.name={meta['name']}"
        listed = self._json(
            f"listing the Events of {self.namespace}/{meta['name']}",
            lambda: self.core.list_namespaced_event(
                self.namespace, field_selector=selector, _preload_content=False
            ),
        )
        uid = meta.get("uid")
        return [
            e for e in listed.get("items") or [] if (e.get("involvedObject") or {}).get("uid") in (uid, None)
        ]

    def create_job(self, body: Doc) -> Doc:
        """create_job: creates the AITrainingJob; a refusal is shown as the apiserver words it."""
        name = body["metadata"]["name"]
        return self._json(
            f"creating AITrainingJob {self.namespace}/{name}",
            lambda: self.custom.create_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, api.PLURAL, body, _preload_content=False
            ),
            self._no_crd,
        )

    def log_lines(self, pod: str, container: str, *, tail: int | None, follow: bool) -> Iterator[str]:
        """log_lines: the container's log through the apiserver's pod log endpoint, line by line
        (followed until the stream ends when ``follow``)."""
        response = self.call(
            f"reading the log of {self.namespace}/{pod} ({container})",
            lambda: self.core.read_namespaced_pod_log(
                pod,
                self.namespace,
                container=container,
                tail_lines=tail,
                follow=follow,
                _preload_content=False,
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
