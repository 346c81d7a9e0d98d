"""The decision core: pure functions of (spec, observed pods and nodes, now).

Layer: the bottom. It imports the standard library and itself only: no kopf, kubernetes,
prometheus_client, structlog, click, rich or yaml (import-linter's forbidden contract), and it
never reads the clock. Everything that decides what the operator does lives here and is
table-tested without a cluster.

Inside, from the top (a module may import those below it, never above):
- ``explain``: what the next pass would do, pod by pod, and why (``aitj explain``).
- ``planner``: ``plan(job, pods, nodes, now) -> Plan``, the one decision of a pass.
- ``policy`` (failure classification, rule matching) and ``render`` (manifests).
- ``observed``: slim views of pods and nodes, built from watch bodies.
- ``api``: the AITrainingJob model, its names, and validation with field paths.
- ``exitcodes`` (the exitCodes grammar), ``naming`` (deterministic names) and ``wire`` (JSON
  field access and timestamps as the API writes them).
- ``metrics_auth``: who may read /metrics (the TokenReview and SubjectAccessReview asked, and
  the answer), for ``aitj.controller.metrics_server``; it imports nothing of the rest.
"""
