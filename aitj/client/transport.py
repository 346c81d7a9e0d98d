"""How the client's calls go: their failures as ``aitj.client.errors``' types, and several
followed log streams read as one.

Thin: the ``kubernetes`` package's and urllib3's exceptions stop here.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aitj.client.errors import Timeout, Unreachable, from_response
from aitj.client.job import LogLine


@contextmanager
def translated(what: str, server: str, timeout: float | None = None) -> Iterator[None]:
    """translated: the calls made inside raise ``aitj.client.errors``' types, never the
    ``kubernetes`` package's: ``what`` says what was asked, ``server`` where."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError, ReadTimeoutError

    try:
        yield
    except ApiException as e:
        raise from_response(what, e.status or 0, str(e.reason or ""), e.body) from None
    except HTTPError as e:
        # Only a read that timed out is a Timeout: urllib3's refused connection is a subclass
        # of its connect timeout, and both mean the server is not there.
        reason = getattr(e, "reason", None) or e
        if isinstance(e, ReadTimeoutError) or isinstance(reason, ReadTimeoutError):
            within = f" within {timeout:g}s" if timeout else ""
            raise Timeout(f"{what}: no answer from {server}{within}") from None
        raise Unreachable(f"cannot reach the cluster at {server}: {reason}") from None


def merged(streams: list[Iterator[LogLine]]) -> Iterator[LogLine]:
    """merged: the lines of every stream as they come, one thread each (followed streams end
    only with their pods); daemon threads, so an abandoned iteration does not hold the process."""
    lines: queue.Queue[LogLine | None] = queue.Queue(maxsize=1000)

    def pump(stream: Iterator[LogLine]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    for stream in streams:
        threading.Thread(target=pump, args=(stream,), daemon=True).start()
    running = len(streams)
    while running:
        line = lines.get()
        if line is None:
            running -= 1
        else:
            yield line
