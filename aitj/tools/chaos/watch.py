"""The command's own watch: pods, nodes and jobs listed then watched, each in a thread, every
change recorded as a sample in the run's ``History``. Never the operator's state.

After a broken stream or a 410 Gone the kind is listed again and compared with what was
known: objects missing from the new list are recorded as deleted, so the history never keeps
a pod that is gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from aitj.core import api
from aitj.tools.chaos.history import History, job_sample, node_sample, pod_sample
from aitj.tools.listwatch import Key, Lister, ListWatch, Obj, key_of

Record = Callable[[float, str, dict[str, Any]], None]


class Stream(ListWatch):
    """Stream: one kind, listed and watched in a daemon thread; ``record(t, type, object)`` is
    called for every object listed and every event, ``t`` on the history's clock."""

    def __init__(self, name: str, lister: Lister, record: Record, clock: Callable[[], float]) -> None:
        super().__init__(lister, name)
        self.record = record
        self.clock = clock
        self._known: dict[Key, dict[str, Any]] = {}

    def listed(self, objects: dict[Key, Obj], rv: str, now: float) -> None:
        t = self.clock()
        for key, old in self._known.items():
            if key not in objects:
                # Gone while the stream was down; the list's revision orders the deletion.
                gone = {**old, "metadata": {**old.get("metadata", {}), "resourceVersion": rv}}
                self.record(t, "DELETED", gone)
        for obj in objects.values():
            if self.stopping:
                break
            self.record(t, "ADDED", obj)
        self._known = objects

    def changed(self, etype: str, obj: Obj, now: float) -> None:
        if etype == "DELETED":
            self._known.pop(key_of(obj), None)
        else:
            self._known[key_of(obj)] = obj
        self.record(self.clock(), etype, obj)


class Watch:
    """Watch: the three streams of one run, writing into ``history``. Jobs are those of
    ``namespace`` (None: all) matching ``selector``; pods those carrying the job label in the
    same namespaces (the jobs' names filter them when checked); nodes all."""

    def __init__(
        self, api_client: client.ApiClient, history: History, namespace: str | None, selector: str
    ) -> None:
        self.history = history
        self.started = time.monotonic()
        self._lock = threading.Lock()
        core: Any = client.CoreV1Api(api_client)
        custom: Any = client.CustomObjectsApi(api_client)

        def pods(**kw: Any) -> Any:
            if namespace:
                return core.list_namespaced_pod(namespace, label_selector=api.LABEL_JOB, **kw)
            return core.list_pod_for_all_namespaces(label_selector=api.LABEL_JOB, **kw)

        def jobs(**kw: Any) -> Any:
            if namespace:
                return custom.list_namespaced_custom_object(
                    api.GROUP, api.VERSION, namespace, api.PLURAL, label_selector=selector or None, **kw
                )
            return custom.list_cluster_custom_object(
                api.GROUP, api.VERSION, api.PLURAL, label_selector=selector or None, **kw
            )

        self.streams = [
            Stream("jobs", jobs, self._job, self.now),
            Stream("nodes", core.list_node, self._node, self.now),
            Stream("pods", pods, self._pod, self.now),
        ]

    def now(self) -> float:
        """now: seconds since the watch was made (the history's clock)."""
        return time.monotonic() - self.started

    def start(self) -> None:
        for s in self.streams:
            s.start()

    def stop(self) -> None:
        for s in self.streams:
            s.stop()
        self.history.end = self.now()

    def _job(self, t: float, etype: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self.history.jobs.append(job_sample(t, etype, obj))

    def _node(self, t: float, etype: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self.history.nodes.append(node_sample(t, etype, obj))

    def _pod(self, t: float, etype: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self.history.pods.append(pod_sample(t, etype, obj))
