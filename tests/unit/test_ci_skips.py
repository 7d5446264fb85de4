"""Under CI=true a skipped test fails the run (tests/conftest.py): checked on a throwaway suite."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness import REPO

SUITE = """
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="runc not installed")
def test_needs_a_tool():
    pass

def test_skips_itself():
    pytest.skip("no engine")

@pytest.mark.xfail(strict=True, reason="a known bug")
def test_known_bug():
    assert False
"""


def _run(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    shutil.copy(REPO / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "test_suite.py").write_text(SUITE)
    # Its temporary directories stay in tmp_path: with pytest's default base, the run would
    # clean up older sessions' numbered directories in the shared /tmp/pytest-of-<user>
    # (gigabytes after a full suite), minutes of deleting before its summary.
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"]
    return subprocess.run(
        [*pytest_run, f"--basetemp={tmp_path / 'basetemp'}", str(tests)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"CI": ci, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)},
        timeout=120,
        check=False,
    )


def test_a_skip_is_an_error_under_ci(tmp_path: Path) -> None:
    result = _run(tmp_path, "true")
    assert result.returncode == 1, result.stdout
    # A skip in the call fails the test, a skip in the setup errs it. Warnings, when this
    # machine's Python gives some, come between the counts.
    counts = r"1 failed, 1 passed, 1 xfailed, (\d+ warnings?, )?1 error in"
    assert re.search(counts, result.stdout), result.stdout
    assert "skipped under CI=true, where every test must run: runc not installed" in result.stdout
    assert "skipped under CI=true, where every test must run: no engine" in result.stdout


def test_a_skip_is_a_skip_elsewhere(tmp_path: Path) -> None:
    result = _run(tmp_path, "")
    assert result.returncode == 0, result.stdout
    counts = r"1 passed, 2 skipped, 1 xfailed(, \d+ warnings?)? in"
    assert re.search(counts, result.stdout), result.stdout
