"""API requests as the apiserver counts them (``apiserver_request_total`` on its /metrics).

``request_counts`` and ``per_recovery`` are pure: the text of /metrics becomes counts by
(verb, group, resource, subresource); the difference across a window of recoveries becomes
the writes one recovery cost. The apiserver does not say who sent a request, so each count is
read from a request only the operator sends during that window: pod creates (the scheduler
binds through ``pods/binding``, kwok writes ``pods/status``), pod PATCHes, the job's status
writes, core/v1 Events (the scheduler posts events.k8s.io ones).
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

Key = tuple[str, str, str, str]  # verb, group, resource, subresource

WRITES = ("CREATE", "POST", "PATCH", "UPDATE", "PUT", "DELETE")


def request_counts(metrics_text: str) -> dict[Key, float]:
    """request_counts: apiserver_request_total summed over codes, scopes and versions."""
    counts: dict[Key, float] = {}
    # /metrics is megabytes of histograms: parse only this counter's lines (10 x faster).
    wanted = "\n".join(
        line
        for line in metrics_text.splitlines()
        if line.startswith(("apiserver_request_total", "# TYPE apiserver_request_total"))
    )
    for family in text_string_to_metric_families(wanted):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            if sample.name != "apiserver_request_total":
                continue
            labels = sample.labels
            key = (
                labels.get("verb", ""),
                labels.get("group", ""),
                labels.get("resource", ""),
                labels.get("subresource", ""),
            )
            counts[key] = counts.get(key, 0.0) + sample.value
    return counts


def diff(before: Mapping[Key, float], after: Mapping[Key, float]) -> dict[Key, float]:
    """diff: the requests made between two scrapes (only those that grew)."""
    out: dict[Key, float] = {}
    for key, value in after.items():
        grown = value - before.get(key, 0.0)
        if grown > 0:
            out[key] = grown
    return out


def per_recovery(delta: Mapping[Key, float], recoveries: int, harness_deletes: int) -> dict[str, float]:
    """per_recovery: what ``recoveries`` recoveries cost, per recovery: the operator's pod
    creates, pod PATCHes, status writes of the job and core Events (the budget of F5), and for
    the record its pod deletes (the harness's own ``harness_deletes`` taken off) and the
    Service endpoints written by kube-controller-manager."""
    if recoveries <= 0:
        raise ValueError("no recoveries")

    def total(verbs: tuple[str, ...], group: str, resources: tuple[str, ...], sub: str = "") -> float:
        return sum(
            v
            for (verb, g, r, s), v in delta.items()
            if verb in verbs and g == group and r in resources and s == sub
        )

    status = sum(
        v
        for (verb, g, r, s), v in delta.items()
        if verb in ("PATCH", "PUT", "UPDATE", "APPLY") and r == "aitrainingjobs" and s == "status"
    )
    out = {
        "pod creates": total(("POST", "CREATE"), "", ("pods",)),
        "pod patches": total(("PATCH", "APPLY"), "", ("pods",)),
        "status writes": status,
        "events": total(("POST", "CREATE"), "", ("events",)),
        "pod deletes": max(0.0, total(("DELETE",), "", ("pods",)) - harness_deletes),
        "endpoint writes": total(WRITES, "", ("endpoints",))
        + total(WRITES, "discovery.k8s.io", ("endpointslices",)),
    }
    return {k: v / recoveries for k, v in out.items()}
