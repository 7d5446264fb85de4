"""Wheels of this source tree and environments to install them in, offline and fast, for the
self-update tests: no build backend, no index, no network.

``build_wheel`` zips ``src/benchrunner`` as a PEP 427 wheel with the version it is given (in the
file name, the metadata and ``benchrunner.__version__``). ``runner_venv`` makes a virtual
environment without pip of its own that sees the test interpreter's installed packages (the
project's dependencies and pip) after its own site-packages, so that a wheel installed into it
is the benchrunner it imports.
"""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "benchrunner"
_VERSION_LINE = re.compile(r'^__version__ = ".*"$', re.MULTILINE)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def build_wheel(version: str, out_dir: Path, *, requires_python: str | None = None) -> Path:
    """``benchrunner-{version}-py3-none-any.whl`` of the source tree, in ``out_dir``;
    ``requires_python`` goes into its metadata (pip refuses a wheel for another Python)."""
    dist_info = f"benchrunner-{version}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted(SOURCE.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        name = f"benchrunner/{path.relative_to(SOURCE).as_posix()}"
        files[name] = path.read_bytes()
    init = files["benchrunner/__init__.py"].decode()
    patched = _VERSION_LINE.sub(f'__version__ = "{version}"', init)
    files["benchrunner/__init__.py"] = patched.encode()
    metadata = f"Metadata-Version: 2.1\nName: benchrunner\nVersion: {version}\n"
    if requires_python is not None:
        metadata += f"Requires-Python: {requires_python}\n"
    files[f"{dist_info}/METADATA"] = metadata.encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests.wheels\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{dist_info}/entry_points.txt"] = (
        b"[console_scripts]\nbenchrunner = benchrunner.cli.main:main\n"
    )
    record = [f"{name},{_record_hash(data)},{len(data)}" for name, data in files.items()]
    files[f"{dist_info}/RECORD"] = ("\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n").encode()
    wheel = out_dir / f"benchrunner-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def runner_venv(directory: Path) -> Path:
    """A new environment at ``directory``; its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=120
    )
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    # A plain path line: the directory's own .pth files (the editable source tree) stay out.
    Path(purelib, "_test_interpreter.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def pip_install(python: Path, wheel: Path) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        timeout=300,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )


def installed_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import benchrunner; print(benchrunner.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
        cwd=python.parent,
    ).stdout.strip()
