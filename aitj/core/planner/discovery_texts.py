"""Texts: plugin.discovery's ConfigMap and fingerprint made from what the job's last ones made.

Pure (issue 26, F13: a pass's CPU must not grow with the job). When a pod of a large job goes
or runs again the discovery ConfigMap is rendered again (``resources.discovery``): its host list,
each replica's Volcano host file and VC_ keys, and its fingerprint (``resources.hosts_digest``),
one formatted name per pod of the job, 3.2 ms at 4,096 trainers, twice per recovery. The
texts of one pod do not change between renders: its DNS name (``naming.pod_host``), its
host-list line (``host:slots``), its name as JSON (the fingerprint's). A Texts keeps, for each
list, its names and their texts in the list's order (a ``Column``); the next list is compared
with the last one from both ends (``operator.ne`` in C: the same string objects, mostly), the
texts of the names between the first and the last difference made again, the others kept, and
the file joined (``str.join`` of a list: no Python code per pod). One pod gone or come makes
one text. Looking each pod's text up by name instead was as slow as making it: 4,096 dict
look-ups of strings scattered in memory.

The result is equal to ``resources.discovery``'s and ``resources.hosts_digest``'s, which
tests/unit/test_discovery_texts.py checks; a list the render would refuse (a bad host name, a
pod listed twice) is left to ``resources.discovery`` itself (aitj.core.planner.hostfiles), which
raises its own error. A host-list line hangs on its pod's name alone: a pod's name,
``<job>-<replica>-<5 chars>-<index>``, says its replica (the last two parts hold no ``-``), and so
its slots, within one job; every column is dropped when the job's name or a replica's slots
change. The job's Memo keeps one Texts (``Memo.texts``): as many texts as the lists name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from operator import ne

from aitj.core import naming, render
from aitj.core.api import Job
from aitj.core.planner.types import HostLists, Manifest, ObjectKind
from aitj.core.render.discovery import DISCOVERY_HOSTS_KEY
from aitj.core.render.volcano import env_names, host_file_key

# What a host name must not hold (render.discovery.hosts_file refuses it: ':' or whitespace).
_NOT_IN_HOST = re.compile(r"[\s:]")


@dataclass
class Column:
    """Column: a list's names (none twice) and a text per name, in the list's order."""

    names: tuple[str, ...] = ()
    texts: list[str] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # ``names``, to find a name given twice

    def patched(self, names: Sequence[str], make: Callable[[int], str | None]) -> list[str] | None:
        """patched: the texts of ``names``, ``make(k)`` making the text of ``names[k]`` where
        this column's names differ (None: a name the render refuses, or one given twice;
        then the column is emptied)."""
        old, new = self.names, tuple(names)
        short = min(len(old), len(new))
        first = next(compress(count(), map(ne, old, new)), short)
        last = min(next(compress(count(), map(ne, reversed(old), reversed(new))), short), short - first)
        made = [make(k) for k in range(first, len(new) - last)]
        gone, came = old[first : len(old) - last], new[first : len(new) - last]
        self.held.difference_update(gone)
        self.held.update(came)
        if None in made or len(self.held) != len(new):
            self.names, self.texts, self.held = (), [], set()
            return None
        self.texts[first : len(old) - last] = made  # type: ignore[assignment]  # None is not in it
        self.names = new
        return self.texts


@dataclass
class Texts:
    """Texts: the columns of the last lists rendered, made under ``key`` (the job's name and
    each replica's slots): the host list's lines, each replica's DNS names (its host file and
    VC_ keys), the host list's names as JSON (the fingerprint's)."""

    key: tuple[str, tuple[tuple[str, int], ...]] | None = None
    lines: Column = field(default_factory=Column)
    hosts: dict[str, Column] = field(default_factory=dict)
    quoted: Column = field(default_factory=Column)

    def discovery(self, job: Job, lists: HostLists) -> Manifest | None:
        """discovery: ``resources.discovery(job, lists.hosts, lists.running)`` before it is
        stamped (``objects.stamped``); None when the render would refuse the lists."""
        slots = {r.name: render.slots_for(r.template) for r in job.spec.replicas}
        key = (job.name, tuple(slots.items()))
        if key != self.key:
            self.key, self.lines, self.hosts = key, Column(), {}
        hosts, name = lists.hosts, job.name

        def line(k: int) -> str | None:
            h = hosts[k]
            host, count = naming.pod_host(name, h.pod), slots.get(h.replica)
            if _NOT_IN_HOST.search(host) or not isinstance(count, int) or count < 1:
                return None
            return f"{host}:{count}\n"

        lines = self.lines.patched(lists.pods, line)
        if lines is None:
            return None
        body = render.render_discovery_configmap(job, (), {})  # the frame, and the keys' order
        data = body["data"]
        data[DISCOVERY_HOSTS_KEY] = "".join(lines)
        for r in job.spec.replicas:
            pods = lists.running.get(r.name, ())
            names = self.hosts.setdefault(r.name, Column()).patched(pods, _hosted(name, pods))
            hosts_key, num_key = env_names(r.name)
            data[host_file_key(r.name)] = "\n".join(names or ())
            data[hosts_key] = ",".join(names or ())
            data[num_key] = str(len(pods))
            if names is None:  # a pod twice in a host file: rendered whole, as the render does
                return None
        return Manifest(ObjectKind.CONFIGMAP, naming.discovery_configmap_name(job.name), body)

    def digest(self, pods: Sequence[str], masters: Mapping[str, Sequence[str]]) -> str:
        """digest: ``resources.hosts_digest(pods, masters)``: the same JSON text, its pods'
        part joined from their kept JSON names."""
        quoted = self.quoted.patched(pods, lambda k: json.dumps(pods[k]))
        if quoted is None:  # a pod twice: JSON all the same
            quoted = [json.dumps(p) for p in pods]
        rest = json.dumps({k: list(v) for k, v in masters.items()}, sort_keys=True, separators=(",", ":"))
        text = "[[" + ",".join(quoted) + "]," + rest + "]"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _hosted(job_name: str, pods: Sequence[str]) -> Callable[[int], str | None]:
    """_hosted: the DNS name of ``pods[k]``, by ``k``."""
    return lambda k: naming.pod_host(job_name, pods[k])
