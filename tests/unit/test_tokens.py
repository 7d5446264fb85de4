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


def test_bencher_key_format_is_bencher_runner_and_30_alphanumerics() -> None:
    keys = {new_runner_token("bencher") for _ in range(50)}
    assert len(keys) == 50
    for key in keys:
        assert key.startswith("bencher_runner_")
        assert len(key) == len("bencher_runner_") + 30
        assert key[len("bencher_runner_") :].isalnum() and key.isascii()
        assert is_runner_token(key)
    # both cases and digits turn up across 50 keys of 30 characters (about 1 in 10^20 not)
    body = "".join(key[len("bencher_runner_") :] for key in keys)
    assert any(c.isupper() for c in body) and any(c.islower() for c in body)
    assert any(c.isdigit() for c in body)


@pytest.mark.parametrize(
    "token",
    [
        "bencher_runner_" + "a" * 29,
        "bencher_runner_" + "a" * 31,
        "bencher_runner_" + "a" * 29 + "-",
        "bencher_runner_" + "é" * 30,
        "BENCHER_RUNNER_" + "a" * 30,
    ],
)
def test_malformed_bencher_keys_are_refused(token: str) -> None:
    assert not is_runner_token(token)
