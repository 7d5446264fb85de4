"""``benchrunner up`` hands its runner the key in a file only its owner can read: not in the
environment, not on the command line, both of which any process of the same user (a job
included) can read in ``/proc``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.harness import cli, free_port, wait_until


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def test_up_gives_its_runner_the_key_in_a_file_of_mode_0600(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BENCHRUNNER_")},
        "HOME": str(tmp_path),
        "BENCHRUNNER_PORT": str(port),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    key_file = tmp_path / ".local" / "share" / "benchrunner" / "runner.key"
    with (tmp_path / "up.log").open("wb") as log:
        up = subprocess.Popen(
            [sys.executable, "-m", "benchrunner", "up"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:

        def runner() -> int | None:
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            # With its NUL ahead: ``benchrunner up`` itself, and a child forked from it before
            # its exec, end their ``benchrunner`` with ``runner\0up\0`` too.
            return next((p for p in children(up.pid) if b"\0runner\0up\0" in cmdline(p)), None)

        pid = wait_until(runner, timeout=60, message="up to start its runner")
        key = key_file.read_text().strip()
        assert key.startswith("bencher_runner_")
        assert key_file.stat().st_mode & 0o777 == 0o600
        # The runner authenticated with it: a job runs.
        result = cli("run", "--spec", "local", "--template", "bench.sleep", "--wait", env=env)
        assert "processed" in result.stdout
        for process in (pid, *children(pid)):  # the runner and its guard
            assert key.encode() not in Path(f"/proc/{process}/environ").read_bytes()
            assert key.encode() not in cmdline(process)
        assert b"--key-file" in cmdline(pid)
    finally:
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=90)
    assert code == 0, (tmp_path / "up.log").read_text()
