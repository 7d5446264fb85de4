"""deploy/images/runtime_requirements.py: the lock's entries a wheel needs at run time."""

from __future__ import annotations

import importlib.util
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.harness import REPO

SCRIPT = REPO / "deploy" / "images" / "runtime_requirements.py"

LOCK = """\
# comment
app-dep==1.0 \\
    --hash=sha256:aa
    # via demo (pyproject.toml)
shared==2.0 \\
    --hash=sha256:bb \\
    --hash=sha256:cc
    # via
    #   app-dep
    #   test-tool
test-tool==3.0 \\
    --hash=sha256:dd
    # via demo (pyproject.toml)
test-only==4.0 \\
    --hash=sha256:ee
    # via test-tool
extra-dep==5.0 \\
    --hash=sha256:ff
    # via app-dep
"""


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("runtime_requirements", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wheel(directory: Path, name: str, requires: list[str]) -> Path:
    path = directory / f"{name}-1.0-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    metadata += "".join(f"Requires-Dist: {line}\n" for line in requires)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}-1.0.dist-info/METADATA", metadata)
    return path


def test_the_closure_follows_via_notes_and_leaves_extras_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(LOCK)
    built = wheel(tmp_path, "demo", ["app-dep>=1", 'test-tool>=3; extra == "dev"'])
    assert load().main(["x", str(lock), str(built)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines() == [
        "app-dep==1.0 \\",
        "    --hash=sha256:aa",
        "extra-dep==5.0 \\",
        "    --hash=sha256:ff",
        "shared==2.0 \\",
        "    --hash=sha256:bb \\",
        "    --hash=sha256:cc",
    ]


def test_a_requirement_missing_from_the_lock_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(LOCK)
    built = wheel(tmp_path, "demo", ["app-dep", "absent_package>=2"])
    assert load().main(["x", str(lock), str(built)]) == 1
    assert "no entry for absent-package" in capsys.readouterr().err


def test_the_project_lock_gives_the_runtime_and_no_dev_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    dev = project["optional-dependencies"]["dev"]
    built = wheel(
        tmp_path,
        "benchrunner",
        [*project["dependencies"], *(f'{d}; extra == "dev"' for d in dev)],
    )
    module = load()
    assert module.main(["x", str(REPO / "requirements.lock"), str(built)]) == 0
    names = {line.split("==")[0] for line in capsys.readouterr().out.splitlines() if "==" in line}
    for requirement in project["dependencies"]:
        assert module.canonical(module._NAME.match(requirement).group(1)) in names
    assert {"uvloop", "httptools", "psycopg-binary", "starlette"} <= names
    assert not names & {"pytest", "mypy", "ruff", "playwright", "schemathesis", "hypothesis"}
