"""The developer tools (``aitj demo``, ``aitj bench``) find the repository's files they apply."""

from __future__ import annotations

from aitj.tools import demo


def test_the_demo_applies_the_crd_and_the_example_of_this_checkout() -> None:
    assert (demo.CRDS / "aitrainingjobs.yaml").is_file()
    assert demo.EXAMPLE.is_file()
