"""What the operator's own calls returned, on its way from the executor to the cache.

The executor fills a ``Written`` as it sends a Plan; the reconciler hands it to the cache
(``InformerCache.written``: write-through), so the next pass plans from the operator's own
writes instead of a copy the watch has not caught up with. Here, apart from both, so that the
cache does not import the executor to read what it is handed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aitj.core.planner.types import ObjectKind, ObjectRef


@dataclass
class Written:
    """Written: what one pass's calls returned, for the cache: ``jobs`` (after a status or spec
    write) and ``pods`` (created, deleted, released) as the server answered, the names of pods
    and objects found gone (404), and the owned objects created."""

    jobs: list[Mapping[str, Any]] = field(default_factory=list)
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    gone_pods: list[str] = field(default_factory=list)
    owned: list[tuple[ObjectKind, Mapping[str, Any]]] = field(default_factory=list)
    gone_owned: list[ObjectRef] = field(default_factory=list)
