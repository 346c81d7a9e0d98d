"""KubeExecutor: the executor over the official client. ``execute`` walks a Plan through one
``Calls`` per pass (``aitj.controller.executor.calls``: one ``send_<step>`` per step of ``STEPS``)
and turns what stopped it into ``Sent.stopped``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as TransportError

from aitj.controller.executor.calls import Calls
from aitj.controller.executor.clients import Clients
from aitj.controller.executor.contract import Sent, StepFailed, Stop, Target, walk
from aitj.controller.written import Written
from aitj.core.planner.failed_pass import Report
from aitj.core.planner.types import Plan
from aitj.core.render import gang


class KubeExecutor:
    """KubeExecutor carries out plans with the official client. It holds no state about jobs:
    passes of different jobs run in threads at once, each with its own ``Calls``."""

    def __init__(
        self,
        api_client: client.ApiClient,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        gang_version: str = gang.NEWEST,
    ) -> None:
        self.clients = Clients.of(api_client, clock, gang_version)

    def execute(self, target: Target, plan: Plan) -> Sent:
        """execute sends ``plan`` for ``target``, step by step (``STEPS``), and returns what the
        calls did. A step that stops the pass says why in ``Sent.stopped``. A call that got no
        answer (the connection refused, dropped or timed out: the apiserver restarting) fails
        the step like a refused one: the reconciler retries the job."""
        sent = Sent()
        try:
            walk(plan, Calls(self.clients, target, sent))
        except Stop as e:
            sent.stopped = e
        except ApiException as e:  # a call outside the steps' own handling: refused all the same
            sent.stopped = StepFailed(f"{e.status} {e.reason}")
            sent.stopped.__cause__ = e
        except (TransportError, OSError) as e:
            sent.stopped = StepFailed(f"no answer from the API server: {e}")
            sent.stopped.__cause__ = e
        return sent

    def report(self, target: Target, report: Report) -> Written:
        """report sends what ``aitj.core.planner.failed_pass`` says about the job's passes
        (``Calls.send_report``: best effort) and returns what the status write returned."""
        sent = Sent()
        Calls(self.clients, target, sent).send_report(report)
        return sent.written
