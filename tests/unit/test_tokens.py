from __future__ import annotations

import hashlib

import pytest

from benchrunner.core.tokens import (
    bearer,
    hash_token,
    is_api_token,
    is_runner_token,
    new_api_token,
    new_runner_token,
)


def test_runner_token_format_is_seed_000s() -> None:
    token = new_runner_token()
    assert token.startswith("bencher_runner_")
    assert len(token) == 79
    assert is_runner_token(token)
    assert new_runner_token() != token


@pytest.mark.parametrize(
    "token",
    [
        "bencher_runner_" + "a" * 63,
        "bencher_runner_" + "a" * 65,
        "bencher_runner_" + "g" * 64,
        "bencher_runner_" + "A" * 64,
        "bencher_api_" + "a" * 64,
        "",
    ],
)
def test_malformed_runner_tokens_are_refused(token: str) -> None:
    assert not is_runner_token(token)


def test_only_the_sha256_is_kept() -> None:
    token = new_api_token()
    assert is_api_token(token)
    assert hash_token(token) == hashlib.sha256(token.encode()).hexdigest()
    assert len(hash_token(token)) == 64


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer  abc ", "abc"),
        ("Basic abc", None),
        ("Bearer ", None),
        (None, None),
    ],
)
def test_bearer_header(header: str | None, token: str | None) -> None:
    assert bearer(header) == token
