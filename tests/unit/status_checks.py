"""What the API server does with a status the planner writes: it stores the JSON and hands it back.

``stored`` is that round trip for the unit tests' fake cluster (tests/unit/builders.py), with
two checks on every status a scenario writes: the JSON reads back into the same ``JobStatus``
(nothing lost, nothing changed), and every key of it is one the types declare (nothing left in
``extra``: the CRD, generated from the same types, keeps it; the apiserver would prune the rest).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from aitj.core.api import JobStatus, RestartLedger
from aitj.core.api.jsonform import JsonObject
from aitj.core.api.ledger_form import LedgerReplicaForm


def unread(obj: object, path: str = "status") -> Iterator[str]:
    """unread: the paths of ``obj`` (a JsonObject and what it holds) kept in ``extra``, the
    restart ledger's JSON read as its form included."""
    if isinstance(obj, JsonObject):
        yield from (f"{path}.{key}" for key in obj.extra)
        for name in type(obj).__dataclass_fields__:
            if name != "extra":
                yield from unread(getattr(obj, name), f"{path}.{name}")
    elif isinstance(obj, RestartLedger):
        for replica, entry in obj.value.items():
            yield from unread(LedgerReplicaForm.from_json(entry), f"{path}.{replica}")
    elif isinstance(obj, tuple):
        for i, item in enumerate(obj):
            yield from unread(item, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from unread(value, f"{path}.{key}")


def stored(status: JobStatus) -> JobStatus:
    """stored: ``status`` written as JSON and read back, checked (see the module's docstring)."""
    body = json.loads(json.dumps(status.to_json()))
    back = JobStatus.from_json(body)
    assert back == status, "the status does not read back as written"
    assert json.dumps(back.to_json(), sort_keys=True) == json.dumps(body, sort_keys=True)
    assert list(unread(back)) == [], f"keys the status types do not declare: {list(unread(back))}"
    return back
