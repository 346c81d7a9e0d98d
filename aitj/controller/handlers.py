"""kopf wiring: start-up, credentials and shutdown, each handed to the one ``Operator``.

kopf runs the process: signals, the start-up and clean-up handlers, the login. It watches
nothing: its per-object machinery (an index-readiness toggle and a worker task per object)
grows with the square of the objects listed and kept a restarted operator from ever running a
pass at 10,000 pods (docs/operator.md, "Start-up at scale"). The cache is one list+watch per
kind instead (``aitj.controller.cache``, ``aitj.controller.informer``); a pass starts only
once every kind is listed, then every job is planned once, and a resync task plans each job
again every ``operator.RESYNC_SECONDS`` in case a change was missed. The Operator
(``aitj.controller.operator``) does all of that; the runner puts it in kopf's memo under
``OPERATOR``, and each handler takes it from there (``operator_of``).

No kopf create/update/timer handlers either: they would put kopf's finalizer on every job (a
job could not be deleted while the operator is down) and add progress annotations to the
recovery path.
"""

from __future__ import annotations

from typing import Any

import kopf

from aitj.controller.operator import Operator

OPERATOR = "operator"  # the key of the Operator in kopf's memo


def operator_of(memo: kopf.Memo) -> Operator:
    """operator_of: the Operator the runner put in kopf's memo."""
    operator = memo[OPERATOR]
    if not isinstance(operator, Operator):
        raise TypeError(f"kopf's memo holds no Operator under {OPERATOR!r}")
    return operator


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """startup: the Operator's cache, informers and reconciler; passes begin once it is synced."""
    settings.posting.enabled = False  # we emit the Events we mean
    settings.peering.standalone = True
    await operator_of(memo).start()


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    """cleanup: the Operator stops (SIGTERM): watches, passes, then the Lease."""
    await operator_of(memo).stop()


@kopf.on.login()
def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
    """login gives kopf the credentials the Operator's API client already loaded."""
    return operator_of(memo).connection()
