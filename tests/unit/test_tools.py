"""The developer tools (``aitj dev demo``, ``aitj dev bench``) find the repository's files they apply."""

from __future__ import annotations

import pytest

from aitj.tools import demo


def test_the_demo_applies_the_crd_and_the_example_of_this_checkout() -> None:
    assert (demo.CRDS / "aitrainingjobs.yaml").is_file()
    assert demo.EXAMPLE.is_file()


def test_the_demo_prints_condition_messages_with_their_replica_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    demo.print_plain("message: replicas [launcher] succeeded (job completePolicy Any)")
    assert "replicas [launcher] succeeded" in capsys.readouterr().out
