"""JSON forms of frozen dataclasses: read, written and described from their annotations.

Pure. The job's status (``aitj.core.api.status``) is a tree of frozen dataclasses, each a
``JsonObject``; this module reads one from the JSON the API server stores (``from_json``),
writes it back (``to_json``) and describes it as a CRD schema (``schema``), all three from the
same field declarations (``prop``), so a key is spelled once and a typo in it is a type error.

A field is kept under its JSON key (``prop(key=...)``, by default the field's name) and is
None when the key is absent. The types a field may have: str, int, bool, a ``StrEnum``, a
``JsonObject``, an ``Opaque`` (JSON kept as it is), and ``tuple[T, ...]`` (an array) or
``Mapping[str, T]`` (an object) of those.

Reading loses nothing: a key the class does not declare, and a declared key whose value is
not of the field's type (``"phase": 42``; a list with one item of the wrong type counts as a
whole), is kept as it is in ``extra`` and written back unchanged, so ``to_json(from_json(x))
== x`` for any JSON object ``x``. Statuses are written by anybody who can write the status
subresource (an older operator, a user), and the operator must not drop what it does not
understand. ``updated`` is how a writer sets or clears fields: a field it sets, even to None,
replaces whatever was kept under that key.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

Schema = dict[str, Any]  # an OpenAPI v3 schema node, as the CRD carries it
Decode = Callable[[object], object]  # a JSON value to the field's type, or INVALID
Encode = Callable[[Any], object]  # the field's type to a JSON value


class _Invalid:
    """The value a decoder returns for JSON that is not of its type."""


INVALID: Any = _Invalid()


def prop(
    key: str | None = None,
    description: str = "",
    *,
    required: bool = False,
    minimum: int | None = None,
    fmt: str | None = None,
    max_items: int | None = None,
    items: Schema | None = None,
    values: Schema | None = None,
) -> Any:
    """prop: a field kept under ``key`` (None: the field's name), described by ``description``.
    The rest is more of its CRD schema: ``minimum``, ``fmt`` (format), ``max_items``, and what
    to add to the schema of an array's ``items`` and of an object's ``values``. ``required``:
    the CRD requires the key (reading does not: an absent key is None)."""
    schema: Schema = {}
    for name, value in (("format", fmt), ("minimum", minimum), ("maxItems", max_items)):
        if value is not None:
            schema[name] = value
    if items is not None:
        schema["items"] = items
    if values is not None:
        schema["values"] = values
    meta = {"key": key, "description": description, "required": required, "schema": schema}
    return field(default=None, metadata=meta)


def time_prop(key: str | None = None, description: str = "") -> Any:
    """time_prop: a timestamp, kept as the text the API server stores (RFC 3339): read with
    ``aitj.core.wire.parse_time``. Kept as text, not parsed, so that writing a status back
    gives the same text even when it is not in the operator's own format."""
    return prop(key, description, fmt="date-time")


class Opaque:
    """Opaque: a part of the status kept as JSON, its meaning owned by another layer (the
    restart ledger's by the planner). A subclass says what it reads (``read``: None for JSON
    it does not take), writes (``write``) and how the CRD describes it (``json_schema``)."""

    @classmethod
    def read(cls, value: object) -> Self | None:
        raise NotImplementedError

    def write(self) -> object:
        raise NotImplementedError

    @classmethod
    def json_schema(cls) -> Schema:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class JsonObject:
    """JsonObject: a frozen dataclass with a JSON form. ``extra``: the keys read that are not
    fields, or whose values were not of the field's type, as they were (see the module's
    docstring). ``SCHEMA_DESCRIPTION``: the description of the class's schema where it is a
    map's value (a field's own description wins elsewhere)."""

    SCHEMA_DESCRIPTION: ClassVar[str] = ""

    extra: Mapping[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, value: object) -> Self:
        """from_json: the object of a JSON object (anything else: an empty one)."""
        got = _read_object(cls, value if isinstance(value, Mapping) else {})
        return typing.cast(Self, got)

    @classmethod
    def from_json_again(cls, value: object, before_value: object, before: Self) -> Self:
        """from_json_again: ``from_json(value)``, reusing what ``before`` (``from_json`` of
        ``before_value``) decoded under each key whose JSON is the same in both. A job's status
        is read on every pass, and between two passes most of it (the restart records, the
        conditions) has not changed: comparing JSON is far cheaper than decoding it."""
        if not isinstance(value, Mapping) or not isinstance(before_value, Mapping) or type(before) is not cls:
            return cls.from_json(value)
        return typing.cast(Self, _read_object(cls, value, (before_value, before)))

    def to_json(self) -> dict[str, object]:
        """to_json: the JSON object, ``extra`` included (a field set wins over it)."""
        out: dict[str, object] = dict(self.extra)
        for f in _fields(type(self)):
            value = getattr(self, f.name)
            if value is not None:
                out[f.key] = f.encode(value)
        return out

    def updated(self, **changes: Any) -> Self:
        """updated: a copy with ``changes`` (field names) made; what ``extra`` kept under their
        keys goes, so a field set to None is absent from the JSON form, as a dict's pop.

        The copy is made field by field, not by ``dataclasses.replace``: a pass edits the status
        a dozen times, and ``replace`` (a call of ``__init__`` with every field) was a sixth of
        the planner's time for a job of 8. The classes have no ``__post_init__`` to skip."""
        keys = _keys(type(self))
        if not changes.keys() <= keys.keys():
            unknown = set(changes) - keys.keys()
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        copy = object.__new__(type(self))
        state = copy.__dict__
        state.update(self.__dict__)
        state.update(changes)
        if self.extra:
            gone = {keys[name] for name in changes}
            state["extra"] = {k: v for k, v in self.extra.items() if k not in gone}
        else:
            state["extra"] = {}
        return copy


@dataclass(frozen=True)
class _Field:
    name: str
    key: str
    decode: Decode
    encode: Encode
    kind: Any  # the type, None stripped
    meta: Mapping[str, Any]


# Per class, its fields' codecs, worked out from the annotations once (two threads racing to
# fill it compute the same tuple).
_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _fields(cls: type[JsonObject]) -> tuple[_Field, ...]:
    known = _FIELDS.get(cls)
    if known is None:
        known = _FIELDS[cls] = _compile(cls)
    return known


# Per class, its fields' JSON keys by field name (``updated`` looks up the fields it is given).
_KEYS: dict[type, dict[str, str]] = {}


def _keys(cls: type[JsonObject]) -> dict[str, str]:
    known = _KEYS.get(cls)
    if known is None:
        known = _KEYS[cls] = {f.name: f.key for f in _fields(cls)}
    return known


def _compile(cls: type[JsonObject]) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        kind = _strip_none(hints[f.name])
        decode, encode = _codec(kind)
        out.append(_Field(f.name, f.metadata.get("key") or f.name, decode, encode, kind, f.metadata))
    return tuple(out)


def _read_object(
    cls: type[JsonObject],
    value: Mapping[str, object],
    before: tuple[Mapping[str, object], JsonObject] | None = None,
) -> JsonObject:
    """_read_object: the object of ``value``; with ``before`` (a JSON object and its object),
    a key whose JSON is the same there keeps what was decoded of it."""
    fields = _fields(cls)
    known = {f.key for f in fields}
    extra = {k: v for k, v in value.items() if k not in known}
    kwargs: dict[str, object] = {}
    for f in fields:
        if f.key not in value:
            continue
        if before is not None and f.key in before[0] and f.key not in before[1].extra:
            old, raw = before[0][f.key], value[f.key]
            if old == raw:
                kwargs[f.name] = getattr(before[1], f.name)
                continue
            if isinstance(old, list) and isinstance(raw, list) and _of_objects(f.kind):
                got = _items_again(typing.get_args(f.kind)[0], raw, old, getattr(before[1], f.name))
                if got is not INVALID:
                    kwargs[f.name] = got
                    continue
        got = f.decode(value[f.key])
        if got is INVALID:
            extra[f.key] = value[f.key]
        else:
            kwargs[f.name] = got
    return cls(extra=extra, **kwargs)


def _of_objects(kind: Any) -> bool:
    """_of_objects: ``kind`` is a tuple of JsonObjects (an array of objects)."""
    if typing.get_origin(kind) is not tuple:
        return False
    item = typing.get_args(kind)[0]
    return isinstance(item, type) and issubclass(item, JsonObject)


def _items_again(
    cls: type[JsonObject], value: list[object], before_value: list[object], before: Any
) -> object:
    """_items_again: the objects of the array ``value``, where ``before`` holds the objects of
    ``before_value``: an item equal to the one of ``before_value`` at its place, allowing for
    the items that left the front (a bounded history: the oldest go, new ones are appended),
    is the object decoded then."""
    start = next((k for k, old in enumerate(before_value) if value and old == value[0]), len(before_value))
    out: list[object] = []
    for i, item in enumerate(value):
        j = start + i
        if j < len(before_value) and before_value[j] == item:
            out.append(before[j])
        elif isinstance(item, Mapping):
            out.append(_read_object(cls, item))
        else:
            return INVALID
    return tuple(out)


def _strip_none(kind: Any) -> Any:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return kind


def _same(value: Any) -> object:
    return value


def _codec(kind: Any) -> tuple[Decode, Encode]:
    """_codec: the decoder and encoder of a field's type (see the module's docstring)."""
    origin = typing.get_origin(kind)
    if kind is str:
        return (lambda v: v if isinstance(v, str) else INVALID), _same
    if kind is bool:
        return (lambda v: v if isinstance(v, bool) else INVALID), _same
    if kind is int:  # JSON's true is not an integer, though Python's bool is an int
        return (lambda v: v if isinstance(v, int) and not isinstance(v, bool) else INVALID), _same
    if isinstance(kind, type) and issubclass(kind, enum.StrEnum):
        return _enum_codec(kind)
    if isinstance(kind, type) and issubclass(kind, JsonObject):
        cls = kind
        return (lambda v: _read_object(cls, v) if isinstance(v, Mapping) else INVALID), (
            lambda v: v.to_json()
        )
    if isinstance(kind, type) and issubclass(kind, Opaque):
        opaque = kind
        return (lambda v: INVALID if (got := opaque.read(v)) is None else got), (lambda v: v.write())
    if origin is tuple:
        return _array_codec(typing.get_args(kind)[0])
    if origin is Mapping:
        return _map_codec(typing.get_args(kind)[1])
    raise TypeError(f"no JSON form for {kind!r}")


def _enum_codec(kind: type[enum.StrEnum]) -> tuple[Decode, Encode]:
    values = {m.value: m for m in kind}
    return (lambda v: values.get(v, INVALID) if isinstance(v, str) else INVALID), (lambda v: v.value)


def _array_codec(item: Any) -> tuple[Decode, Encode]:
    decode, encode = _codec(item)
    if encode is _same:  # strings and integers: checked, not converted (a host list may be long)

        def decode_plain(v: object) -> object:
            if not isinstance(v, list) or any(decode(x) is INVALID for x in v):
                return INVALID
            return tuple(v)

        return decode_plain, list

    def decode_items(v: object) -> object:
        if not isinstance(v, list):
            return INVALID
        out = tuple(decode(x) for x in v)
        return INVALID if any(x is INVALID for x in out) else out

    return decode_items, lambda v: [encode(x) for x in v]


def _map_codec(value: Any) -> tuple[Decode, Encode]:
    decode, encode = _codec(value)

    def decode_map(v: object) -> object:
        if not isinstance(v, Mapping):
            return INVALID
        out = {str(k): decode(x) for k, x in v.items()}
        return INVALID if any(x is INVALID for x in out.values()) else out

    return decode_map, lambda v: {k: encode(x) for k, x in v.items()}


# ---------------------------------------------------------------------------------------------
# The CRD schema


def schema(cls: type[JsonObject], description: str = "") -> Schema:
    """schema: the CRD schema of ``cls``: its fields as properties, in declaration order, each
    with its description, type, and what its ``prop`` adds."""
    out: Schema = {"description": description} if description else {}
    out["type"] = "object"
    required = [f.key for f in _fields(cls) if f.meta.get("required")]
    if required:
        out["required"] = required
    out["properties"] = {f.key: _field_schema(f) for f in _fields(cls)}
    return out


def _field_schema(f: _Field) -> Schema:
    extra = dict(f.meta.get("schema") or {})
    return _type_schema(f.kind, f.meta.get("description", ""), extra)


def type_schema(kind: Any, description: str = "", extra: Schema | None = None) -> Schema:
    """type_schema: the schema of a value of type ``kind`` (a field's type, None stripped);
    ``extra`` adds to it (``items`` and ``values`` to its items' and values' schemas)."""
    return _type_schema(kind, description, dict(extra or {}))


def _type_schema(kind: Any, description: str, extra: Schema) -> Schema:
    items, values = extra.pop("items", {}), extra.pop("values", {})
    head: Schema = {"description": description} if description else {}
    origin = typing.get_origin(kind)
    if isinstance(kind, type) and issubclass(kind, JsonObject):
        return {**schema(kind, description or kind.SCHEMA_DESCRIPTION), **extra}
    if isinstance(kind, type) and issubclass(kind, Opaque):
        return {**head, **kind.json_schema(), **extra}
    if origin is tuple:
        item_schema = _type_schema(typing.get_args(kind)[0], "", dict(items))
        return {**head, "type": "array", **extra, "x-kubernetes-list-type": "atomic", "items": item_schema}
    if origin is Mapping:
        value_schema = _type_schema(typing.get_args(kind)[1], "", dict(values))
        return {**head, "type": "object", **extra, "additionalProperties": value_schema}
    if isinstance(kind, type) and issubclass(kind, enum.StrEnum):
        return {**head, "type": "string", **extra, "enum": [m.value for m in kind]}
    if kind is str:
        return {**head, "type": "string", **extra}
    if kind is bool:
        return {**head, "type": "boolean", **extra}
    if kind is int:
        return {**head, "type": "integer", "format": extra.pop("format", "int32"), **extra}
    raise TypeError(f"no schema for {kind!r}")
