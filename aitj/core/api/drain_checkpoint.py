"""A replica's ``checkpointOnDrain``: the command the operator runs in a pod before a drain
may evict it (docs/semantics.md, section 26).

Pure. Part of ``parse_replica``; the CRD's schema says the same bounds in the same words
(hack/gen_crd.py), so a manifest is refused alike at admission and by ``aitj validate``.
"""

from __future__ import annotations

from collections.abc import Mapping

from aitj.core.api.model import (
    CHECKPOINT_COMMAND_MESSAGE,
    DEFAULT_CHECKPOINT_SECONDS,
    MAX_CHECKPOINT_SECONDS,
    MAX_COMMAND_ITEM_LENGTH,
    MAX_COMMAND_ITEMS,
    DrainCheckpoint,
)
from aitj.core.api.reader import FieldError, Fields, json_kind

_FIELDS = ("command", "timeoutSeconds")


def parse_checkpoint_on_drain(replica: Fields) -> DrainCheckpoint | None:
    """parse_checkpoint_on_drain reads ``checkpointOnDrain``; None when unset or wrong (the
    errors are recorded)."""
    value = replica.get("checkpointOnDrain")
    if value is None:
        return None
    f = Fields(value, replica.at("checkpointOnDrain"), replica.errors, _FIELDS)
    if not isinstance(value, Mapping):
        return None
    before = len(f.errors)
    timeout = f.integer("timeoutSeconds", DEFAULT_CHECKPOINT_SECONDS, 1, MAX_CHECKPOINT_SECONDS)
    command = _command(f)
    if command is None or len(f.errors) != before:
        return None
    return DrainCheckpoint(command, timeout)


def _command(f: Fields) -> tuple[str, ...] | None:
    """_command: a non-empty array of strings (the exec's argv: no shell unless it names one)."""
    value = f.get("command")
    if value is None:
        f.error("command", "Required value")
        return None
    if not isinstance(value, list):
        f.error("command", f"must be of type array, not {json_kind(value)}")
        return None
    if not value:
        f.error("command", "should have at least 1 items")
        return None
    if len(value) > MAX_COMMAND_ITEMS:
        f.error("command", f"Too many: {len(value)}: must have at most {MAX_COMMAND_ITEMS} items")
    for i, item in enumerate(value):
        where = f"{f.at('command')}[{i}]"
        if not isinstance(item, str):
            f.errors.append(FieldError(where, f"must be of type string, not {json_kind(item)}"))
        elif len(item) > MAX_COMMAND_ITEM_LENGTH:
            f.errors.append(
                FieldError(where, f"Too long: may not be more than {MAX_COMMAND_ITEM_LENGTH} bytes")
            )
    if value[0] == "":
        f.error("command", CHECKPOINT_COMMAND_MESSAGE)
    return tuple(str(item) for item in value)
