"""``aitj.client``: AITrainingJobs from Python, for notebooks and pipelines.

Layer: above ``aitj.controller`` and ``aitj.devcluster`` and below ``aitj.tools`` and
``aitj.cli`` (import-linter's layers contract); it imports ``aitj.core`` and the
``kubernetes`` package, nothing of the operator. The ``aitj`` command line's job verbs
(``get``, ``list``, ``describe``, ``submit``, ``logs``, ``scaleout``, ``scalein``, ``wait``,
``delete``) call it.

- ``client``: ``Client``: submit, get, list, wait, scale, logs, delete.
- ``connect``: ``Connection``: kubeconfig, context, ``--as``, request timeout.
- ``job``: ``TrainingJob``, ``LogLine``, and the pure decisions of wait and scale.
- ``errors``: one exception type per thing a caller can act on; ``transport``: the
  ``kubernetes`` package's exceptions turned into them, and log streams merged.

    from aitj.client import Client, Submission, NotFound

    jobs = Client(namespace="team-a")
    jobs.submit(Submission(name="mnist", image="horovod/horovod:0.28.1", workers=3,
                           command="horovodrun -np 3 python train.py"))
    jobs.wait("mnist", phases={"Running"}, timeout=300)
    jobs.scale("mnist", 5)
    for line in jobs.logs("mnist", replica="launcher", tail=20):
        print(line.prefix + line.text)
    jobs.delete("mnist", wait=True)

docs/client.md has the rest.
"""

from __future__ import annotations

from aitj.client.client import Client
from aitj.client.connect import Connection
from aitj.client.errors import (
    AitjError,
    ApiError,
    Conflict,
    FieldError,
    Forbidden,
    Invalid,
    JobEnded,
    NotConfigured,
    NotFound,
    Timeout,
    Unreachable,
)
from aitj.client.job import LogLine, TrainingJob
from aitj.core.render.submit import Submission

__all__ = [
    "AitjError",
    "ApiError",
    "Client",
    "Conflict",
    "Connection",
    "FieldError",
    "Forbidden",
    "Invalid",
    "JobEnded",
    "LogLine",
    "NotConfigured",
    "NotFound",
    "Submission",
    "Timeout",
    "TrainingJob",
    "Unreachable",
]
