"""A runner's pull token is handed out again while nearly new, and only for its project."""

from __future__ import annotations

import datetime as dt
import uuid

import jwt
import pytest

from benchrunner.server.runners import pull_tokens as oci_tokens
from benchrunner.server.runners.pull_tokens import ALGORITHM, OCI_AUDIENCE, PullTokens

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TTL = dt.timedelta(seconds=600)
SECRET = "0123456789abcdef" * 4
RUNNER, OTHER_RUNNER = uuid.uuid4(), uuid.uuid4()
PROJECT, OTHER_PROJECT = uuid.uuid4(), uuid.uuid4()


def _claims(token: str) -> dict[str, object]:
    """The token's claims, its signature checked (its expiry is not: the clock is fixed)."""
    return dict(
        jwt.decode(
            token,
            SECRET,
            algorithms=[ALGORITHM],
            audience=OCI_AUDIENCE,
            options={"verify_exp": False, "verify_iat": False},
        )
    )


def test_a_nearly_new_token_is_handed_out_again_then_a_new_one() -> None:
    tokens = PullTokens(SECRET, issuer="http://bench", ttl=TTL)
    first = tokens.for_job(RUNNER, PROJECT, T0)
    assert tokens.for_job(RUNNER, PROJECT, T0 + dt.timedelta(seconds=59)) == first
    later = tokens.for_job(RUNNER, PROJECT, T0 + dt.timedelta(seconds=60))
    assert later != first
    assert _claims(later)["exp"] == int((T0 + dt.timedelta(seconds=60) + TTL).timestamp())


def test_a_token_is_only_for_its_runner_and_project() -> None:
    tokens = PullTokens(SECRET, issuer="http://bench", ttl=TTL)
    first = tokens.for_job(RUNNER, PROJECT, T0)
    other_project = tokens.for_job(RUNNER, OTHER_PROJECT, T0)
    other_runner = tokens.for_job(OTHER_RUNNER, PROJECT, T0)
    assert len({first, other_project, other_runner}) == 3
    assert _claims(other_project)["access"] == [
        {"type": "repository", "name": str(OTHER_PROJECT), "actions": ["pull"]}
    ]
    assert _claims(other_runner)["sub"] == str(OTHER_RUNNER)


def test_a_clock_that_went_back_gets_a_new_token() -> None:
    tokens = PullTokens(SECRET, issuer="http://bench", ttl=TTL)
    first = tokens.for_job(RUNNER, PROJECT, T0)
    earlier = T0 - dt.timedelta(seconds=5)
    again = tokens.for_job(RUNNER, PROJECT, earlier)
    assert again != first
    assert _claims(again)["iat"] == int(earlier.timestamp())


def test_runners_whose_token_is_stale_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oci_tokens, "PRUNE_AT", 3)
    tokens = PullTokens(SECRET, issuer="http://bench", ttl=TTL)
    for _ in range(3):
        tokens.for_job(uuid.uuid4(), PROJECT, T0)
    later = T0 + dt.timedelta(seconds=30)
    tokens.for_job(RUNNER, PROJECT, later)
    assert len(tokens._latest) == 4  # all still reusable: none forgotten
    much_later = later + dt.timedelta(seconds=60)
    tokens.for_job(OTHER_RUNNER, PROJECT, much_later)
    assert set(tokens._latest) == {OTHER_RUNNER}


def test_the_secret_is_not_in_the_repr() -> None:
    assert SECRET not in repr(PullTokens(SECRET, issuer="http://bench", ttl=TTL))
