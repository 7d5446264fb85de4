"""Run benchrunner's processes from another checkout, to measure before and after side by side."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


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
