"""The data of an explanation: the job, its next pass, and each pod's verdict (``aitj explain``).

Pure, frozen, and plain enough for ``json.dumps`` (``Explanation.to_json``, ``aitj explain
--json``); aitj/cli/explain_text.py turns it into text.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


class Verdict(enum.StrEnum):
    """Verdict: what the next pass does with one pod (or one index that has no pod)."""

    HEALTHY = "healthy"  # Running, nothing wrong: nothing to do
    PENDING = "pending"  # on its way to Running, nothing wrong
    SUCCEEDED = "succeeded"  # finished with exit code 0: nothing to do
    RESTART = "restart"  # a failure the policy restarts: the pod is replaced
    FAILS = "fails"  # a failure that stands: the replica's failPolicy judges it
    REPLACED = "replaced"  # the operator retires it (superseded, scope restart, scale-in, ...)
    CREATE = "create"  # an index with no pod: the next pass creates one
    GATED = "gated"  # a master (launcher) index waiting until every worker index runs
    CLEANUP = "cleanup"  # the job has finished: only cleanPodPolicy applies
    IGNORED = "ignored"  # the job is being deleted: the operator plans nothing
    FOREIGN = "foreign"  # carries the job's labels, but the job did not make it: counts for nothing


class RuleOutcome(enum.StrEnum):
    """RuleOutcome: what one faultTolerantPolicy rule made of a failure (policy.RuleWhy, in the
    five words ``aitj explain`` shows)."""

    FIRES = "fires"  # the first active rule that names the failure: its scope is restarted
    NO_MATCH = "no match"  # active, but it does not name this exit code or event
    BUDGET_SPENT = "budget used up"  # names the failure, but its restartLimit (in its window) is used up
    INACTIVE = "inactive"  # the replica restartPolicy does not allow rules of its kind
    NOT_TRIED = "not tried"  # an earlier rule fired
    IGNORED = "ignored"  # faultTolerant is false: rules are not used at all


@dataclass(frozen=True)
class RuleEntry:
    """RuleEntry: one rule, as written, its restartScope, and what it made of the failure (one
    step of policy.decide's trace)."""

    rule: str
    scope: str
    outcome: RuleOutcome
    why: str


@dataclass(frozen=True)
class PodExplanation:
    """PodExplanation: one pod as the operator sees it, and its verdict.

    ``present`` is False for an index that has no pod (never created, vanished, or waiting for
    its replacement); then ``name`` is the pod the index had or is about to get. ``node_ready``
    is the Ready status of the pod's node ("True", "False", "Unknown") or "gone"; None when the
    pod is not on a node. ``gate`` says whether the replica restartPolicy allows restarting
    this kind of failure at all; ``rules`` how each rule judged it; ``summary`` the verdict in
    one line; ``notes`` what follows from it (failPolicy, limits, timeouts, deletion).
    """

    name: str
    replica: str | None
    index: int | None
    generation: int | None
    present: bool
    phase: str | None
    node: str | None
    node_ready: str | None
    exit_code: int | None
    exit_container: str | None
    deletion: str | None
    disruption: str | None
    failure: str | None  # a policy.FailureKind value
    failure_detail: str | None
    verdict: Verdict
    summary: str
    gate: str | None
    rules: tuple[RuleEntry, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class ConditionView:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class ShortfallView:
    """ShortfallView: one index the job runs short of (``status.degraded.indices``): why, since
    when, and until when for a cause that ends by itself."""

    replica: str
    index: int
    cause: str
    message: str
    since: str
    until: str | None = None


@dataclass(frozen=True)
class DegradedView:
    """DegradedView: ``status.degraded`` as the next pass writes it: the job, having run, goes on
    with fewer pods than it wants (docs/semantics.md, "A visible degraded state"). ``count``:
    the indices short; ``indices``: the first of them the status lists."""

    since: str
    reason: str
    message: str
    count: int
    indices: tuple[ShortfallView, ...]


@dataclass(frozen=True)
class Explanation:
    """Explanation: the job as the operator sees it, what its next pass does, and every pod.

    ``restart_counts``: ``status.RestartCount`` as observed (the next pass may change it; see
    ``next_pass``). ``next_pass``: the Plan of the next pass, one line per action.
    ``degraded``: why the job runs short of pods, as the next pass's status says.
    ``recovery``: the rules' budgets left, backoffs and excluded nodes, one line each.
    """

    namespace: str
    name: str
    phase: str | None
    condition: ConditionView | None
    restart_counts: tuple[tuple[str, int], ...]
    fault_tolerant: bool
    deleting: bool
    next_pass: tuple[str, ...]
    pods: tuple[PodExplanation, ...]
    degraded: DegradedView | None = None  # None: the job does not run short of pods
    # the recovery rules (issue 15): budgets left, backoffs, excluded nodes (aitj.core.explain.rule_budgets)
    recovery: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """to_json: plain JSON data (``aitj explain --json``)."""
        out = asdict(self)
        out["restart_counts"] = dict(self.restart_counts)
        return out


class UnknownPod(LookupError):
    """UnknownPod: ``pod_name`` is neither a pod of the job nor a pod one of its indices expects."""

    def __init__(self, pod: str, known: Sequence[str]) -> None:
        self.pod = pod
        self.known = tuple(known)
        listed = ", ".join(self.known) or "none"
        super().__init__(f"pod {pod} is not a pod of this job (its pods: {listed})")
