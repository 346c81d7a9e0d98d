"""Explain: what the operator sees of a job, and what its next pass would do and why.

Pure (no kopf, kubernetes or prometheus_client; import-linter enforces it) and clock-free: the
caller passes ``now``. ``aitj explain`` (aitj/cli/explain.py) fetches the job, its pods and the
nodes, and hands them here; nothing here talks to the API, so an explanation can never change
the cluster.

The answer comes from the decision core itself, computed once, not from a copy of its rules:
``plan_and_assessment`` gives the next pass (creates, deletes, status, requeue) and the
Assessment it was made from; its survey gives each index's verdict (restart, failure that
stands, replaced, gated), and the trace of ``policy.decide`` carried by each decision gives the
rule-by-rule reasons. So the explanation says what the operator would do, exactly, and also
why each ``faultTolerantPolicy`` rule did or did not fire.

- ``model``: the frozen data (``Explanation``, ``PodExplanation``, ...; ``to_json``).
- ``job``: ``explain(job, pods, nodes, now, pod_name=None) -> Explanation``: the job and its
  next pass.
- ``verdicts``: each pod's verdict, read back from the Assessment and the Plan.

The text is the CLI's: aitj/cli/explain_text.py.
"""

from aitj.core.explain.job import explain
from aitj.core.explain.model import (
    ConditionView,
    DegradedView,
    Explanation,
    PodExplanation,
    RuleEntry,
    RuleOutcome,
    ShortfallView,
    UnknownPod,
    Verdict,
)

__all__ = [
    "ConditionView",
    "DegradedView",
    "Explanation",
    "PodExplanation",
    "RuleEntry",
    "RuleOutcome",
    "ShortfallView",
    "UnknownPod",
    "Verdict",
    "explain",
]
