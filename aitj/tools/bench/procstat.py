"""The operator's CPU time and resident memory, read from /proc, sampled in the background.

``parse_stat`` and ``parse_rss`` are pure (the text of /proc/<pid>/stat and /status); the
Sampler reads them every half second with the pod count of the moment, which the plots of CPU
and RSS against the pod count are drawn from.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def parse_stat(text: str, ticks: int = TICKS) -> float:
    """parse_stat: user plus system CPU seconds from the text of /proc/<pid>/stat (fields 14
    and 15, counted after the command name, which may hold spaces and parentheses)."""
    fields = text.rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): utime is field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / ticks


def parse_rss(text: str) -> int:
    """parse_rss: the resident set size in bytes from the text of /proc/<pid>/status (VmRSS)."""
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ValueError("no VmRSS line (a zombie process?)")


def cpu_seconds(pid: int) -> float:
    """cpu_seconds: the process's CPU time so far (its threads included)."""
    return parse_stat(Path(f"/proc/{pid}/stat").read_text())


def rss_bytes(pid: int) -> int:
    """rss_bytes: the process's resident memory now."""
    return parse_rss(Path(f"/proc/{pid}/status").read_text())


@dataclass(frozen=True)
class Sample:
    """Sample: at ``t`` (monotonic seconds), process ``pid``'s CPU seconds so far, its RSS and
    the pods."""

    pid: int
    t: float
    cpu_s: float
    rss: int
    pods: int


class Sampler:
    """Sampler: samples a process every ``interval`` seconds in a thread, with ``pods()``."""

    def __init__(self, pods: Callable[[], int], interval: float = 0.5) -> None:
        self.pods = pods
        self.interval = interval
        self.pid: int | None = None
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)

    def start(self) -> None:
        """start begins sampling (the process is set with ``follow``)."""
        self._thread.start()

    def follow(self, pid: int | None) -> None:
        """follow samples ``pid`` from now on (None: nothing, while the operator is down)."""
        self.pid = pid

    def stop(self) -> None:
        """stop ends the thread."""
        self._stop.set()
        self._thread.join(timeout=5)

    def sample(self) -> Sample | None:
        """sample reads the followed process now (None when there is none, or it has gone)."""
        pid = self.pid
        if pid is None:
            return None
        try:
            return Sample(pid, time.monotonic(), cpu_seconds(pid), rss_bytes(pid), self.pods())
        except (OSError, ValueError, IndexError):
            return None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            s = self.sample()
            if s is not None:
                self.samples.append(s)


def usage_points(samples: list[Sample]) -> list[tuple[int, float, float]]:
    """usage_points: (pods, % of a core since the previous sample, RSS in MB) per sample after
    the first, for the plots of CPU and RSS against the pod count."""
    out = []
    for prev, cur in itertools.pairwise(samples):
        wall = cur.t - prev.t
        if wall > 0 and cur.pid == prev.pid:  # across a restart the counter starts again
            out.append((cur.pods, 100 * (cur.cpu_s - prev.cpu_s) / wall, cur.rss / 1e6))
    return out
