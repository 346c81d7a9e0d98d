"""Memo: what one job's passes keep from one pass to the next (issue 26, incremental planning).

Pure, and an optimisation only: ``plan(..., memo=m)`` returns exactly what ``plan`` returns
without one (tests/unit/test_incremental_planning.py checks it on random event sequences). The
reconciler keeps one Memo per job and hands it to each of the job's passes, which it
serialises; a Memo is not safe to share between jobs running at once.

Why it is safe: every entry is the result of a pure function of inputs the entry keeps, and it
is reused only when this pass's inputs are those same objects (``is``) or equal ones (``==``).
The cache (aitj.controller.cache) hands the planner the same immutable PodView for a pod until
the pod's resourceVersion moves, and the same NodeView for a node until it changes, so one pod
event changes one view and the rest are found again by identity. What it keeps:

- per pod view, whether it is the job's (``objects.belongs``: a name hashed per pod);
- the restart ledger parsed from the status (``status.restartLedger``), while that is equal;
- what the pods tell of the ledger, their stamps and generations merged (``stamps.told``),
  while the pods that came or went carry the same (replica, index, generation, stamp) as each
  other (a pod's new view that changed its phase, say), and the status ledger merged with it
  (``stamps.observe``) while that is the same one too: after a status write, one merge;
- per current pod, the survey's verdict of it (``survey.Judged``: ``policy.classify`` and
  ``restart_timed_out``), while its node's view, its slot and the replica's spec are the same;
  the clock is part of that key exactly when ``policy.restart_timed_out`` reads it;
- the last pass's survey when it decided nothing (``survey.settled``: nothing retired,
  restarted, released or recorded, no failure; its running slots read no clock and none
  depends on another): while the ledger (the same object), shape, node signals and nodes are
  the same, only the slots that did not run and those whose pods came or went are looked at
  again (``survey.resurvey``); one of them deciding anything, and the pass surveys all;
- the host lists of a survey where every slot runs (no wave starts, so neither the clock nor
  the status's lists count), while the next survey redoes it with every slot running
  (``host_lists``).

Nothing in it is a decision: a pass with an empty Memo decides the same, only slower. A Memo
forgets everything when it is handed another job (another namespace, name or uid).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from aitj.core.api import Job, JobSpec, JobStatus
from aitj.core.nodesignals import NodeSignals
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import hostfiles
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.objects import belongs
from aitj.core.planner.stamps import told
from aitj.core.planner.survey import Judged, Shape, Survey, resurvey, settled, survey
from aitj.core.planner.types import HostLists

_Stamp = tuple[str | None, int | None, int, str | None]


@dataclass(frozen=True)
class Seen:
    """Seen: a pass's pods as the memo sorted them: the job's (``mine``, in the order given),
    those with its label it did not make (``others``), and the job's pods that came
    (``came``) and went (``went``) since the last pass."""

    mine: list[PodView]
    others: list[PodView]
    came: list[PodView]
    went: list[PodView]


@dataclass
class Memo:
    """Memo: one job's reusable results (see the module docstring). Start with ``Memo()``."""

    job: tuple[str, str, str] = ("", "", "")  # namespace, name, uid of the job it holds
    spec: JobSpec | None = None  # the spec ``judged`` was made under
    passes: int = 0  # the passes seen: ``observed`` holds for the one after its own only
    pods: dict[int, tuple[PodView, bool | None]] = field(default_factory=dict)  # id -> (view, belongs)
    status_ledger: tuple[Any, Ledger] | None = None  # (status.restartLedger's value, parsed)
    # (the pass, its status ledger, its replicas' names, the merged ledger, what the pods told)
    observed: tuple[int, Ledger, tuple[str, ...], Ledger, Ledger] | None = None
    judged: Judged = field(default_factory=dict)  # the survey's verdicts, by id(pod)
    quiet: Quiet | None = None  # the last pass's survey, when it decided nothing
    resurveyed: tuple[Survey, Survey] | None = None  # the last resurvey, and the one it redid (all running)
    lists: tuple[Survey, frozenset[tuple[str, int]], HostLists | None] | None = None  # host_lists'

    def seen(self, job: Job, pods: Sequence[PodView]) -> Seen:
        """seen: ``objects.pods_of(job, pods)``, each pod view judged once in its life, and
        the job's pods that came and went since the last pass."""
        key = (job.namespace, job.name, job.uid)
        if key != self.job:  # another job: nothing of this one holds
            blank = Memo(job=key)
            for f in fields(self):
                setattr(self, f.name, getattr(blank, f.name))
        if job.spec is not self.spec and job.spec != self.spec:  # the verdicts' slots hold its replicas
            self.judged, self.quiet = {}, None
        self.spec = job.spec
        self.passes += 1
        known, fresh = self.pods, {}
        mine: list[PodView] = []
        others: list[PodView] = []
        came: list[PodView] = []
        for p in pods:
            entry = known.get(id(p))
            if entry is None or entry[0] is not p:
                entry = (p, belongs(job, p))
                if entry[1]:
                    came.append(p)
            fresh[id(p)] = entry
            if entry[1] is not None:
                (mine if entry[1] else others).append(p)
        went = [known[k][0] for k in known.keys() - fresh.keys() if known[k][1]]
        self.pods = fresh
        for p in went:
            self.judged.pop(id(p), None)
        return Seen(mine, others, came, went)

    def ledger(self, status: JobStatus) -> Ledger:
        """ledger: ``Ledger.from_status(status)``, parsed again only when it changed."""
        value = status.restart_ledger.value if status.restart_ledger is not None else None
        if self.status_ledger is None or self.status_ledger[0] != value:
            self.status_ledger = (value, Ledger.from_status(status))
        return self.status_ledger[1]

    def observe(self, base: Ledger, job: Job, seen: Seen) -> Ledger:
        """observe: ``stamps.observe(base, job, seen.mine)``: ``base`` merged with what the pods
        tell (``stamps.told``), which is made again only when the pods that came and went tell
        different things; a new status ledger is one merge."""
        names = tuple(r.name for r in job.spec.replicas)
        last = self.observed
        same = last is not None and last[0] == self.passes - 1 and last[2] == names
        if last is not None and same and _told(seen.came) == _told(seen.went):
            # the pods that came tell what those that went told: what the pods tell is the same
            pods = last[4]
            merged = last[3] if last[1] is base else base.merge(pods)  # a status write: one merge
        else:
            pods = told(job, seen.mine)
            merged = base.merge(pods)
        self.observed = (self.passes, base, names, merged, pods)
        return merged

    def survey(
        self,
        job: Job,
        seen: Seen,
        nodes: Mapping[str, NodeView],
        ledger: Ledger,
        now: datetime,
        shape: Shape,
        signals: NodeSignals,
    ) -> Survey:
        """survey: ``survey.survey`` of ``seen.mine``; when the last pass's was settled and made
        of the same ledger, shape, signals and nodes, only its slots that did not run and those
        whose pods came or went are looked at again (``survey.resurvey``)."""
        last, made_of = self.quiet, (ledger, shape, signals, nodes)
        redone = None
        if last is not None and last.passes == self.passes - 1 and _same(last.made_of, made_of):
            groups = last.groups(seen, shape.keep)
            if groups is not None:
                redone = resurvey(last.found, job, nodes, now, shape, signals, self.judged, groups)
        if redone is not None and last is not None:
            found, loud = redone
            self.quiet = Quiet(self.passes, made_of, found, last.where, loud)
            self.resurveyed = (found, last.found) if not (loud or last.loud) else None
            return found
        found = survey(job, seen.mine, nodes, ledger, now, shape, signals, self.judged)
        self.quiet = None
        if (places := settled(found, ledger)) is not None:
            where = {(s.replica.name, s.index): k for k, s in enumerate(found.slots)}
            self.quiet = Quiet(self.passes, made_of, found, where, places)
        return found

    def host_lists(
        self, job: Job, found: Survey, joining: frozenset[tuple[str, int]], prev: JobStatus, now: datetime
    ) -> HostLists | None:
        """host_lists: ``hostfiles.host_lists``, or the last pass's lists when this pass's survey
        redid the one they were made of (``resurvey``), every slot running in both, and the same
        slots join. When every slot runs no wave starts and nothing is held (neither ``prev``
        nor ``now`` counts), and a slot redone holds a pod of the same name (the same replica,
        index and generation: the ledger, which holds them, is the same object), running: the
        lists are the same."""
        last, redone = self.lists, self.resurveyed
        same = last is not None and redone is not None and redone[0] is found and redone[1] is last[0]
        if last is not None and same and last[1] == joining:
            lists = last[2]
        else:
            lists = hostfiles.host_lists(job, found, joining, prev, now)
        self.lists = (found, joining, lists)
        return lists


@dataclass(frozen=True)
class Quiet:
    """Quiet: a survey that decided nothing (``survey.settled``), the pass it was made in, what
    it was made of (ledger, shape, signals, nodes), where each (replica, index) is in it, and
    which of its slots do not run (``loud``: redone every pass)."""

    passes: int
    made_of: tuple[Ledger, Shape, NodeSignals, Mapping[str, NodeView]]
    found: Survey
    where: Mapping[tuple[str, int], int]
    loud: tuple[int, ...]  # the places of its slots that do not run

    def groups(self, seen: Seen, keep: frozenset[str]) -> dict[int, list[PodView]] | None:
        """groups: the pods of each slot to redo now, by its place: those that did not run, and
        those whose pod came or went (None when a pod that went held no slot of its own, or one
        that came takes no slot that was left to it)."""
        groups = {k: [] if (p := self.found.slots[k].pod) is None else [p] for k in self.loud}
        for p in seen.went:
            k = self.place(p)
            if k is None or self.found.slots[k].pod is not p:
                return None
            groups[k] = []
        for p in seen.came:
            k = self.place(p)
            if k is None or p.name in keep or groups.get(k) != []:
                return None  # another pod is in its index still: only a full survey says which wins
            groups[k] = [p]
        return groups

    def place(self, pod: PodView) -> int | None:
        """place: where the slot of ``pod``'s (replica, index) is (None: it has none)."""
        return None if pod.replica is None or pod.index is None else self.where.get((pod.replica, pod.index))


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """_same: what a settled survey was made of, again: the same ledger object (``observe``'s,
    kept), equal shapes and signals, the same or equal nodes."""
    return a[0] is b[0] and a[1] == b[1] and a[2] == b[2] and (a[3] is b[3] or a[3] == b[3])


def _told(pods: Sequence[PodView]) -> Counter[_Stamp]:
    """_told: what ``stamps.observe`` reads of ``pods``, as a multiset."""
    return Counter((p.replica, p.index, p.generation, p.ledger_annotation) for p in pods)
