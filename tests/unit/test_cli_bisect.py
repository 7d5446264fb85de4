"""``benchrunner bisect``'s candidates, from a real git repository: the commits after good up
to bad along the first parents, oldest first, as full hashes; refused when there are none."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchrunner.api.bisections import BisectionResult
from benchrunner.cli.bisect_cmds import candidates, result_text

pytestmark = pytest.mark.engine_independent


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", name)
    return _git(repo, "rev-parse", "HEAD")


def test_the_candidates_follow_the_first_parents(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    good = _commit(repo, "a")
    b = _commit(repo, "b")
    _git(repo, "checkout", "-q", "-b", "topic")
    _commit(repo, "t1")
    _commit(repo, "t2")
    _git(repo, "checkout", "-q", "main")
    c = _commit(repo, "c")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    merge = _git(repo, "rev-parse", "HEAD")
    assert candidates(repo, good[:7], "main") == (good, merge, [b, c, merge])
    with pytest.raises(ValueError, match="no commits between"):
        candidates(repo, "main", good)
    with pytest.raises(ValueError, match="rev-parse"):
        candidates(repo, "no-such-ref", "main")


def test_the_outcome_in_one_line() -> None:
    culprit = {"commit": "abc", "ratio": 1.051, "lower_value": 1.046, "upper_value": 1.057}
    named = BisectionResult.model_validate({"culprit": culprit, "reason": None})
    assert result_text("done", named) == (
        "first bad commit abc: +5.1% [+4.6, +5.7] against its parent"
    )
    none = BisectionResult.model_validate({"culprit": None, "reason": "no culprit: x"})
    assert result_text("done", none) == "no culprit: x"
    assert result_text("running", None, 3) == "running: 3 jobs so far"
