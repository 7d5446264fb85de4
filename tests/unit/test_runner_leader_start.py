"""How a job's leader is started: armed with the parent-death signal through the ``setpriv``
shim and through the forked-child fallback alike, and refused the same way when its program
cannot run."""

from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchrunner.runner.executors.group import parent_death_shim, start_leader

PR_GET_PDEATHSIG = 2
READ_PDEATHSIG = (
    "import ctypes; value = ctypes.c_int(); "
    f"ctypes.CDLL(None).prctl({PR_GET_PDEATHSIG}, ctypes.byref(value)); print(value.value)"
)

SHIM = parent_death_shim()
WAYS = [
    pytest.param(None, id="forked-child"),
    pytest.param(
        SHIM, id="setpriv", marks=pytest.mark.skipif(SHIM is None, reason="no usable setpriv")
    ),
]


def environment() -> dict[str, str]:
    return {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}


@pytest.mark.parametrize("shim", WAYS)
def test_the_leader_runs_armed_with_sigkill_in_a_session_of_its_own(
    shim: Sequence[str] | None,
) -> None:
    code = f"import os; {READ_PDEATHSIG}; print(os.getsid(0) == os.getpid())"
    leader = start_leader([sys.executable, "-c", code], env=environment(), shim=shim)
    stdout, stderr = leader.communicate(timeout=30)
    assert (leader.returncode, stdout.decode().split(), stderr) == (0, ["9", "True"], b"")


@pytest.mark.parametrize("shim", WAYS)
def test_argv_reaches_the_program_unchanged(shim: Sequence[str] | None, tmp_path: Path) -> None:
    code = "import sys; print(sys.argv[1:]); import os; print(os.getcwd())"
    leader = start_leader(
        [sys.executable, "-c", code, "--", "a b"], env=environment(), cwd=tmp_path, shim=shim
    )
    stdout, _ = leader.communicate(timeout=30)
    assert stdout.decode().splitlines() == ["['--', 'a b']", str(tmp_path)]


@pytest.mark.parametrize("shim", WAYS)
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
    shim: Sequence[str] | None, program: str, code: int, tmp_path: Path
) -> None:
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    (tmp_path / "a-directory").mkdir()
    with pytest.raises(OSError) as refused:
        start_leader([program], env=environment(), cwd=tmp_path, shim=shim)
    assert refused.value.errno == code
