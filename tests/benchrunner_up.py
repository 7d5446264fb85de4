"""``benchrunner up`` as a user starts it: a process whose config file says it is ready, stopped
with Ctrl-C (SIGINT), which must end it cleanly."""

from __future__ import annotations

import signal
import subprocess
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness import wait_until


@dataclass(frozen=True)
class Up:
    """A running ``benchrunner up``: what it wrote to its config file and where it logs."""

    settings: dict[str, Any]
    log: Path


@contextmanager
def benchrunner_up(
    command: Sequence[str],
    env: dict[str, str],
    home: Path,
    *,
    timeout: float,
    cwd: Path | None = None,
) -> Iterator[Up]:
    """Start ``command`` (a ``benchrunner up``) with ``HOME`` = ``home``; ready once its config
    file holds a token (``timeout`` seconds at most); stopped with SIGINT, exit 0 required. It runs
    in ``cwd`` (default ``home``)."""
    log_path = home / "up.log"
    config = home / ".config" / "benchrunner" / "config.toml"
    with log_path.open("wb") as log:
        up = subprocess.Popen(
            list(command),
            env=env,
            cwd=cwd or home,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:

            def ready() -> bool:
                assert up.poll() is None, log_path.read_text()
                return config.exists() and "token" in config.read_text()

            wait_until(ready, timeout=timeout, message="benchrunner up to write its config")
            yield Up(tomllib.loads(config.read_text()), log_path)
        finally:
            up.send_signal(signal.SIGINT)
            code = up.wait(timeout=60)
    assert code == 0, log_path.read_text()
