"""List+watch, one kind per thread, in the informer style: what fills the controller's cache.

An ``Informer`` lists its kind page by page, hands the whole listing over as one ``Sync``, then
watches from the listing's resourceVersion (with bookmarks, so a quiet watch still advances),
renews the watch when the server ends it, and lists again when the server says the version is
too old (410 Gone: ``watch_action``). Each raw object is turned into its slim form
(``Item.value``: a PodView, a NodeView, a job's body, nothing but the name for owned objects)
in the informer's thread, so the event loop only stores ready-made items, in batches.

Why threads and the official client, not aiohttp on the event loop: measured on the local
control plane (docs/operator.md, "Start-up at scale"), the time goes into decoding JSON and
building the views, which holds the GIL either way; the client in a thread reuses the
operator's credentials and connection setup unchanged, and keeps the loop free for passes.
The JSON is decoded by orjson: 2.4 times the standard library's speed on a pod's watch event
(docs/operator.md, "The hot path").

Owned objects (Services, Secrets, ConfigMaps, ...) are listed as metadata only
(PartialObjectMetadata): a Secret's data never reaches the operator. A kind whose every
change but a rare few is news to no one (a PodDisruptionBudget's status) is listed again
every ``Kind.relist_seconds`` instead of watched (aitj.controller.cache, ``RELISTED``).

What an item keeps is bounded (issue 24, section 4): the pod informer matches the job label
cluster-wide, so any namespace can hand the operator pods to hold. An item keeps only the
operator's own labels (``aitj.core.api.LABEL_PREFIX``), the only ones it reads; a pod's view
bounds its annotations (``aitj.core.observed``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import queue
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from kubernetes import client

from aitj.controller import passtrace
from aitj.controller.kubeclient import raw_get, raw_request
from aitj.controller.logs import log
from aitj.core.api import LABEL_PREFIX
from aitj.core.wire import mapping

T = TypeVar("T")

PAGE_SIZE = 500
WATCH_SECONDS = 300  # the server ends a watch after this; the informer renews it
JSON = "application/json"
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_ONLY_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


@dataclass(frozen=True)
class Kind(Generic[T]):
    """Kind: one kind an informer watches. ``path``: the cluster-wide collection (``/api/v1/pods``;
    ``{ns}`` marks where a namespace goes); ``convert`` makes the slim value from a raw object;
    ``job_label``: the label that ties an object to its job (None: the kind is not a job's);
    ``relist_seconds``: listed again that often instead of watched (None: watched)."""

    name: str
    group_path: str  # "/api/v1" or "/apis/<group>/<version>"
    plural: str
    convert: Callable[[Mapping[str, Any]], T]
    label_selector: str | None = None
    metadata_only: bool = False
    namespaced: bool = True
    relist_seconds: float | None = None

    def path(self, namespace: str | None) -> str:
        """path: the collection, in ``namespace`` or (None) cluster-wide."""
        if namespace and self.namespaced:
            return f"{self.group_path}/namespaces/{namespace}/{self.plural}"
        return f"{self.group_path}/{self.plural}"


@dataclass(frozen=True, slots=True)
class Item(Generic[T]):
    """Item: one object as the cache keeps it: its identity, its resourceVersion, the operator's
    labels (``own_labels``) and its slim value."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    labels: Mapping[str, str]
    value: T

    @classmethod
    def of(cls, obj: Mapping[str, Any], value: T) -> Item[T]:
        """of: the item of a raw object."""
        meta = mapping(obj.get("metadata"))
        labels = own_labels(mapping(meta.get("labels")))
        return cls(
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
            str(meta.get("resourceVersion") or ""),
            labels,
            value,
        )


_OWN = f"{LABEL_PREFIX}/"


def own_labels(labels: Mapping[str, Any]) -> dict[str, str]:
    """own_labels: the labels under the operator's prefix; the cache reads no other, and a pod
    of another namespace may carry any number of them."""
    return {str(k): str(v) for k, v in labels.items() if str(k).startswith(_OWN)}


@dataclass(frozen=True)
class Sync(Generic[T]):
    """Sync: a whole listing; replaces what the cache held of the kind (in that namespace).
    ``version``: the listing's resourceVersion (what was stored since is newer)."""

    items: Sequence[Item[T]]
    namespace: str | None
    version: str = ""


@dataclass(frozen=True)
class Change(Generic[T]):
    """Change: one watch event (``type``: ADDED, MODIFIED or DELETED)."""

    type: str
    item: Item[T]


Delta = Sync[T] | Change[T]


class Action(enum.Enum):
    """Action: what the informer does with one watch event (``watch_action``)."""

    APPLY = "apply"  # ADDED / MODIFIED / DELETED: hand it to the cache, resume from its version
    BOOKMARK = "bookmark"  # nothing changed; resume from its version
    RELIST = "relist"  # the version is gone (410) or the server reported an error: list again


def watch_action(event: Mapping[str, Any]) -> tuple[Action, str]:
    """watch_action: what to do with one watch event, and the resourceVersion to resume from
    ("" when there is none). An ERROR event (410 Gone: the version was compacted away, or any
    other) means the informer's view may have a gap: only a new listing closes it."""
    kind = event.get("type")
    obj = mapping(event.get("object"))
    version = str(mapping(obj.get("metadata")).get("resourceVersion") or "")
    if kind in ("ADDED", "MODIFIED", "DELETED"):
        return Action.APPLY, version
    if kind == "BOOKMARK":
        return Action.BOOKMARK, version
    return Action.RELIST, ""


class Gone(Exception):
    """Gone: the resourceVersion or continue token expired (410): list again."""


class Informer(Generic[T]):
    """Informer: list+watch of one kind in one namespace (None: all), in a daemon thread; each
    batch of deltas is handed to ``sink`` on the event loop."""

    def __init__(
        self,
        api_client: client.ApiClient,
        kind: Kind[T],
        namespace: str | None,
        sink: Callable[[Kind[T], list[Delta[T]]], None],
        *,
        page_size: int = PAGE_SIZE,
        watch_seconds: int = WATCH_SECONDS,
        known: Callable[[Mapping[str, Any]], bool] | None = None,
        quiet: Callable[[Item[T]], bool] | None = None,
    ) -> None:
        self.api_client, self.kind, self.namespace, self.sink = api_client, kind, namespace, sink
        self.page_size, self.watch_seconds = page_size, watch_seconds
        # ``known(metadata)``: the sink holds the object at this version or a later one (the
        # echo of the operator's own write, stored at once): such an event is dropped here,
        # unconverted. ``quiet(item)``: the change is one the sink may take late (only its
        # version moved): it waits, without waking the loop, for the next hand-over or ``flush``.
        self.known, self.quiet = known, quiet
        self.lists = 0  # how many listings were made (the first, then one per relist)
        self._stop = threading.Event()
        self._pending: collections.deque[Delta[T]] = collections.deque()
        self._scheduled = False
        self._read = 0.0  # when the event that scheduled the pending hand-over was read (passtrace)
        # Deltas posted (this thread) and handed to the sink (the loop): while they differ, what
        # the sink holds is behind this watch (a relist not yet applied), and no event is
        # taken for a known one.
        self._posted = 0
        self._applied = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._response: Any = None
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """start runs the informer in its own daemon thread, handing deltas to ``loop``."""
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """stop ends the informer: the thread leaves at its next read (the watch is cut now)."""
        self._stop.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # already closed: nothing to wake
                response.shutdown()  # urllib3: wakes a read blocked in another thread

    # ---- the thread ---------------------------------------------------------------------
    def _run(self) -> None:
        """_run: list, then watch until the version is gone, then list again (a kind not watched:
        list again every ``relist_seconds``); back off on errors."""
        backoff = 0.5
        while not self._stop.is_set():
            try:
                version = self._list()
                backoff = 0.5
                if self.kind.relist_seconds is not None:
                    self._stop.wait(self.kind.relist_seconds)
                    continue
                while not self._stop.is_set():
                    version = self._watch(version)
            except Gone:
                log.info("watch expired, listing again", kind=self.kind.name, namespace=self.namespace)
            except Exception as e:
                if self._stop.is_set():
                    return
                log.warning("list/watch failed", kind=self.kind.name, error=str(e), retry_s=backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _list(self) -> str:
        """_list: every object, page by page; hands them over as one Sync; returns the version.
        The next page is fetched (``_pages``) while this one is decoded: the server's time and
        the decoding overlap."""
        items: list[Item[T]] = []
        for body in self._pages():
            page = orjson.loads(body)
            items += [Item.of(obj, self.kind.convert(obj)) for obj in page.get("items") or ()]
            meta = mapping(page.get("metadata"))
            if str(meta.get("continue") or "") != continue_token(body):
                raise RuntimeError(f"listing {self.kind.name}: the continue token was misread")
        self.lists += 1
        version = str(meta.get("resourceVersion") or "")
        self._post(Sync(items, self.namespace, version))
        return version

    def _pages(self) -> Iterator[bytes]:
        """_pages: the raw pages of one listing, fetched one ahead in a thread of their own."""
        pages = _Handoff()

        def fetch() -> None:
            token = ""
            try:
                while True:
                    body = self._page(token)
                    token = continue_token(body)
                    if not pages.put(body) or not token:
                        break
                pages.put(None)
            except BaseException as e:  # handed to the consumer, which raises it
                pages.put(e)

        threading.Thread(target=fetch, name=f"list-{self.kind.name}", daemon=True).start()
        try:
            yield from pages.drain()
        finally:
            pages.done.set()

    def _page(self, token: str) -> bytes:
        """_page: one page of the listing, from ``token`` (empty: the first)."""
        query = [("limit", str(self.page_size)), *self._selector()]
        if token:
            query.append(("continue", token))
        status, body = self._get(query, METADATA_ONLY if self.kind.metadata_only else None)
        if status == 410:
            raise Gone()
        if status != 200:
            raise RuntimeError(f"listing {self.kind.name}: HTTP {status}: {body[:300]!r}")
        return body

    def _watch(self, version: str) -> str:
        """_watch: one watch from ``version`` until the server ends it; returns where to resume."""
        query = [
            ("watch", "true"),
            ("resourceVersion", version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(self.watch_seconds)),
            *self._selector(),
        ]
        response = self._request(query, METADATA_ONLY_WATCH if self.kind.metadata_only else None)
        self._response = response
        try:
            if response.status == 410:
                raise Gone()
            if response.status != 200:
                raise RuntimeError(f"watching {self.kind.name}: HTTP {response.status}")
            for line in _lines(response):
                version = self._event(orjson.loads(line)) or version
        finally:
            self._response = None
            response.release_conn()
        return version

    def _event(self, event: Mapping[str, Any]) -> str:
        """_event: one watch event, handed over (or dropped: an echo, ``known``); returns the
        version to resume from ("" when it has none)."""
        action, at = watch_action(event)
        if action is Action.RELIST:
            raise Gone()
        if action is not Action.APPLY:
            return at
        obj = mapping(event.get("object"))
        kind = str(event["type"])
        if kind != "DELETED" and self._echo(obj):
            return at  # the sink holds it already: nothing to convert, nothing to hand over
        item = Item.of(obj, self.kind.convert(obj))
        late = kind == "MODIFIED" and self.quiet is not None and self.quiet(item)
        self._post(Change(kind, item), wake=not late)
        return at

    def _echo(self, obj: Mapping[str, Any]) -> bool:
        """_echo: ``known`` says the sink holds this version of ``obj`` or a later one, and all
        this watch handed over is applied (a relist not yet applied could take that back)."""
        return (
            self.known is not None
            and self._posted == self._applied
            and self.known(mapping(obj.get("metadata")))
        )

    def _selector(self) -> list[tuple[str, str]]:
        """_selector: the label selector query parameter, if the kind has one."""
        return [("labelSelector", self.kind.label_selector)] if self.kind.label_selector else []

    def _get(self, query: list[tuple[str, str]], accept: str | None) -> tuple[int, bytes]:
        """_get: one plain GET of the kind's collection: status and body."""
        path = self.kind.path(self.namespace)
        return raw_get(self.api_client, path, query=query, accept=accept or JSON, timeout=(10.0, 120.0))

    def _request(self, query: list[tuple[str, str]], accept: str | None) -> Any:
        """_request: the urllib3 response of a streamed GET (a watch) of the kind's collection
        (read timeout: the watch's own timeout and a margin)."""
        path = self.kind.path(self.namespace)
        timeout = (10.0, self.watch_seconds + 30.0)
        return raw_request(self.api_client, path, query=query, accept=accept or JSON, timeout=timeout)

    def _post(self, delta: Delta[T], *, wake: bool = True) -> None:
        """_post hands ``delta`` to the loop; deltas queued while a hand-over is pending ride
        along with it (one loop callback per burst, not one per event). ``wake`` False: it
        waits for the next hand-over, or for ``flush``."""
        self._pending.append(delta)
        self._posted += 1
        if wake and not self._scheduled and self._loop is not None:
            self._scheduled, self._read = True, passtrace.now()
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed: the operator is stopping
                self._stop.set()

    def _drain(self) -> None:
        """_drain (on the loop): hand every pending delta to the sink, in order."""
        self._scheduled = False  # before taking: a delta posted from now on schedules anew
        batch: list[Delta[T]] = []
        while self._pending:
            batch.append(self._pending.popleft())
        if batch and not self._stop.is_set():
            passtrace.HANDING.read, passtrace.HANDING.drained = self._read, passtrace.now()
            try:
                self.sink(self.kind, batch)
            finally:
                passtrace.HANDING.read = passtrace.HANDING.drained = 0.0
        self._applied += len(batch)

    def flush(self) -> None:
        """flush (on the loop): hand the deltas waiting without a wake-up (``quiet``) to the
        sink now, before it is read. With a hand-over pending, they go with it."""
        if self._pending and not self._scheduled:
            self._drain()


# A list's metadata comes before its items (built-in kinds) or last (custom resources, whose keys
# are sorted), so the continue token is read off the head or the tail of the page without
# decoding it all; _list checks it against the decoded one.
_CONTINUE = re.compile(rb'"metadata":\{[^{}]*?"continue":"([^"]*)"')


def continue_token(body: bytes) -> str:
    """continue_token: the continue token of a raw list page ("" on the last page)."""
    items = body.find(b'"items":')
    head = body[:items] if items >= 0 else body
    where = head if b'"metadata":' in head else body[body.rfind(b'"metadata":') :]
    found = _CONTINUE.search(where)
    return found.group(1).decode() if found else ""


def _lines(response: Any) -> Iterator[bytes]:
    """_lines: the newline-separated JSON documents of a streamed watch response."""
    rest = b""
    for chunk in response.stream(65536, decode_content=True):
        *lines, rest = (rest + chunk).split(b"\n")
        yield from (line for line in lines if line.strip())
    if rest.strip():
        yield rest


class _Handoff:
    """_Handoff: a listing's pages passed from the thread fetching them to the one reading them,
    one ahead at most. None ends them; an exception is raised on the reader's side. A reader
    that leaves sets ``done``, and the fetcher stops instead of waiting on a full queue."""

    def __init__(self) -> None:
        self.queue: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=1)
        self.done = threading.Event()

    def put(self, value: bytes | BaseException | None) -> bool:
        """put: hand ``value`` over; False when the reader has left."""
        while not self.done.is_set():
            try:
                self.queue.put(value, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def drain(self) -> Iterator[bytes]:
        """drain: the pages, until the fetcher's None (or its exception, raised)."""
        while (value := self.queue.get()) is not None:
            if isinstance(value, BaseException):
                raise value
            yield value
