"""The ``context`` map ``benchrunner run`` sends, as Bencher's CLI gathers it: the git repository
around the working directory and the operating system.

The server takes branch, hash and testbed from it when the flags do not name them
(``bencher.dev/v0/branch/ref/name``, ``.../branch/hash``, ``.../testbed/os``). Nothing here fails:
without git, outside a repository or on a detached HEAD the keys are simply left out.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable, Sequence
from pathlib import PurePath

PREFIX = "bencher.dev/v0"
GIT_TIMEOUT = 5.0

Git = Callable[[Sequence[str]], str | None]
"""Runs ``git ARGS`` and returns its stripped stdout, or None when it fails."""

_OS_NAMES = {"Linux": "Linux", "Darwin": "macOS", "Windows": "Windows"}
"""``platform.system()`` -> Bencher's names for ``testbed/os``."""


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


def os_context(system: str) -> dict[str, str]:
    name = _OS_NAMES.get(system)
    return {f"{PREFIX}/testbed/os": name} if name else {}


def run_context(git: Git = run_git, system: str | None = None) -> dict[str, str]:
    """Everything this machine can tell: git first, then the operating system."""
    return {**git_context(git), **os_context(platform.system() if system is None else system)}
