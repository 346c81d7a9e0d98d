"""Texts: plugin.discovery's ConfigMap and fingerprint made from what the job's last ones made.

Pure (issue 26, F13: a pass's CPU must not grow with the job). When a pod of a large job goes
or runs again the discovery ConfigMap is rendered again (``resources.discovery``): its host list,
each replica's Volcano host file and VC_ keys, and its fingerprint (``resources.hosts_digest``),
one formatted name per pod of the job, 3.2 ms at 4,096 trainers, twice per recovery. The
texts for one pod do not change between renders: its DNS name (``naming.pod_host``), its
host-list line (``host:slots``) and its name as JSON (the fingerprint's). A Texts keeps them by
pod name, and a render joins the kept texts (``str.join`` over ``map``: no Python code per
pod), formatting only the pods it has not seen. The result is equal to ``resources.discovery``'s
and ``resources.hosts_digest``'s, which tests/unit/test_discovery_texts.py checks; a list it
would refuse (a bad host name, a pod listed twice) is left to ``resources.discovery`` itself
(aitj.core.planner.hostfiles), which raises its own error.

Keyed by pod name alone: a pod's name, ``<job>-<replica>-<5 chars>-<index>``, says its replica
(the last two parts hold no ``-``), and so its slots, within one job; the texts are dropped
when the job's name or a replica's slots change. The job's Memo keeps one Texts
(``Memo.texts``), so it never holds more than one job's pods; it drops them all when it holds
twice as many as the lists name and more (pods of restarts past): at most three times the
job's pods.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress

from aitj.core import naming, render
from aitj.core.api import Job
from aitj.core.planner.types import HostEntry, HostLists, Manifest, ObjectKind
from aitj.core.render.discovery import DISCOVERY_HOSTS_KEY
from aitj.core.render.volcano import env_names, host_file_key

# What a host name must not hold (render.discovery.hosts_file refuses it: ':' or whitespace).
_NOT_IN_HOST = re.compile(r"[\s:]")


@dataclass
class Texts:
    """Texts: per pod name, its DNS name (``host``), its host-list line (``line``, for the
    pods listed as workers) and its name as JSON (``quoted``), made under ``key`` (the job's
    name and each replica's slots)."""

    key: tuple[str, tuple[tuple[str, int], ...]] | None = None
    host: dict[str, str] = field(default_factory=dict)
    line: dict[str, str] = field(default_factory=dict)
    quoted: dict[str, str] = field(default_factory=dict)

    def discovery(self, job: Job, lists: HostLists) -> Manifest | None:
        """discovery: ``resources.discovery(job, lists.hosts, lists.running)`` before it is
        stamped (``objects.stamped``); None when the render would refuse the lists."""
        slots = {r.name: render.slots_for(r.template) for r in job.spec.replicas}
        self._keyed(job.name, slots, len(lists.pods) + sum(len(v) for v in lists.running.values()))
        pods = lists.pods
        if not self._lined(lists.hosts, pods, slots):
            return None
        for names in lists.running.values():
            self._hosted(job.name, names)
        body = render.render_discovery_configmap(job, (), {})  # the frame, and the keys' order
        data = body["data"]
        data[DISCOVERY_HOSTS_KEY] = "".join(map(self.line.__getitem__, pods))
        for r in job.spec.replicas:
            names = lists.running.get(r.name, ())
            hosts_key, num_key = env_names(r.name)
            data[host_file_key(r.name)] = "\n".join(map(self.host.__getitem__, names))
            data[hosts_key] = ",".join(map(self.host.__getitem__, names))
            data[num_key] = str(len(names))
        return Manifest(ObjectKind.CONFIGMAP, naming.discovery_configmap_name(job.name), body)

    def digest(self, pods: Sequence[str], masters: Mapping[str, Sequence[str]]) -> str:
        """digest: ``resources.hosts_digest(pods, masters)``: the same JSON text, its pods'
        part joined from their kept JSON names."""
        if len(self.quoted) > 2 * len(pods) + 64:  # names of pods past (see _keyed)
            self.quoted = {}
        quoted = self.quoted
        missing = set(pods).difference(quoted)
        for name in missing:
            quoted[name] = json.dumps(name)
        rest = json.dumps({k: list(v) for k, v in masters.items()}, sort_keys=True, separators=(",", ":"))
        text = "[[" + ",".join(map(quoted.__getitem__, pods)) + "]," + rest + "]"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _keyed(self, job_name: str, slots: Mapping[str, int], listed: int) -> None:
        """_keyed: the DNS names and lines dropped when made under another key, or when they
        hold twice as many pods as the lists name (``listed``) and more. The JSON names do not
        hang on the key: ``digest`` drops them on the same count."""
        key = (job_name, tuple(slots.items()))
        if key != self.key or len(self.host) > 2 * listed + 64:
            self.key, self.host, self.line = key, {}, {}

    def _hosted(self, job_name: str, names: Iterable[str]) -> None:
        """_hosted: the DNS names of ``names`` made where missing."""
        host = self.host
        for name in set(names).difference(host):
            host[name] = naming.pod_host(job_name, name)

    def _lined(self, hosts: Sequence[HostEntry], pods: Sequence[str], slots: Mapping[str, int]) -> bool:
        """_lined: the host-list lines of ``hosts`` (named ``pods``) made where missing; False
        when the render would refuse the list (a pod twice, a name it may not hold)."""
        if len(set(pods)) != len(pods):
            return False
        line, key = self.line, self.key
        missing = set(pods).difference(line)
        if not missing or key is None:
            return True
        self._hosted(key[0], missing)
        for h in compress(hosts, map(missing.__contains__, pods)):
            host, count = self.host[h.pod], slots.get(h.replica)
            if _NOT_IN_HOST.search(host) or not isinstance(count, int) or count < 1:
                return False
            line[h.pod] = f"{host}:{count}\n"
        return True
