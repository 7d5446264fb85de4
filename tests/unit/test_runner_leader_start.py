"""How a job's leader is started: unarmed when the runner's guard watches it, otherwise armed
with the parent-death signal through the ``setpriv`` shim and through the forked-child fallback
alike; always in a session of its own, and refused the same way when its program cannot run."""

from __future__ import annotations

import errno
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from benchrunner.runner.executors.group import parent_death_shim, start_leader
from benchrunner.runner.executors.spawn import Leader
from tests.harness import wait_until
from tests.unit.parent_death import READ_PDEATHSIG

SHIM = parent_death_shim()
WAYS = [
    pytest.param({"guarded": True}, id="guarded"),
    pytest.param({"shim": None}, id="forked-child"),
    pytest.param(
        {"shim": SHIM},
        id="setpriv",
        marks=pytest.mark.skipif(SHIM is None, reason="no usable setpriv"),
    ),
]


def finished(leader: Leader) -> tuple[int, bytes, bytes]:
    """The leader's exit code, stdout and stderr, once it exited (killed after 30 s)."""
    assert leader.stdout is not None and leader.stderr is not None
    try:
        wait_until(lambda: leader.poll() is not None, timeout=30, interval=0.01)
    finally:
        if leader.poll() is None:
            leader.kill()
    with leader.stdout, leader.stderr:  # a few bytes each: no pipe fills up
        stdout, stderr = leader.stdout.read(), leader.stderr.read()
    return leader.wait(), stdout, stderr


def environment() -> dict[str, str]:
    return {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}


@pytest.mark.parametrize("way", WAYS)
def test_the_leader_runs_in_a_session_of_its_own_armed_unless_guarded(
    way: dict[str, Any],
) -> None:
    code = f"import os; {READ_PDEATHSIG}; print(os.getsid(0) == os.getpid())"
    leader = start_leader([sys.executable, "-c", code], env=environment(), **way)
    returncode, stdout, stderr = finished(leader)
    armed = "0" if way.get("guarded") else str(int(signal.SIGKILL))
    assert (returncode, stdout.decode().split(), stderr) == (0, [armed, "True"], b"")


@pytest.mark.parametrize("way", WAYS)
def test_argv_reaches_the_program_unchanged(way: dict[str, Any], tmp_path: Path) -> None:
    code = "import sys; print(sys.argv[1:]); import os; print(os.getcwd())"
    leader = start_leader(
        [sys.executable, "-c", code, "--", "a b"], env=environment(), cwd=tmp_path, **way
    )
    _, stdout, _ = finished(leader)
    assert stdout.decode().splitlines() == ["['--', 'a b']", str(tmp_path)]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("program", "code"),
    [
        ("no-such-benchmark-binary", errno.ENOENT),
        ("/nonexistent/benchmark-binary", errno.ENOENT),
        ("./not-executable", errno.EACCES),
        ("./a-directory", errno.EACCES),
    ],
)
def test_a_program_that_cannot_run_is_refused_before_anything_starts(
    way: dict[str, Any], program: str, code: int, tmp_path: Path
) -> None:
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    (tmp_path / "a-directory").mkdir()
    with pytest.raises(OSError) as refused:
        start_leader([program], env=environment(), cwd=tmp_path, **way)
    assert refused.value.errno == code
