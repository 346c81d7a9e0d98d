"""The typed, frozen job: its spec (aitj.core.api.model) and its status (aitj.core.api.status).

Pure. ``parse_job`` (aitj.core.api.validation) builds it from a manifest. A module of its own
because the status's types build on the model's enums, and the job holds both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aitj.core import naming
from aitj.core.api.model import JobSpec
from aitj.core.api.status import JobStatus


@dataclass(frozen=True)
class Job:
    namespace: str
    name: str
    uid: str
    generation: int
    spec: JobSpec
    status: JobStatus = field(hash=False, compare=False)
    # The version of the object this was parsed from: the executor writes status only onto
    # that version, so a pass planned from a stale copy cannot overwrite a newer status.
    resource_version: str = field(default="", compare=False)
    # metadata.annotations (string values only): operator knobs that are not spec fields, such
    # as the disruption budget (aitj.core.render.pdb), so the seed's spec stays as CCE has it.
    annotations: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def name_key(self) -> str | None:
        """name_key: the key the job's pod names and object proofs are derived from
        (``status.ownership.key``; None: the job has none yet, or an operator before keys
        made it)."""
        ownership = self.status.ownership
        return ownership.key if ownership is not None else None

    def pod_name(self, replica: str, index: int, generation: int) -> str:
        """pod_name: the name of the job's pod of ``replica``, ``index`` and ``generation``
        (naming.pod_name, under the job's key)."""
        return naming.pod_name(self.name, self.uid, replica, index, generation, self.name_key)
