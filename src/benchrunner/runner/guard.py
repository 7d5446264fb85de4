"""The guard: a small process beside the runner that stops what the runner's job left running
the moment the runner ends, however it ends (SIGKILL included).

The runner starts it once, before it claims anything, with the read end of a pipe as its
standard input, and keeps the write end. Nothing else holds that end (the runner's descriptors
are close-on-exec and its children get none), so the guard reads end-of-file exactly when the
runner has exited. It then stops what the in-flight records name (``inflight.py``) and exits.
It ignores SIGINT, SIGTERM and SIGHUP and runs in a session of its own: a Ctrl-C or a signal
to the runner's process group must not remove it before the runner.

Run as ``python -m benchrunner.runner.guard IN_FLIGHT_DIR``; it imports nothing heavy.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.runner.clock_timer import ProcessExit
from benchrunner.runner.inflight import InFlight

log = logging.getLogger(__name__)

_PASSED_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ")
_CLOSE_TIMEOUT = 30.0


class Guard:
    """The running guard of one runner; ``close()`` it when the runner stops."""

    def __init__(self, in_flight: Path, clock: ThreadClock | None = None) -> None:
        """``clock``: the runner's, on which ``close`` waits for the guard. Raises OSError if
        the guard cannot be started."""
        self._clock = clock or SystemThreadClock()
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(in_flight)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
            # Nothing of the runner's own configuration (its key above all) is passed on.
            env={name: os.environ[name] for name in _PASSED_ENV if name in os.environ},
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def running(self) -> bool:
        """Whether the guard still runs; its end is logged once, as an error."""
        if self._process.returncode is not None:
            return False
        if self._process.poll() is None:
            return True
        log.error(
            "the guard (pid %d) exited with %d: job leaders are armed with the parent-death "
            "signal from now on, and what else a job starts may outlive a killed runner until "
            "its next start",
            self._process.pid,
            self._process.returncode,
        )
        return False

    def close(self) -> None:
        """Let the guard stop what is still recorded, and wait for it (bounded)."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        ended = ProcessExit(self._process)
        if not ended.wait(self._clock, self._clock.monotonic() + _CLOSE_TIMEOUT):
            log.error("the guard (pid %d) did not end; killing it", self._process.pid)
            self._process.kill()
            self._process.wait()


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s benchrunner.guard: %(message)s"
    )
    if len(argv) != 1:
        log.error("usage: python -m benchrunner.runner.guard IN_FLIGHT_DIR")
        return 2
    while os.read(sys.stdin.fileno(), 4096):
        pass  # the runner sends nothing: only the end of the pipe means something
    stopped = InFlight(Path(argv[0])).stop_leftovers()
    if stopped:
        log.warning("the runner ended with a job running: stopped %d of its process(es)", stopped)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
