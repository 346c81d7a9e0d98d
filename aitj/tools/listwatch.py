"""ListWatch: one kind listed, then watched from the list's resourceVersion, in a daemon thread
of its own: the harnesses' view of the cluster (``aitj dev bench``'s watcher, ``aitj chaos``'s
streams), never the operator's cache.

After a broken stream or a 410 Gone the kind is listed again, so a harness keeps watching
through an apiserver restart. Events are decoded as plain JSON, never the client's models (they
cost milliseconds each at 10,000 pods). A subclass takes each list (``listed``) and each event
(``changed``); both run in the watch thread.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

Obj = dict[str, Any]
Lister = Callable[..., Any]  # a kubernetes list call: list_pod_for_all_namespaces and the like
Key = tuple[str, str]


def key_of(obj: Obj) -> Key:
    """key_of: (namespace, name) of an object."""
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def lines(response: Any) -> Iterator[bytes]:
    """lines: the newline-separated JSON events of a watch response, as they arrive."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        *complete, buffer = (buffer + chunk).split(b"\n")
        for line in complete:
            if line.strip():
                yield line


class ListWatch:
    """ListWatch: ``lister``'s objects, listed (500 a page) then watched, until ``stop``.
    ``watch_seconds``: how long the server holds one watch before the next is opened."""

    watch_seconds = 300

    def __init__(self, lister: Lister, name: str) -> None:
        self.lister = lister
        self.name = name
        self.synced = threading.Event()  # the first list is in
        self.relists = 0
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)

    def listed(self, objects: dict[Key, Obj], rv: str, now: float) -> None:
        """listed: a whole list, at resourceVersion ``rv``, decoded at ``now`` (monotonic)."""
        raise NotImplementedError

    def changed(self, etype: str, obj: Obj, now: float) -> None:
        """changed: one event (ADDED, MODIFIED or DELETED), decoded at ``now`` (monotonic)."""
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        """stopping: ``stop`` was called; a long ``listed`` may end early."""
        return self._stop.is_set()

    def start(self, timeout: float = 60) -> None:
        """start lists and begins watching; returns once the first list is in."""
        self._thread.start()
        if not self.synced.wait(timeout):
            raise TimeoutError(f"the {self.name} watch did not list within {timeout:.0f}s")

    def stop(self) -> None:
        """stop: nothing reaches ``changed`` after it returns but an event being handled. The
        stream's socket is shut down first, which ends the watch thread's blocked read at once
        (closing the response alone does not: the thread waited for the next event, up to the
        join's 5 s, and the watch stayed open, which kept a stopping apiserver from exiting);
        the response is then closed from a thread of its own, since closing a response another
        thread reads can block; the watch thread is a daemon and ends with the process at the
        latest."""
        self._stop.set()
        response = self._response
        if response is not None:
            _shut_down(response)
            threading.Thread(target=_close, args=(response,), daemon=True).start()
        self._thread.join(timeout=5)

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
        objects: dict[Key, Obj] = {}
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
        self.listed(objects, rv, time.monotonic())
        self.relists += 1
        self.synced.set()
        return rv

    def _watch(self, rv: str) -> str:
        self._response = self.lister(
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=self.watch_seconds,
            _preload_content=False,
        )
        for line in lines(self._response):
            event = json.loads(line)
            now = time.monotonic()
            etype, obj = event["type"], event["object"]
            if etype == "ERROR":
                raise RuntimeError(f"watch error: {obj.get('message')}")
            rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
            if etype == "BOOKMARK":
                continue
            if self._stop.is_set():
                return rv
            self.changed(etype, obj, now)
        return rv


def _shut_down(response: Any) -> None:
    """_shut_down: the response's socket shut down both ways (a read blocked on it returns)."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _close(response: Any) -> None:
    with contextlib.suppress(Exception):
        response.close()
