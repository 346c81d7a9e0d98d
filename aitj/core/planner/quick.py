"""quick_init: a frozen dataclass's ``__init__``, made cheaper (issue 26: the planner's CPU
per pass of a small job).

Pure. A frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__`` (its
``__setattr__`` refuses), one call per field; a pass of a job of 8 builds a few dozen Plans,
Parts and Contexts of up to 21 fields each, and those calls were a fifth of its time. The
``__init__`` made here takes the same arguments (names, order, defaults) and stores them all
with one update of the instance's dict, then calls ``__post_init__`` if the class has one:
the object made is the same (equal, hashed alike, as frozen: only ``__init__`` changes), as
tests/unit/test_pass_reuse.py checks. JsonObject.updated (aitj.core.api.jsonform) copies
frozen objects the same way.

``once`` is ``functools.cached_property`` without its lock: Python 3.11's takes one lock per
attribute (shared by every instance of the class) each time it computes, a tenth of a
microsecond spent on the dozen values a pass computes once on objects it has just made. The
values it computes are pure functions of frozen objects: two threads racing compute the same.

Only for a class whose fields all go to ``__init__``, positional or keyword, with a plain
default or none (a ``default_factory`` would need the dataclass's own handling): anything else
is refused when the class is defined.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")
V = TypeVar("V")


def quick_init(cls: type[T]) -> type[T]:
    """quick_init: ``cls`` (a dataclass) with the cheaper ``__init__`` (see the module docstring)."""
    namespace: dict[str, Any] = {}
    params, items = [], []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.kw_only or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"quick_init: {cls.__name__}.{f.name} is not a plain field")
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        items.append(f"{f.name!r}: {f.name}")
    post = "\n    self.__post_init__()" if hasattr(cls, "__post_init__") else ""
    source = (
        f"def __init__(self, {', '.join(params)}):\n    self.__dict__.update({{{', '.join(items)}}}){post}\n"
    )
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


class once(Generic[V]):
    """once: ``functools.cached_property``, lock-free (see the module docstring): the value is
    computed at the first read and kept in the instance's dict under the attribute's name,
    where later reads find it without calling this."""

    def __init__(self, compute: Callable[[Any], V]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> once[V]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> V: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> V | once[V]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value
