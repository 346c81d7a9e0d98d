"""Dashboards and alerts as code: the Grafana dashboards, the Prometheus alert rules, the
manifests that ship them and the pictures drawn from a live Prometheus, all from one source
(docs/dashboards.md).

Modules: ``spec`` (the vocabulary), ``boards`` (the two dashboards), ``alerts`` (the rules),
``grafana`` (Grafana JSON through grafana-foundation-sdk), ``generate`` (every generated file),
``promql`` (the catalogue check), ``render`` (matplotlib pictures).
"""
