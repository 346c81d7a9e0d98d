"""promql: which metrics and labels a PromQL expression uses, read by a small tokenizer, and
the check that each one is exported by the operator (``aitj.controller.metrics.CATALOGUE``).

The tokenizer knows PromQL's lexical shape: selectors ``name{label op "value", ...}``, calls
``f(...)``, grouping ``by|without|on|ignoring|group_left|group_right (labels)``, ranges
``[5m]`` and the binary operators. It is checked against Prometheus's own parser in the
end-to-end test (``/api/v1/parse_query``), so what it reads is what Prometheus reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from aitj.controller.metrics import CATALOGUE, Kind

# Series that are not the operator's: Prometheus's per-target health, with its target labels.
# The operator's families may use only their own labels (``namespace`` is the training job's:
# the ServiceMonitor's relabelings keep it), and a panel that leaned on a target label (the
# scrape job, the instance) would break under another scrape config.
EXTRA_SERIES: dict[str, frozenset[str]] = {"up": frozenset({"job", "instance"})}
# Labels a multi-cluster setup adds to every series (an external label): the dashboards filter on
# it, matching series without it too (boards.CLUSTER).
SETUP_LABELS = frozenset({"cluster"})

GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "atan2"}) | GROUPING
FUNCTIONS = frozenset(
    {
        "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
        "count_values", "group", "rate", "irate", "increase", "delta", "idelta", "deriv",
        "histogram_quantile", "absent", "absent_over_time", "abs", "ceil", "floor", "round",
        "clamp", "clamp_min", "clamp_max", "label_replace", "label_join", "sort", "sort_desc",
        "time", "timestamp", "vector", "scalar", "changes", "resets", "avg_over_time",
        "max_over_time", "min_over_time", "sum_over_time", "count_over_time", "last_over_time",
        "quantile_over_time", "present_over_time",
    }
)  # fmt: skip

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<duration>(?:\d+(?:ms|[smhdwy]))+)
    | (?P<number>\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+)
    | (?P<variable>\$\{?\w+\}?)
    | (?P<ident>[A-Za-z_:][\w:]*)
    | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^<>=,(){}\[\]:])
    )""",
    re.X,
)


class PromQLError(ValueError):
    """An expression the tokenizer cannot read."""


@dataclass
class Usage:
    """Usage: the series selectors of an expression (metric name -> labels matched on it) and
    the labels its grouping clauses name."""

    selectors: dict[str, set[str]] = field(default_factory=dict)
    grouping: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)


def tokens(expr: str) -> list[tuple[str, str]]:
    """tokens: ``expr`` as (kind, text) pairs; raises PromQLError at a character it cannot read."""
    out: list[tuple[str, str]] = []
    pos = 0
    expr = expr.rstrip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            raise PromQLError(f"cannot read {expr[pos:]!r} in {expr!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _label_list(toks: list[tuple[str, str]], i: int) -> tuple[list[str], int]:
    """Reads ``(a, b, ...)`` starting at toks[i] == "(": the labels and the index after ")"."""
    if i >= len(toks) or toks[i][1] != "(":
        raise PromQLError("a grouping keyword must be followed by a label list")
    labels: list[str] = []
    i += 1
    while toks[i][1] != ")":
        if toks[i][0] == "ident":
            labels.append(toks[i][1])
        elif toks[i][1] != ",":
            raise PromQLError(f"unexpected {toks[i][1]!r} in a label list")
        i += 1
    return labels, i + 1


def _matchers(toks: list[tuple[str, str]], i: int) -> tuple[set[str], int]:
    """Reads ``{l op "v", ...}`` starting at toks[i] == "{": the labels and the index after "}"."""
    labels: set[str] = set()
    i += 1
    while toks[i][1] != "}":
        if toks[i][1] == ",":
            i += 1
            continue
        name, op, value = toks[i], toks[i + 1], toks[i + 2]
        if name[0] != "ident" or op[1] not in ("=", "!=", "=~", "!~") or value[0] != "string":
            raise PromQLError(f"bad label matcher near {name[1]!r}")
        labels.add(name[1])
        i += 3
    return labels, i + 1


def usage(expr: str) -> Usage:
    """usage: the metrics, matched labels, grouping labels and functions of ``expr``."""
    toks = tokens(expr)
    found = Usage()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "ident" and text in GROUPING:
            labels, i = _label_list(toks, i + 1)
            found.grouping.update(labels)
            continue
        if kind == "ident" and text in KEYWORDS:
            i += 1
            continue
        if kind == "ident" and (nxt == "(" or (text in FUNCTIONS and nxt in GROUPING)):
            if text not in FUNCTIONS:
                raise PromQLError(f"unknown function {text!r} in {expr!r}")
            found.functions.add(text)
            i += 1
            continue
        if kind == "ident":
            matched: set[str] = set()
            i += 1
            if i < len(toks) and toks[i][1] == "{":
                matched, i = _matchers(toks, i)
            found.selectors.setdefault(text, set()).update(matched)
            continue
        if text == "{":
            raise PromQLError(f"a selector without a metric name in {expr!r}")
        i += 1
    return found


def exported() -> dict[str, frozenset[str]]:
    """exported: every series name a query may use and the labels it carries."""
    series: dict[str, frozenset[str]] = dict(EXTRA_SERIES)
    for family in CATALOGUE:
        for name in family.series_names():
            extra = {"le"} if name.endswith("_bucket") and family.kind is Kind.HISTOGRAM else set()
            series[name] = frozenset({*family.labels, *extra, *SETUP_LABELS})
    return series


_LEGEND = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def problems(expr: str, legend: str = "") -> list[str]:
    """problems: what in ``expr`` (and its legend) the operator does not export; empty when all
    is known."""
    try:
        found = usage(expr)
    except PromQLError as e:
        return [str(e)]
    known = exported()
    out: list[str] = []
    for name, labels in found.selectors.items():
        if name not in known:
            out.append(f"metric {name!r} is not exported")
            continue
        out += [f"{name} has no label {label!r}" for label in sorted(labels - known[name])]
    offered = set().union(*(known.get(n, frozenset()) for n in found.selectors)) if found.selectors else set()
    for label in sorted((found.grouping | set(_LEGEND.findall(legend))) - offered):
        out.append(f"label {label!r} is on none of {sorted(found.selectors)}")
    return out


def ast_usage(node: Any, found: Usage | None = None) -> Usage:
    """ast_usage: the same reading as ``usage``, taken from Prometheus's own syntax tree (the
    JSON of ``/api/v1/parse_query``), so the tokenizer can be checked against the parser."""
    found = found if found is not None else Usage()
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in ("vectorSelector", "matrixSelector"):
            labels = {m["name"] for m in node["matchers"] if m["name"] != "__name__"}
            found.selectors.setdefault(node["name"], set()).update(labels)
        elif kind == "aggregation":
            found.functions.add(node["op"])
            found.grouping.update(node["grouping"] or [])
        elif kind == "call":
            found.functions.add(node["func"]["name"])
        elif kind == "binaryExpr" and node.get("matching"):
            found.grouping.update(node["matching"]["labels"] or [])
            found.grouping.update(node["matching"]["include"] or [])
        for key, value in node.items():
            if key != "func":
                ast_usage(value, found)
    elif isinstance(node, list):
        for value in node:
            ast_usage(value, found)
    return found
