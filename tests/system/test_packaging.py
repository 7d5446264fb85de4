"""The package as an operator installs it: ``python -m build`` makes an sdist and, from it, a
wheel holding everything the server needs besides Python code; the wheel installed into a fresh
environment runs the quickstart (``benchrunner up``, a demo template run to ``processed``).

The build runs offline (``--no-isolation``, with the locked hatchling). The fresh environment
sees the test interpreter's installed dependencies through a path line, not its editable source
tree (``tests.wheels.runner_venv``), so what it imports as ``benchrunner`` is the wheel; the
wheel's metadata is checked to require every dependency of ``pyproject.toml`` instead of
downloading them again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import benchrunner
from tests.benchrunner_up import benchrunner_up
from tests.harness import REPO, free_port
from tests.wheels import pip_install, runner_venv

pytestmark = pytest.mark.engine_independent

NEEDED = (
    "benchrunner/demo_templates.toml",
    "benchrunner/py.typed",
    "benchrunner/server/console/templates/base.html",
    "benchrunner/server/console/static/console.css",
    "benchrunner/server/console/static/vendor/htmx.min.js",
    "benchrunner/server/store/migrations/env.py",
    "benchrunner/server/store/migrations/versions/0001_initial_schema.py",
)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("benchrunner-*.whl")
    return wheel


def test_the_sdist_and_wheel_carry_the_version_data_files_and_dependencies(dist: Path) -> None:
    version = benchrunner.__version__
    wheel = _wheel(dist)
    assert wheel.name == f"benchrunner-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"benchrunner-{version}.dist-info/METADATA").decode()
        entry_points = archive.read(f"benchrunner-{version}.dist-info/entry_points.txt").decode()
    assert set(NEEDED) <= names, set(NEEDED) - names
    migrations = REPO / "src/benchrunner/server/store/migrations/versions"
    for migration in migrations.glob("*.py"):
        assert f"benchrunner/server/store/migrations/versions/{migration.name}" in names
    templates = REPO / "src/benchrunner/server/console/templates"
    assert sum(n.endswith(".html") for n in names) == len(list(templates.rglob("*.html")))
    assert "benchrunner = benchrunner.cli.main:main" in entry_points
    assert f"\nVersion: {version}\n" in metadata
    required = {
        line.removeprefix("Requires-Dist: ").split(";")[0].replace(" ", "")
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert required == {d.replace(" ", "") for d in project["dependencies"]}

    (sdist,) = dist.glob("benchrunner-*.tar.gz")
    assert sdist.name == f"benchrunner-{version}.tar.gz"
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert {f"src/{n}" for n in NEEDED} <= members
    assert {"pyproject.toml", "README.md", "requirements.lock"} <= members
    assert not any(m.startswith("tests/") for m in members)


@pytest.fixture
def installed(dist: Path, tmp_path: Path) -> Iterator[Path]:
    python = runner_venv(tmp_path / "venv")
    pip_install(python, _wheel(dist))
    yield python.parent


def test_the_installed_wheel_runs_the_quickstart(installed: Path, tmp_path: Path) -> None:
    env = {
        "PATH": f"{installed}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BENCHRUNNER_PORT": str(free_port()),
        "BENCHRUNNER_START_TIMEOUT": "150",  # a fresh environment's first start, on a busy host
    }
    where = subprocess.run(
        [str(installed / "python"), "-c", "import benchrunner; print(benchrunner.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    ).stdout.strip()
    assert where.startswith(str(installed.parent)), where  # the wheel, not the source tree
    with benchrunner_up([str(installed / "benchrunner"), "up"], env, tmp_path, timeout=240) as up:
        host = up.settings["host"]
        assert httpx.get(f"{host}/v0/server/health").status_code == 200
        console = httpx.get(f"{host}/console/login")
        assert console.status_code == 200 and "<form" in console.text  # templates are there
        run = subprocess.run(
            [
                *(str(installed / "benchrunner"), "run", "--spec", "local"),
                *("--template", "bench.sleep", "--arg", "ms=5", "--wait", "--json"),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=180,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert '"processed"' in run.stdout, run.stdout
