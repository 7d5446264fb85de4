"""Run benchrunner's processes from another checkout, to measure before and after side by side."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

ADMIN_EMAIL = "admin@test.dev"
"""The admin ``tests.harness`` bootstraps."""


@contextlib.contextmanager
def server_source(src: str | None) -> Iterator[None]:
    """Servers and runners started inside the block import benchrunner from ``src`` (the
    ``src`` directory of e.g. a ``git worktree`` of the code before a change), when given."""
    if src is None:
        yield
        return
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = src
    try:
        yield
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def admin_token(db_url: str) -> str:
    """Migrate ``db_url`` and bootstrap the harness's admin through the code that the servers
    will run (``benchrunner admin bootstrap`` in a subprocess, so under ``server_source`` the
    older code migrates with its own migrations); the admin's new API token."""
    command = [sys.executable, "-m", "benchrunner", "admin", "bootstrap"]
    done = subprocess.run(
        [*command, "--email", ADMIN_EMAIL, "--db", db_url],
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout.strip()
