"""The command's own watch: pods, nodes and jobs listed then watched, each in a thread, every
change recorded as a sample in the run's ``History``. Never the operator's state.

After a broken stream or a 410 Gone the kind is listed again and compared with what was
known: objects missing from the new list are recorded as deleted, so the history never keeps
a pod that is gone.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from aitj.core import api
from aitj.tools.bench.watcher import key_of, lines
from aitj.tools.chaos.history import History, job_sample, node_sample, pod_sample

Lister = Callable[..., Any]
Record = Callable[[float, str, dict[str, Any]], None]


class Stream:
    """Stream: one kind, listed and watched in a daemon thread; ``record(t, type, object)`` is
    called for every object listed and every event."""

    def __init__(self, name: str, lister: Lister, record: Record, clock: Callable[[], float]) -> None:
        self.name = name
        self.lister = lister
        self.record = record
        self.clock = clock
        self.synced = threading.Event()
        self.relists = 0
        self._known: dict[tuple[str, str], dict[str, Any]] = {}
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"chaos-watch-{name}", daemon=True)

    def start(self, timeout: float = 60) -> None:
        self._thread.start()
        if not self.synced.wait(timeout):
            raise TimeoutError(f"the {self.name} watch did not list within {timeout:.0f}s")

    def stop(self) -> None:
        """stop: nothing is recorded after it returns. The stream is closed from a thread of
        its own, since closing a response another thread reads can block; the watch thread is a
        daemon and ends with the process at the latest."""
        self._stop.set()
        response = self._response
        if response is not None:
            threading.Thread(target=_close, args=(response,), daemon=True).start()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self._list()
                rv = self._watch(rv)
            except Exception:
                if self._stop.is_set():
                    return
                rv = ""  # a broken stream or a 410 Gone: list again
                time.sleep(0.5)

    def _list(self) -> str:
        objects: dict[tuple[str, str], dict[str, Any]] = {}
        token = None
        while True:
            resp = self.lister(limit=500, _continue=token, _preload_content=False)
            page = json.loads(resp.data)
            for obj in page.get("items") or []:
                objects[key_of(obj)] = obj
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                rv: str = page["metadata"]["resourceVersion"]
                break
        now = self.clock()
        for key, old in self._known.items():
            if key not in objects:
                # Gone while the stream was down; the list's revision orders the deletion.
                gone = {**old, "metadata": {**old.get("metadata", {}), "resourceVersion": rv}}
                self.record(now, "DELETED", gone)
        for obj in objects.values():
            if self._stop.is_set():
                break
            self.record(now, "ADDED", obj)
        self._known = objects
        self.relists += 1
        self.synced.set()
        return rv

    def _watch(self, rv: str) -> str:
        self._response = self.lister(
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=300,
            _preload_content=False,
        )
        for line in lines(self._response):
            event = json.loads(line)
            etype, obj = event["type"], event["object"]
            if etype == "ERROR":
                raise RuntimeError(f"watch error: {obj.get('message')}")
            rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
            if etype == "BOOKMARK":
                continue
            if etype == "DELETED":
                self._known.pop(key_of(obj), None)
            else:
                self._known[key_of(obj)] = obj
            if self._stop.is_set():
                return rv
            self.record(self.clock(), etype, obj)
        return rv


def _close(response: Any) -> None:
    with contextlib.suppress(Exception):
        response.close()


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
