"""docs/api.md's field reference and the CRD (crds/aitrainingjobs.yaml) name the same fields,
with the same allowed values, so neither can drift from the other."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.seeds import REPO

API_MD = (REPO / "docs" / "api.md").read_text()
CRD = yaml.safe_load((REPO / "crds" / "aitrainingjobs.yaml").read_text())
SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
SPEC = SCHEMA["properties"]["spec"]
REPLICA = SPEC["properties"]["replicaSpecs"]["additionalProperties"]
RULE = REPLICA["properties"]["faultTolerantPolicy"]["items"]
STATUS = SCHEMA["properties"]["status"]


def table(heading: str) -> dict[str, list[str]]:
    """table: the reference table under ``heading``: each row's first-cell field names (the
    part before a dot, ``<``, ``&`` or ``[``) mapped to the backticked words of its second
    cell (the type column)."""
    section = API_MD.split(f"\n{heading}\n", 1)[1]
    rows: dict[str, list[str]] = {}
    for line in section.split("\n#", 1)[0].splitlines():
        if not line.startswith("| `"):
            continue
        cells = line.split("|")
        for name in re.findall(r"`([^`]+)`", cells[1]):
            rows[re.split(r"[.<&[]", name, maxsplit=1)[0]] = re.findall(r"`([^`]+)`", cells[2])
    return rows


def nested(heading: str, parent: str) -> set[str]:
    """nested: the ``parent.child`` names of a table (``plugin.ssh``)."""
    section = API_MD.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    return set(re.findall(rf"^\| `{parent}\.([A-Za-z]+)`", section, re.M))


@pytest.mark.parametrize(
    ("heading", "schema"),
    [
        pytest.param("## spec", SPEC, id="spec"),
        pytest.param("## spec.replicaSpecs.&lt;name&gt;", REPLICA, id="a replica spec"),
        pytest.param("### faultTolerantPolicy rules", RULE, id="a faultTolerantPolicy rule"),
        pytest.param("## status", STATUS, id="status"),
    ],
)
def test_the_reference_documents_every_field_of_the_crd_and_no_other(heading: str, schema: Any) -> None:
    assert set(table(heading)) == set(schema["properties"])


def test_the_plugin_fields_are_documented() -> None:
    assert nested("## spec", "plugin") == set(SPEC["properties"]["plugin"]["properties"])


@pytest.mark.parametrize(
    ("heading", "schema"),
    [
        pytest.param("## spec", SPEC, id="spec"),
        pytest.param("## spec.replicaSpecs.&lt;name&gt;", REPLICA, id="a replica spec"),
        pytest.param("### faultTolerantPolicy rules", RULE, id="a faultTolerantPolicy rule"),
    ],
)
def test_the_reference_lists_the_values_each_enum_of_the_crd_allows(heading: str, schema: Any) -> None:
    documented = table(heading)
    for name, field in schema["properties"].items():
        if "enum" in field:
            assert documented[name] == field["enum"], name


def test_the_documented_phases_are_the_crds() -> None:
    section = API_MD.split("\n## status\n", 1)[1]
    line = next(row for row in section.splitlines() if row.startswith("| `phase`"))
    assert re.findall(r"`([A-Z][a-z]+)`", line) == STATUS["properties"]["phase"]["enum"]
