"""Memo: what one job's passes keep from one pass to the next (issue 26, incremental planning).

Pure, and an optimisation only: ``plan(..., memo=m)`` returns exactly what ``plan`` returns
without one (tests/unit/test_incremental_planning.py checks it on random event sequences). The
reconciler keeps one Memo per job and hands it to each of the job's passes, which it
serialises; a Memo is not safe to share between jobs running at once.

Why it is safe: every entry is the result of a pure function of inputs the entry keeps, and it
is reused only when this pass's inputs are those same objects (``is``) or equal ones (``==``),
or patched where they are not. The cache (aitj.controller.cache) hands the planner the same
immutable PodView for a pod until the pod's resourceVersion moves, and the same NodeView for a
node until it changes, so one pod event changes one view and the rest are found again by
identity. What it keeps, so that a pass costs what changed (a pod event, a status write), not
what the job holds:

- per pod view, whether it is the job's (``objects.belongs``: a name hashed per pod), and the
  ids of the job's and the others' views, and per place in the last pass's list whether its
  view is the job's: a list as long as the last, other objects at a few places only (a pod
  event), is sorted by looking at those places (found by ``operator.is_not`` in C), another by
  set arithmetic on ids; both with ``itertools.compress`` (in C), and the very same views as
  the last pass's at once;
- the status's ``restartLedger`` (``ledger_delta.Parsed``: its value, its Ledger, each index's
  fields), read again only where the value changed (``ledger_delta.reparse``);
- what the pods tell of the ledger (``ledger_delta.Told``: each index's generations, the pods'
  stamps by annotation, the ledgers they make), counted by delta from the views that came and
  went (``retold``), and the status's ledger merged with it (``stamps.observe``), patched where
  either changed (``remerged``); ``Observed.changes`` says which index records changed;
- per current pod, the survey's verdict of it (``survey.Judged``: ``policy.classify`` and
  ``restart_timed_out``), while its node's view, its slot and the replica's spec are the same;
  the clock is part of that key exactly when ``policy.restart_timed_out`` reads it;
- the last pass's survey (``Quiet``) when every slot but some (``loud``) is clean (running its
  one pod with no failure: ``survey_terms.clean``) and it retired no pod but theirs: while the
  shape, node signals and nodes are the same and no epoch moved, the next pass redoes only the
  loud slots, those whose pods came or went and those whose ledger record changed
  (``survey.resurvey``), in the survey's order, deciding restarts, retirements and releases
  as the full survey would; a Replica- or All-scope restart (other slots go stale) or many
  slots to redo, and the pass surveys all. The survey's counts, the slots that do not run
  (``Survey.astir``: what the parts that create, wait and fail look at) and the masters'
  places are kept by delta;
- the discovery lists with their entries' places (``listing.Listing``), patched at the slots a
  resurvey redid (``listing.relisted``) while none waits; their texts (``discovery_texts``).

Beside it, the objects themselves keep what was found of them: a ledger's history its index
records (shared with the history it was patched from: ``ledger_index``), restart count and
status form (``ReplicaHistory.wire``, patched from the history it was patched from), the
discovery lists their pod names and digest. docs/operator.md, "Large
jobs: the planner's memo", has the figures.

Nothing in it is a decision: a pass with an empty Memo decides the same, only slower. A Memo
forgets everything when it is handed another job (another namespace, name or uid), or the job
with its key newly written (which pods are its own hangs on it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from itertools import compress
from typing import Any, cast

from aitj.core.api import Job, JobSpec, JobStatus
from aitj.core.nodesignals import NodeSignals
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import memo_views
from aitj.core.planner.discovery_texts import Texts
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.ledger_delta import Changes, Parsed, Told, parse, remerged, reparse, retold, tell
from aitj.core.planner.listing import Listing, listing, relisted
from aitj.core.planner.objects import belongs
from aitj.core.planner.survey import Judged, RetireReason, Shape, Survey, clean, resurvey, survey
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

    # namespace, name, uid and key (status.ownership: the pods' names hang on it) of its job
    job: tuple[str, str, str, str | None] = ("", "", "", None)
    spec: JobSpec | None = None  # the spec ``judged`` was made under
    passes: int = 0  # the passes seen: ``observed`` holds for the one after its own only
    pods: dict[int, tuple[PodView, bool | None]] = field(default_factory=dict)  # id -> (view, belongs)
    mine_ids: set[int] = field(default_factory=set)  # the ids of those the job's
    other_ids: set[int] = field(default_factory=set)  # the ids of those with its label it did not make
    views: list[PodView] = field(default_factory=list)  # the last pass's views, in order
    # by place in ``views``: whether the view is the job's, whether it is another's
    in_mine: list[bool] = field(default_factory=list)
    in_others: list[bool] = field(default_factory=list)
    last: Seen | None = None  # what ``seen`` made of them (None: ``_seen_each`` did)
    doubled: int = -1  # the last pass handed a view twice
    parsed: Parsed | None = None  # status.restartLedger's value, parsed
    # the ledger ``parsed`` was patched from, and where
    reparsed: tuple[Ledger | None, Changes] = (None, None)
    observed: Observed | None = None  # the last pass's ledgers
    judged: Judged = field(default_factory=dict)  # the survey's verdicts, by id(pod)
    quiet: Quiet | None = None  # the last pass's survey, when it decided nothing
    # the last resurvey, the one it redid, and the places it redid
    resurveyed: tuple[Survey, Survey, tuple[int, ...]] | None = None
    lists: tuple[Survey, frozenset[tuple[str, int]], Listing] | None = None  # host_lists'
    texts: Texts = field(default_factory=Texts)  # the discovery ConfigMap's texts, by pod

    def seen(self, job: Job, pods: Sequence[PodView]) -> Seen:
        """seen: ``objects.pods_of(job, pods)``, each pod view judged once in its life, and
        the job's pods that came and went since the last pass."""
        key = (job.namespace, job.name, job.uid, job.name_key)
        if key != self.job:  # another job, or its key just written: nothing of this one holds
            blank = Memo(job=key)
            for f in fields(self):
                setattr(self, f.name, getattr(blank, f.name))
        if job.spec is not self.spec and job.spec != self.spec:  # the verdicts' slots hold its replicas
            self.judged, self.quiet = {}, None
        self.spec = job.spec
        self.passes += 1
        # The places whose view is another object than the last pass's (None: not as many views).
        moved = memo_views.moved(pods, self.views)
        if moved == [] and self.last is not None:  # the very same views (a status write's pass)
            return Seen(list(self.last.mine), list(self.last.others), [], [])
        old, self.views, self.last = self.views, list(pods), None
        # A pod event changes a view or two in place: the others are not looked at, unless the
        # last pass was handed a view twice (``_seen_each`` kept no places).
        if moved is not None and len(moved) * 4 <= len(pods) and self.doubled != self.passes - 1:
            at_places = self._seen_at(job, pods, old, moved)
            if at_places is not None:
                return at_places
        elif self.doubled != self.passes - 1 and (got := memo_views.shifted(self, job, pods, old)):
            return cast(Seen, got)  # a pod went, came or moved: the views after it shifted
        ids = list(map(id, pods))
        fresh = set(ids)
        if len(fresh) != len(ids):  # a view given twice: sorted one by one, as pods_of does
            # Counted twice by the survey (a pod superseded by itself) and what the pods tell:
            # this pass keeps neither for the next (``doubled``).
            self.quiet, self.doubled = None, self.passes
            return self._seen_each(job, pods)
        came = [pods[k] for k in sorted(map(ids.index, fresh - self.pods.keys()))]
        gone = self._turnover(job, came, self.pods.keys() - fresh)
        # Sorted in C: a pass of a job of thousands looks at each of its pods' ids, not more.
        self.in_mine = list(map(self.mine_ids.__contains__, ids))
        self.in_others = list(map(self.other_ids.__contains__, ids)) if self.other_ids else [False] * len(ids)
        return self._sorted(pods, came, gone)

    def _seen_at(
        self, job: Job, pods: Sequence[PodView], old: list[PodView], moved: list[int]
    ) -> Seen | None:
        """_seen_at: ``seen`` when the views at places ``moved`` alone are other objects than
        ``old``'s there; None (nothing changed) when one of them is also at another place."""
        known = self.pods
        new_ids = [id(pods[k]) for k in moved]
        old_ids = {id(old[k]) for k in moved}
        fresh = set(new_ids)
        if len(fresh) != len(new_ids) or any(i in known and i not in old_ids for i in new_ids):
            return None  # a view given twice: at a moved place and at one that did not move
        came = [pods[k] for k, i in zip(moved, new_ids, strict=True) if i not in old_ids]
        gone = self._turnover(job, came, old_ids - fresh)
        for k, i in zip(moved, new_ids, strict=True):
            self.in_mine[k] = known[i][1] is True
            self.in_others[k] = known[i][1] is False
        return self._sorted(pods, came, gone)

    def _turnover(
        self, job: Job, came: list[PodView], gone_ids: Iterable[int]
    ) -> list[tuple[PodView, bool | None]]:
        """_turnover: the views that came judged and known, those of ``gone_ids`` forgotten
        (returned with whether each was the job's)."""
        known = self.pods
        gone = [known.pop(i) for i in gone_ids]
        for p, _ in gone:
            self.judged.pop(id(p), None)
        for p in came:
            known[id(p)] = (p, belongs(job, p))
        self.mine_ids -= {id(p) for p, _ in gone}
        self.mine_ids |= {id(p) for p in came if known[id(p)][1]}
        self.other_ids -= {id(p) for p, _ in gone}
        self.other_ids |= {id(p) for p in came if known[id(p)][1] is False}
        return gone

    def _sorted(
        self, pods: Sequence[PodView], came: list[PodView], gone: list[tuple[PodView, bool | None]]
    ) -> Seen:
        """_sorted: the Seen of ``pods`` by the places' masks, kept as ``last``."""
        mine = list(compress(pods, self.in_mine))
        others = list(compress(pods, self.in_others)) if self.other_ids else []
        self.last = Seen(mine, others, [p for p in came if self.pods[id(p)][1]], [p for p, b in gone if b])
        return Seen(list(mine), list(others), self.last.came, self.last.went)

    def _seen_each(self, job: Job, pods: Sequence[PodView]) -> Seen:
        """_seen_each: ``seen``, each pod view looked up in turn (a list holding one twice)."""
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
        self.mine_ids = {k for k, e in fresh.items() if e[1]}
        self.other_ids = {k for k, e in fresh.items() if e[1] is False}
        for p in went:
            self.judged.pop(id(p), None)
        return Seen(mine, others, came, went)

    def ledger(self, status: JobStatus) -> Ledger:
        """ledger: ``Ledger.from_status(status)``, parsed again only where it changed
        (``ledger_delta.reparse``)."""
        value = status.restart_ledger.value if status.restart_ledger is not None else None
        last = self.parsed
        if last is None:
            self.parsed, self.reparsed = parse(value), (None, None)
        elif last.value != value:
            self.parsed, changes = reparse(last, value)
            self.reparsed = (last.ledger, changes)
        else:
            self.reparsed = (last.ledger, {})
        assert self.parsed is not None
        return self.parsed.ledger

    def observe(self, base: Ledger, job: Job, seen: Seen) -> Ledger:
        """observe: ``stamps.observe(base, job, seen.mine)``: ``base`` merged with what the pods
        tell (``stamps.told``). What the pods tell is kept by delta (``ledger_delta.retold``:
        the same when the pods that came tell what those that went told), and the merge is the
        last one patched where either changed (``ledger_delta.remerged``); ``changes`` says
        where, for the survey."""
        names = tuple(r.name for r in job.spec.replicas)
        last = self.observed
        if self.doubled == self.passes:
            self.observed = None
            return base.merge(tell(names, seen.mine).ledger)
        if last is None or last.passes != self.passes - 1 or last.names != names:
            told = tell(names, seen.mine)
            merged = base.merge(told.ledger)
            self.observed = Observed(self.passes, base, names, told, merged, None, None)
            return merged
        again: tuple[Told, Changes] | None = (last.told, {})
        if _told(seen.came) != _told(seen.went):
            again = retold(last.told, names, seen.came, seen.went)
        told, ct = again if again is not None else (tell(names, seen.mine), None)
        since, cb = self.reparsed
        if base is last.base:
            cb = {}
        elif since is not last.base:
            cb = None
        merged, changes = remerged(last.merged, base, told.ledger, cb, ct)
        self.observed = Observed(self.passes, base, names, told, merged, changes, last.merged)
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
        """survey: ``survey.survey`` of ``seen.mine``; when the last pass's was made of the same
        shape, signals and nodes, and of a ledger this pass's differs from in some index records
        only (``observe``'s changes; no epoch moved), only its slots that were not ``clean``,
        those whose pods came or went and those whose records changed are redone
        (``survey.resurvey``)."""
        last, made_of = self.quiet, (ledger, shape, signals, nodes)
        found, groups = None, self._groups(seen, ledger, made_of)
        if last is not None and groups is not None:
            found = resurvey(last.found, job, made_of, now, self.judged, groups)
        if last is not None and groups is not None and found is not None:
            charging = _charging(found, last.where)
            loud = {k: g for k, g in groups.items() if not clean(found.slots[k], g) or k in charging}
            self.quiet = Quiet(self.passes, made_of, found, last.where, loud)
            self.resurveyed = (found, last.found, tuple(groups))
            return found
        found = survey(job, seen.mine, nodes, ledger, now, shape, signals, self.judged)
        self.quiet, self.resurveyed = None, None
        group_level = any(
            r.reason in (RetireReason.NOT_IN_SPEC, RetireReason.SCALED_AWAY) for r in found.retirees
        )
        if not group_level and self.doubled != self.passes:
            where = {(s.replica.name, s.index): k for k, s in enumerate(found.slots)}
            self.quiet = Quiet(self.passes, made_of, found, where, _loud(found, where, seen.mine, shape.keep))
        return found

    def _groups(
        self, seen: Seen, ledger: Ledger, made_of: tuple[Any, ...]
    ) -> dict[int, list[PodView]] | None:
        """_groups: the slots of the last pass's survey to redo in this one (``Quiet.groups``),
        when it can be redone (None: survey all)."""
        last, observed = self.quiet, self.observed
        if last is None or last.passes != self.passes - 1 or not _same(last.made_of, made_of):
            return None
        before = last.made_of[0]
        changes: Changes = {} if ledger is before else None
        if (
            changes is None
            and observed is not None
            and observed.passes == self.passes
            and observed.since is before
        ):
            changes = observed.changes
        if changes is None or any(ledger.replica(n).epoch != before.replica(n).epoch for n in changes):
            return None
        groups = last.groups(seen, made_of[1].keep, changes)
        if groups is not None and len(groups) > max(8, len(last.found.slots) // 4):
            return None  # many slots: the full survey is as quick
        return groups

    def host_lists(
        self, job: Job, found: Survey, joining: frozenset[tuple[str, int]], prev: JobStatus, now: datetime
    ) -> HostLists | None:
        """host_lists: ``hostfiles.host_lists``; when this pass's survey redid the one the last
        lists were made of (``resurvey``) with the same slots joining, those lists patched at
        the slots it redid (``listing.relisted``)."""
        last, redone = self.lists, self.resurveyed
        listed = None
        same = last is not None and redone is not None and redone[0] is found and redone[1] is last[0]
        if last is not None and redone is not None and same and last[1] == joining:
            listed = relisted(last[2], last[0], found, redone[2], joining, prev, now)
        if listed is None:
            listed = listing(job, found, joining, prev, now)
        self.lists = (found, joining, listed)
        return listed.lists


@dataclass(frozen=True)
class Observed:
    """Observed: a pass's ledgers: the status's (``base``), what its pods told, both merged, and
    where the merge changed (``ledger_delta.Changes``) since the pass before's (``since``)."""

    passes: int
    base: Ledger
    names: tuple[str, ...]
    told: Told
    merged: Ledger
    changes: Changes
    since: Ledger | None  # the merge ``changes`` are counted from (the pass before's)


@dataclass(frozen=True)
class Quiet:
    """Quiet: a survey whose every slot but the ``loud`` ones is ``clean`` (survey.clean) and
    that retired no pod but theirs, the pass it was made in, what it was made of (ledger,
    shape, signals, nodes), where each (replica, index) is in it, and the pods of each loud
    slot (by place: redone every pass)."""

    passes: int
    made_of: tuple[Ledger, Shape, NodeSignals, Mapping[str, NodeView]]
    found: Survey
    where: Mapping[tuple[str, int], int]
    loud: Mapping[int, list[PodView]]  # the places of its slots that are not clean, and their pods

    def groups(
        self, seen: Seen, keep: frozenset[str], changes: Mapping[str, set[int]]
    ) -> dict[int, list[PodView]] | None:
        """groups: the pods of each slot to redo now, by its place: the loud ones, those whose
        pods came or went, and those whose index records changed (``changes``). None when a pod
        that came or went holds no slot (only a full survey retires it)."""
        groups = {k: list(pods) for k, pods in self.loud.items()}
        for p in seen.went:
            k = self.place(p)
            group = groups.setdefault(k, self._pods(k)) if k is not None else []
            at = next((j for j, q in enumerate(group) if q is p), None)
            if at is None:
                return None
            del group[at]
        for p in seen.came:
            k = self.place(p)
            if k is None or p.name in keep:
                return None
            groups.setdefault(k, self._pods(k)).append(p)
        for name, indices in changes.items():
            for i in indices:
                k = self.where.get((name, i))
                if k is not None:
                    groups.setdefault(k, self._pods(k))
        return groups

    def _pods(self, k: int) -> list[PodView]:
        """_pods: the pods of the clean slot at ``k`` (its one pod)."""
        pod = self.found.slots[k].pod
        return [] if pod is None else [pod]

    def place(self, pod: PodView) -> int | None:
        """place: where the slot of ``pod``'s (replica, index) is (None: it has none)."""
        return _place(self.where, pod)


def _loud(
    found: Survey, where: Mapping[tuple[str, int], int], pods: Sequence[PodView], keep: frozenset[str]
) -> dict[int, list[PodView]]:
    """_loud: the slots of a full survey that are not clean, with their pods."""
    groups: dict[int, list[PodView]] = {}
    for p in pods:
        k = None if p.name in keep else _place(where, p)
        if k is not None:
            groups.setdefault(k, []).append(p)
    charging = _charging(found, where)
    return {
        k: groups.get(k, [])
        for k, s in enumerate(found.slots)
        if not clean(s, groups.get(k, [])) or k in charging
    }


def _charging(found: Survey, where: Mapping[tuple[str, int], int]) -> set[int]:
    """_charging: the places of the slots whose in-place restarts ``found`` charged. Such a slot
    is clean (its pod runs on), and its charge is in no ledger but this pass's: should the
    status write fail, the next pass starts from the same ledger and would keep the slot as it
    is, the charge lost. So it is redone in the next pass, which charges it again or finds it
    charged (docs/semantics.md section 23; tests/unit/test_inplace_failed_write.py)."""
    return {k for r in found.in_place if (k := where.get((r.replica, r.index))) is not None}


def _place(where: Mapping[tuple[str, int], int], pod: PodView) -> int | None:
    """_place: where in a survey (``where``: its places by (replica, index)) the slot of
    ``pod``'s (replica, index) is (None: it has none)."""
    return None if pod.replica is None or pod.index is None else where.get((pod.replica, pod.index))


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """_same: what a survey was made of, again but the ledger: equal shapes and signals, the
    same or equal nodes."""
    return a[1] == b[1] and a[2] == b[2] and (a[3] is b[3] or a[3] == b[3])


def _told(pods: Sequence[PodView]) -> Counter[_Stamp]:
    """_told: what ``stamps.observe`` reads of ``pods``, as a multiset."""
    return Counter((p.replica, p.index, p.generation, p.ledger_annotation) for p in pods)
