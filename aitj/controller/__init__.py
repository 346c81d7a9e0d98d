"""The controller: the only layer that talks to the API server while operating.

Layer: above ``aitj.core``, beside ``aitj.devcluster`` (neither imports the other); ``aitj.cli``
and ``aitj.tools`` sit above it. It decides nothing: it keeps the caches the planner reads,
runs one pass per job at a time, and carries each Plan out.

- ``handlers``: kopf wiring: start-up (informers, reconciler), login, clean-up on SIGTERM.
- ``informer``: list+watch of one kind per thread (paginated LIST, WATCH with bookmarks, relist
  on 410 Gone), slim views made in the thread.
- ``cache``: what a pass's snapshot is read from (the Cache interface over the informers'
  stores), write-through of the operator's own calls.
- ``reconciler``: one pass per job at a time; kicks coalesce; requeues; a bounded pass pool.
- ``executor``: sends what a Plan holds and handles errors; the executor contract.
- ``runner``: ``aitj run``: the API client and kopf's operator loop.
- ``leader``: leader election on a Lease (``--leader-elect``): pure decisions, one thread.
- ``metrics``, ``logs``: Prometheus metrics and structlog.
- ``sshkeys``: fresh key pairs for the ssh plugin (randomness stays out of the core).
- ``kubeclient``: the API client, the apiserver's error text, the context namespace (the CLI
  uses them too).
"""
