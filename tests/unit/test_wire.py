"""The executor's prebuilt JSON (aitj.controller.executor.wire): what a Plan's bodies hold is
written as the JSON object it stands for, and anything else is refused rather than sent as
something the apiserver would misread. The calls themselves are tested against the real
apiserver (tests/e2e/test_executor.py)."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from aitj.controller.executor.wire import encode


def test_plain_json_is_written_as_it_is() -> None:
    body = {"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"n": [1, 2.5, True, None]}}
    assert json.loads(encode(body)) == body


def test_read_only_mappings_and_tuples_are_written_as_objects_and_arrays() -> None:
    body = MappingProxyType({"spec": MappingProxyType({"args": ("a", "b")})})
    assert json.loads(encode(body)) == {"spec": {"args": ["a", "b"]}}


def test_a_value_json_has_no_form_for_is_refused() -> None:
    with pytest.raises(TypeError, match="set"):
        encode({"finalizers": {"a"}})
