"""Child processes of ``benchrunner up``: started in their own process group, logged to a file,
stopped with SIGTERM and, after a grace period, SIGKILL.

Their own process group keeps the terminal's Ctrl-C away from them, so ``up`` decides the order
of shutdown (runner drains first, then the server).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO


class Child:
    def __init__(
        self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str]
    ) -> None:
        self.name = name
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=dict(env),
                process_group=0,
            )
        except BaseException:
            self._log.close()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        """None while it runs; negative for death by signal, as ``Popen.returncode``."""
        return self.process.poll()

    def stop(self, timeout: float, *, hurry: Callable[[], bool] = lambda: False) -> int:
        """SIGTERM, then wait up to ``timeout`` s; each time ``hurry()`` is true another SIGTERM
        is sent (the runner's "cancel now"), and at the deadline SIGKILL. Returns the exit code.
        """
        if self.exit_code() is None:
            self._signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.exit_code() is None and time.monotonic() < deadline:
            if hurry():
                self._signal(signal.SIGTERM)
            time.sleep(0.1)
        if self.exit_code() is None:
            self._signal(signal.SIGKILL)
        code = self.process.wait()
        self._log.close()
        return code

    def _signal(self, sig: signal.Signals) -> None:
        # The process only, not its group: the runner manages its jobs' process groups itself.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def tail(self, lines: int = 15) -> str:
        """The last lines of the child's log, for a report of why it died."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"
