"""Reading one object of a manifest, the way the apiserver does, recording a FieldError per bad value.

Pure. The building block of ``parse_job`` (aitj.core.api.validation) and of the pod template
checks (aitj.core.api.template); messages use the apiserver's wording where it has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aitj.core.api.model import StrEnumMixin


@dataclass(frozen=True)
class FieldError:
    """FieldError is one refusal: the field's path (``spec.replicaSpecs.trainer.replicas``) and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


E = TypeVar("E", bound=StrEnumMixin)


class Fields:
    """Fields reads the keys of one object of the manifest, recording a FieldError per bad value.

    A null value counts as absent, as on the apiserver, which prunes nulls of non-nullable
    fields before defaulting. Unknown keys are refused, as ``kubectl --validate=strict`` does.
    """

    def __init__(self, value: object, path: str, errors: list[FieldError], known: Sequence[str]) -> None:
        self.path = path
        self.errors = errors
        self.data: Mapping[str, Any] = {}
        if not isinstance(value, Mapping):
            errors.append(FieldError(path, f"must be of type object, not {json_kind(value)}"))
            return
        self.data = value
        for key in value:
            if key not in known:
                errors.append(FieldError(self.at(str(key)), f'unknown field "{self.at(str(key))}"'))

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def error(self, key: str, message: str) -> None:
        self.errors.append(FieldError(self.at(key), message))

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        value = self.optional_integer(key, minimum, maximum)
        return default if value is None else value

    def optional_integer(self, key: str, minimum: int, maximum: int) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        value = integral(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(key, f"must be of type integer, not {json_kind(value)} {quote(value)}")
            return None
        if value < minimum:
            self.error(key, f"Invalid value: {value}: should be greater than or equal to {minimum}")
        elif value > maximum:
            self.error(key, f"Invalid value: {value}: should be less than or equal to {maximum}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(key, f"must be of type boolean, not {json_kind(value)} {quote(value)}")
            return default
        return value

    def string(self, key: str, max_length: int) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.error(key, f"must be of type string, not {json_kind(value)} {quote(value)}")
            return None
        if len(value) > max_length:
            self.error(key, f"Too long: may not be more than {max_length} bytes")
        return value

    def choice(self, key: str, allowed: Sequence[E], default: E) -> E:
        value = self.optional_choice(key, allowed)
        return default if value is None else value

    def optional_choice(self, key: str, allowed: Sequence[E]) -> E | None:
        """optional_choice returns the member named by the value; None when absent or refused."""
        value = self.data.get(key)
        if value is None:
            return None
        for member in allowed:
            if value == member.value:
                return member
        supported = ", ".join(quote(m.value) for m in allowed)
        self.error(key, f"Unsupported value: {quote(value)}: supported values: {supported}")
        return None


def integral(value: object) -> object:
    """integral reads 3.0 as 3, as the apiserver's JSON decoder does."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def json_kind(value: object) -> str:
    """json_kind names a value's JSON type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def quote(value: object) -> str:
    """quote quotes a value the way the apiserver's messages do (strings in double quotes)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)
