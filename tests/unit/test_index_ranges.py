"""The scale machine's index sets told in C (issue 26): ``vacant_indices`` of a job's indices
0 .. n-1 answers without a set of them; on random index sets, and on those ranges as lists and
tuples, it equals the indices below the highest that are not current."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aitj.core.planner.scaling.operation import vacant_indices


def reference(current: list[int]) -> list[int]:
    """reference: the indices below the highest current one that are not current."""
    top, have = max(current, default=0), set(current)
    return [i for i in range(top) if i not in have]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-2, 40), max_size=30), st.booleans())
def test_vacant_indices_equal_the_reference(current: list[int], as_tuple: bool) -> None:
    assert vacant_indices(tuple(current) if as_tuple else current) == reference(current)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 5000), st.booleans())
def test_vacant_indices_of_a_range_are_none(n: int, as_tuple: bool) -> None:
    current = list(range(n))
    assert vacant_indices(tuple(current) if as_tuple else current) == [] == reference(current)
