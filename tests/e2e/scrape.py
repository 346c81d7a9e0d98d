"""The operator's /metrics as the e2e tests read it: every sample by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.operator_process import OperatorProcess

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(operator: OperatorProcess) -> Samples:
    """samples: every sample on /metrics, by (name, labels)."""
    out: Samples = {}
    for family in text_string_to_metric_families(operator.metrics()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found: Samples, name: str, **labels: str) -> float:
    """value: the sum of the samples of ``name`` whose labels include ``labels`` (0: none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= ls)
