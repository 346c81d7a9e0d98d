"""``aitj chaos``: faults against training jobs, checked by the command's own watch.

Pure parts (table-tested): ``schedule`` (the seeded fault schedule and which fault kinds a
cluster allows), ``history`` (what the watch saw, as samples), ``expect`` (the restarts the
faults call for, computed with ``aitj.core.policy``), ``invariants`` (checks over a history),
``report`` (the table and JSON; the timeline picture needs matplotlib).
Effects: ``watch`` (the command's own list+watch of pods, nodes and jobs; never the
operator's state), ``faults`` (adapters over ``aitj.devcluster.faults`` and the Kubernetes API),
``operators`` (operator processes the command starts, and their /metrics probes), ``bed``
(the local cluster and demo jobs ``make chaos`` uses), ``run`` (the loop).
"""
