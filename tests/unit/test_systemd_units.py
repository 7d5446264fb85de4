"""deploy/systemd's units pass ``systemd-analyze verify``, and keep the settings the operator
guide (docs/how-to/deploy.md) promises.

``verify`` needs each unit's ``ExecStart`` program to exist: the copies checked here point at
this environment's ``benchrunner`` instead of ``/opt/benchrunner/bin/benchrunner``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO

UNITS = REPO / "deploy" / "systemd"
INSTALLED = "/opt/benchrunner/bin/benchrunner"
NAMES = ("benchrunner-server.service", "benchrunner-runner.service")


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.fail("systemd-analyze is not installed (tools/system-packages.sh: systemd)")
    return found


def verify(directory: Path, texts: dict[str, str]) -> subprocess.CompletedProcess[str]:
    benchrunner = Path(sys.executable).with_name("benchrunner")
    assert benchrunner.exists()
    paths = []
    for name, text in texts.items():
        assert INSTALLED in text
        path = directory / name
        path.write_text(text.replace(INSTALLED, str(benchrunner)))
        paths.append(str(path))
    return subprocess.run(
        [systemd_analyze(), "verify", *paths],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def settings(name: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in (UNITS / name).read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            values.setdefault(key, []).append(value)
    return values


def test_the_units_verify_cleanly(tmp_path: Path) -> None:
    done = verify(tmp_path, {name: (UNITS / name).read_text() for name in NAMES})
    assert done.returncode == 0, done.stderr
    assert done.stdout + done.stderr == ""


def test_verify_reports_a_misspelt_setting(tmp_path: Path) -> None:
    """What the test above relies on: verify's complaints reach its output."""
    text = (UNITS / NAMES[0]).read_text().replace("PrivateTmp=yes", "PrivatTmp=yes")
    done = verify(tmp_path, {NAMES[0]: text})
    assert "Unknown key 'PrivatTmp'" in done.stderr


def test_the_server_is_sandboxed() -> None:
    server = settings("benchrunner-server.service")
    assert server["User"] == ["benchrunner"]
    assert server["ExecStart"] == [f"{INSTALLED} server"]
    assert server["EnvironmentFile"] == ["/etc/benchrunner/server.env"]
    for key in ("NoNewPrivileges", "PrivateTmp", "PrivateDevices", "ProtectControlGroups"):
        assert server[key] == ["yes"], key
    assert server["ProtectSystem"] == ["strict"]
    assert server["ReadWritePaths"] == ["/var/lib/benchrunner"]
    assert server["CapabilityBoundingSet"] == [""]


def test_the_runner_keeps_what_runc_needs() -> None:
    runner = settings("benchrunner-runner.service")
    assert runner["User"] == ["root"]
    assert runner["ExecStart"] == [f"{INSTALLED} runner up"]
    assert runner["Delegate"] == ["yes"]
    assert runner["KillMode"] == ["mixed"]  # the runner drains on SIGTERM; its guard ends jobs
    assert runner["ProtectSystem"] == ["strict"]
    assert runner["ReadWritePaths"] == ["/var/lib/benchrunner-runner"]
    # runc mounts loop devices and writes the cgroup file system; --tune writes /sys.
    for key in (
        "PrivateDevices",
        "ProtectControlGroups",
        "ProtectKernelTunables",
        "RestrictNamespaces",
        "CapabilityBoundingSet",
    ):
        assert key not in runner, key
