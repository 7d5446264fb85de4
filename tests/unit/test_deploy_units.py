"""The systemd units in deploy/ pass ``systemd-analyze verify``: every directive parses and the
command exists (run with this environment's ``benchrunner`` in place of the installed one)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO

UNITS = sorted((REPO / "deploy").glob("*.service"))
pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed"
)


def _verify(unit: Path, text: str, tmp_path: Path) -> str:
    """What ``systemd-analyze verify`` says about ``text`` as the unit ``unit.name``; it exits
    0 even for directives it ignores, so what it prints is the verdict."""
    here = Path(sys.executable).parent / "benchrunner"
    installed = tmp_path / unit.name
    installed.write_text(
        text.replace("/opt/benchrunner/venv/bin/benchrunner", str(here)).replace(
            "/opt/benchrunner-runner/venv/bin/benchrunner", str(here)
        )
    )
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(installed)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_there_are_units_for_the_server_and_the_runner() -> None:
    assert [u.name for u in UNITS] == ["benchrunner-runner.service", "benchrunner-server.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.stem)
def test_the_unit_verifies_clean(unit: Path, tmp_path: Path) -> None:
    assert _verify(unit, unit.read_text(), tmp_path) == ""


def test_a_mistake_in_a_unit_is_reported(tmp_path: Path) -> None:
    unit = REPO / "deploy" / "benchrunner-server.service"
    broken = unit.read_text().replace("ProtectSystem=strict", "ProtectSystem=stricter")
    assert "Failed to parse protect system value" in _verify(unit, broken, tmp_path)
