"""The text of ``aitj explain``: an Explanation (aitj.core.explain) as plain lines.

No rich markup: aitj/cli/explain.py prints these lines as they are (and adds the table).
"""

from __future__ import annotations

from aitj.core.api import InvalidJob
from aitj.core.explain import Explanation, PodExplanation


def render(e: Explanation) -> list[str]:
    """render: the explanation as plain text lines (the header, the next pass, every pod)."""
    return header_lines(e) + [line for p in e.pods for line in ["", *pod_lines(p)]]


def header_lines(e: Explanation) -> list[str]:
    """header_lines: the job (phase, condition, RestartCount) and its next pass."""
    lines = [
        f"job {e.namespace}/{e.name}: phase {e.phase or '(none yet)'}, "
        f"faultTolerant {str(e.fault_tolerant).lower()}"
    ]
    if e.deleting:
        lines.append("  being deleted")
    if e.condition is not None:
        c = e.condition
        lines.append(f"  condition: {c.type} ({c.reason}): {c.message}")
    counts = ", ".join(f"{name} {n}" for name, n in e.restart_counts)
    lines.append(f"  RestartCount: {counts}")
    if e.degraded is not None:
        d = e.degraded
        lines.append(f"  degraded since {d.since}: {d.reason}: {d.message}")
        for s in d.indices:
            until = f" until {s.until}" if s.until else ""
            lines.append(f"    {s.replica} {s.index}: {s.cause} since {s.since}{until}: {s.message}")
    lines.append("next pass:")
    lines.extend(f"  - {line}" for line in e.next_pass)
    if e.recovery:
        lines.append("recovery rules:")
        lines.extend(f"  - {line}" for line in e.recovery)
    return lines


def observed_line(p: PodExplanation) -> str:
    """observed_line: what the operator sees of a pod, in one line."""
    if not p.present:
        return "no such pod in the cluster"
    parts = [f"phase {p.phase}"]
    if p.node:
        parts.append(
            f"node {p.node} (Ready={p.node_ready})" if p.node_ready != "gone" else f"node {p.node} (gone)"
        )
    else:
        parts.append("not on a node")
    if p.exit_code is not None:
        parts.append(f"exit code {p.exit_code} (container {p.exit_container})")
    parts.append(p.deletion or "not being deleted")
    if p.disruption:
        parts.append(f"disruption {p.disruption}")
    return ", ".join(parts)


def pod_lines(p: PodExplanation) -> list[str]:
    """pod_lines: one pod: what it is, what the operator sees, the gate, every rule, the verdict
    and its notes."""
    where = f"{p.replica} {p.index}, generation {p.generation}" if p.replica is not None else "not the job's"
    lines = [f"pod {p.name} ({where})", f"  sees: {observed_line(p)}"]
    if p.failure is not None:
        lines.append(f"  failure: {p.failure}: {p.failure_detail}")
    if p.gate:
        lines.append(f"  {p.gate}")
    for n, rule in enumerate(p.rules, 1):
        lines.append(f"  rule {n} {rule.rule} (scope {rule.scope}): {rule.outcome}: {rule.why}")
    lines.append(f"  => {p.summary}")
    lines.extend(f"  {note}" for note in p.notes)
    return lines


def invalid_lines(error: InvalidJob) -> list[str]:
    """invalid_lines: a job whose spec does not parse, and what the operator does with it."""
    return [
        "the spec is invalid: the operator does not run this job; it marks it Failed (reason InvalidSpec)",
        *(f"  {e}" for e in error.errors),
    ]
