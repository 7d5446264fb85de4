"""A bisection's commits go into a template's arguments: none may read as an option."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchrunner.api.bisections import BisectionCreate
from benchrunner.server.bisection.start import versions_of
from benchrunner.server.http.errors import ApiError

pytestmark = pytest.mark.engine_independent

BODY = {"benchmarks": ["work"], "measure": "latency", "template": "bench.noop"}


@pytest.mark.parametrize("field", ["good", "bad"])
def test_a_good_or_bad_commit_starting_with_a_dash_is_refused(field: str) -> None:
    commits = {"good": "abc123", "bad": "def456", field: "--output=/etc/passwd"}
    with pytest.raises(ValidationError):
        BisectionCreate.model_validate({**BODY, **commits, "candidates": ["def456"]})


def test_a_candidate_starting_with_a_dash_is_refused() -> None:
    body = BisectionCreate.model_validate(
        {**BODY, "good": "abc123", "bad": "def456", "candidates": ["-n", "def456"]}
    )
    with pytest.raises(ApiError, match="is not a commit"):
        versions_of(body)


def test_commits_and_refs_are_accepted() -> None:
    body = BisectionCreate.model_validate(
        {**BODY, "good": "v1.0", "bad": "main", "candidates": ["a1b2c3", "origin/main~2", "main"]}
    )
    assert versions_of(body) == ["v1.0", "a1b2c3", "origin/main~2", "main"]
