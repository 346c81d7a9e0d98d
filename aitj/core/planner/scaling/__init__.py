"""Scaling: ``replicas`` edits of a job that has run, as scale operations (issue 6).

Pure and clock-free (the caller passes ``now``). ``aitj.core.planner.plan`` asks ``prepare`` which
indices each replica has slots for in this pass, surveys them (``aitj.core.planner.survey``), asks
``settle`` what became of the operations in flight (a scale-out's pods all run, or one failed
for good, or time is up), and writes the result with ``write_status``, ``events`` and the
spec patch of a rollback. docs/scaling.md is the user-facing description.

- ``operation``: an operation (``Op``) and its wire form in status, the index sets, and what
  a pass makes of the operations (``Scaling``).
- ``steps``: the state machine, ``prepare`` and ``settle``.
- ``messages``: what a pass writes and says: status, Events, the Scaling condition, wake-ups.

Everything an operation needs to go on lives in the job's status, so any pass (after an
operator crash too) picks it up where the last written status left it:

- ``currentReplicas.<r>`` and ``vacantIndices.<r>``: the indices the job runs with, i.e. the
  ``currentReplicas`` smallest indices that are not vacant. Named pods scaled in
  (``scaleInpods``) leave their index vacant; a scale-out fills vacant indices first.
- ``scaling.<r>``: the operation in flight for replica ``r``, if any.
- ``scaleHistory``: finished operations (and rollbacks), oldest first, bounded.

An operation begins when ``replicas`` differs from the current count of a job that has run
(before that, an edit just changes what is created):

- **scaleout**: the next free indices get slots. Their pods are kept out of the discovery host
  list until every one of them is Running; then, in one pass, they join the list and the
  current indices. Not all Running within ``scaleTimeout`` seconds, or one failed for good:
  the operation is rolled back. Its pods are removed and ``replicas`` is patched back to the
  current count (a JSON patch that first tests the value, so a newer edit wins); the operation
  stays in status, as ``rollback``, until the spec says the current count again.
- **scalein**: the pods named in ``scaleInpods`` leave first, then the highest indices. Those
  in the host list leave it at once and are kept ``scaleInGracePeriod`` seconds for their
  workers to stop; then they are deleted. Pods that were not in the list go at once.
- An edit while an operation is in flight replaces it; the new one starts from the current
  indices. A scale-out's pods that are still wanted are kept; pods that were leaving are the
  first to leave again, or rejoin the list when the edit undoes the scale-in.

The "job version" of the seed's Scaling message is the operation's number: 1 for the job's
first, as in the seed (``job version 1`` after one edit, where metadata.generation is 2).
"""

from __future__ import annotations

from aitj.core.planner.scaling.machine import prepare, settle
from aitj.core.planner.scaling.messages import (
    conditions,
    events,
    message,
    outcome_message,
    wake,
    write_status,
)
from aitj.core.planner.scaling.operation import (
    SUCCEEDED,
    Happening,
    Kind,
    Op,
    ReplicaScale,
    Scaling,
    current_indices,
    vacant_indices,
)

__all__ = [
    "SUCCEEDED",
    "Happening",
    "Kind",
    "Op",
    "ReplicaScale",
    "Scaling",
    "conditions",
    "current_indices",
    "events",
    "message",
    "outcome_message",
    "prepare",
    "settle",
    "vacant_indices",
    "wake",
    "write_status",
]
