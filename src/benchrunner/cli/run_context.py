"""The ``context`` map ``benchrunner run`` sends, as Bencher's CLI gathers it: the git repository
around the working directory.

The server takes branch and hash from it when the flags do not name them
(``bencher.dev/v0/branch/ref/name``, ``.../branch/hash``). Nothing here fails: without git,
outside a repository or on a detached HEAD the keys are simply left out.

The operating system (Bencher's ``.../testbed/os``) is not sent: the server would take it for
the testbed, so the CLI's runs and a run posted with curl from the same machine would land on
two testbeds (``Linux`` and ``localhost``), two histories of one machine. Without
``--testbed`` both take the server's default.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import PurePath

PREFIX = "bencher.dev/v0"
GIT_TIMEOUT = 5.0

Git = Callable[[Sequence[str]], str | None]
"""Runs ``git ARGS`` and returns its stripped stdout, or None when it fails."""


def run_git(args: Sequence[str]) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    output = done.stdout.strip()
    return output if done.returncode == 0 and output else None


def git_context(git: Git) -> dict[str, str]:
    """Repository name and root commit, the checked-out branch (full ref and short name) and
    the commit checked out."""
    context: dict[str, str] = {}
    top = git(["rev-parse", "--show-toplevel"])
    if top is None:
        return context
    context[f"{PREFIX}/repo/name"] = PurePath(top).name or "root"
    roots = git(["rev-list", "--max-parents=0", "HEAD"])
    if roots:
        context[f"{PREFIX}/repo/hash"] = roots.splitlines()[-1]
    ref = git(["symbolic-ref", "-q", "HEAD"])
    if ref:
        context[f"{PREFIX}/branch/ref"] = ref
        context[f"{PREFIX}/branch/ref/name"] = ref.removeprefix("refs/heads/")
    head = git(["rev-parse", "HEAD"])
    if head:
        context[f"{PREFIX}/branch/hash"] = head
    return context


def run_context(git: Git = run_git) -> dict[str, str]:
    """What the run's checkout can tell."""
    return git_context(git)
