"""The ``context`` map ``run`` sends: git facts and the operating system, as Bencher's CLI."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchrunner.cli.run_context import Git, git_context, run_context, run_git

ROOT = "1" * 40
HEAD = "2" * 40


def fake_git(answers: dict[str, str | None]) -> Git:
    def git(args: Sequence[str]) -> str | None:
        return answers.get(" ".join(args))

    return git


IN_A_REPO = {
    "rev-parse --show-toplevel": "/home/ci/work/bench-repo",
    "rev-list --max-parents=0 HEAD": f"{'0' * 40}\n{ROOT}",
    "symbolic-ref -q HEAD": "refs/heads/feature/fast-sort",
    "rev-parse HEAD": HEAD,
}


@pytest.mark.parametrize(
    ("answers", "context"),
    [
        ({}, {}),
        (
            IN_A_REPO,
            {
                "bencher.dev/v0/repo/name": "bench-repo",
                "bencher.dev/v0/repo/hash": ROOT,
                "bencher.dev/v0/branch/ref": "refs/heads/feature/fast-sort",
                "bencher.dev/v0/branch/ref/name": "feature/fast-sort",
                "bencher.dev/v0/branch/hash": HEAD,
            },
        ),
        (
            # a detached HEAD (a pull request's merge commit in CI): no branch
            {**IN_A_REPO, "symbolic-ref -q HEAD": None},
            {
                "bencher.dev/v0/repo/name": "bench-repo",
                "bencher.dev/v0/repo/hash": ROOT,
                "bencher.dev/v0/branch/hash": HEAD,
            },
        ),
        (
            # a repository without commits yet
            {"rev-parse --show-toplevel": "/"},
            {"bencher.dev/v0/repo/name": "root"},
        ),
    ],
)
def test_git_context(answers: dict[str, str | None], context: dict[str, str]) -> None:
    assert git_context(fake_git(answers)) == context


def test_the_operating_system_is_not_sent_as_the_testbed() -> None:
    """The server would make it the testbed: the CLI's runs would land on ``Linux`` and a run
    posted with curl from the same machine on ``localhost``."""
    assert not any("testbed" in key for key in run_context(lambda args: None))


def test_run_context_reads_a_real_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "demo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    for name, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_COMMITTER_NAME", "t")):
        monkeypatch.setenv(name, value)
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "t@example.org")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for args in (["init", "-q", "-b", "trunk"], ["commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", *args], check=True, capture_output=True)
    head = run_git(["rev-parse", "HEAD"])
    assert head is not None and len(head) == 40
    assert run_context() == {
        "bencher.dev/v0/repo/name": "demo",
        "bencher.dev/v0/repo/hash": head,
        "bencher.dev/v0/branch/ref": "refs/heads/trunk",
        "bencher.dev/v0/branch/ref/name": "trunk",
        "bencher.dev/v0/branch/hash": head,
    }


def test_outside_a_repository_nothing_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert run_context() == {}
