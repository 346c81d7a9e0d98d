"""The Authorization header's token, as the operator hands it to kopf."""

from __future__ import annotations

import pytest

from aitj.controller.kubeclient import bearer_token


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param("bearer abc.def", "abc.def", id="in-cluster config: lower-case scheme"),
        pytest.param("Bearer abc.def", "abc.def", id="kubeconfig: capitalised scheme"),
        pytest.param("BEARER  abc.def ", "abc.def", id="any case, extra spaces"),
        pytest.param("abc.def", "abc.def", id="a bare token"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="no header: client certificates"),
    ],
)
def test_the_token_is_taken_from_the_header_whatever_the_case_of_its_scheme(
    header: str | None, token: str | None
) -> None:
    assert bearer_token(header) == token
