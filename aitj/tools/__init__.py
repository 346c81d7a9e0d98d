"""Developer tools that drive the local control plane: ``aitj dev demo``, ``aitj dev bench``
and ``aitj chaos``.

Layer: above ``aitj.controller``, ``aitj.devcluster`` and ``aitj.core``; only ``aitj.cli``
imports it. Nothing here runs inside the operator.

- ``demo``: the CCE seed job end to end on the local cluster (``make demo``).
- ``bench``: figures, never assertions (``make bench``).
- ``chaos``: ``aitj chaos``, faults against jobs on any cluster, invariants from its own
  watch (``make chaos``).
"""
