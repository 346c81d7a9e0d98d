"""The controller: the only layer that talks to the API server while operating.

Layer: above ``aitj.core``, beside ``aitj.devcluster`` (neither imports the other); ``aitj.cli``
and ``aitj.tools`` sit above it. It decides nothing: it keeps the caches the planner reads,
runs one pass per job at a time, and carries each Plan out.

- ``handlers``: kopf wiring, a few lines per handler; fills the cache.
- ``cache``: what a pass's snapshot is read from (one small interface over kopf's indexes).
- ``reconciler``: one pass per job at a time; kicks coalesce; requeues.
- ``executor``: sends what a Plan holds and handles errors; the executor contract.
- ``runner``: ``aitj run``: the API client and kopf's operator loop.
- ``metrics``, ``logs``: Prometheus metrics and structlog.
- ``sshkeys``: fresh key pairs for the ssh plugin (randomness stays out of the core).
- ``kubeclient``: the API client, the apiserver's error text, the context namespace (the CLI
  uses them too).
"""
