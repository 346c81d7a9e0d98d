"""The controller: the only layer that talks to the API server while operating.

Layer: above ``aitj.core``, beside ``aitj.devcluster`` (neither imports the other); ``aitj.cli``
and ``aitj.tools`` sit above it. It decides nothing: it keeps the caches the planner reads,
runs one pass per job at a time, and carries each Plan out.

- ``operator``: the one ``Operator`` that wires cache, informers, reconciler, executor, metrics
  and leader election; ``options``: what it is started with (``OperatorOptions``);
  ``settings``: the planner's Settings it derives from them and the cluster (``aitj explain``
  derives the same).
- ``handlers``: kopf wiring: start-up, login, clean-up on SIGTERM, each handed to the Operator.
- ``informer``: list+watch of one kind per thread (paginated LIST, WATCH with bookmarks, relist
  on 410 Gone), slim views made in the thread.
- ``cache``: what a pass's snapshot is read from (the Cache interface over the informers'
  stores), write-through of the operator's own calls.
- ``reconciler``: one pass per job at a time; kicks coalesce; requeues; a bounded pass pool.
- ``executor``: sends what a Plan holds and returns what its calls did; the executor contract.
- ``written``: what the calls returned, handed from the executor to the cache (write-through).
- ``recovery_metrics``: the restarts a pass recorded, counted and followed until they recover.
- ``runner``: ``aitj run``: the Operator in kopf's memo, and kopf's operator loop.
- ``leader``: leader election on a Lease (``--leader-elect``): pure decisions, one thread.
- ``metrics``, ``logs``: Prometheus metrics and structlog; ``metrics_server``: /metrics over
  HTTPS, each scrape's token reviewed by the apiserver (or plain HTTP for local development).
- ``sshkeys``: fresh key pairs for the ssh plugin (randomness stays out of the core).
- ``kubeclient``: the API client, the apiserver's error text, the context namespace (the CLI
  uses them too).
"""
