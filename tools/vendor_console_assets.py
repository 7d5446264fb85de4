#!/usr/bin/env python3
"""Re-fetch the server's vendored front-end assets at their pinned versions: the console's (htmx,
uPlot) and the API docs' (Swagger UI, served at ``/docs``).

Each package is fetched with ``npm pack`` from the npm registry; the tarball's SHA-512 must equal
the integrity pinned below (the registry's ``dist.integrity``), or nothing is written. The built
files and the package's LICENSE are then copied into the console's static folder.

    python3 tools/vendor_console_assets.py          # write the files
    python3 tools/vendor_console_assets.py --check  # exit 1 if the committed files differ

The server never fetches anything at run time: these files are committed.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENDOR = REPO / "src" / "benchrunner" / "server" / "console" / "static" / "vendor"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    integrity: str
    files: dict[str, str]
    """Path inside the tarball -> file name under the vendor folder."""


PACKAGES = (
    Package(
        "htmx.org",
        "2.0.11",
        "sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA==",
        {"package/dist/htmx.min.js": "htmx.min.js", "package/LICENSE": "htmx.LICENSE"},
    ),
    Package(
        "uplot",
        "1.6.32",
        "sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==",
        {
            "package/dist/uPlot.iife.min.js": "uPlot.iife.min.js",
            "package/dist/uPlot.min.css": "uPlot.min.css",
            "package/LICENSE": "uPlot.LICENSE",
        },
    ),
    Package(
        "swagger-ui-dist",
        "5.35.0",
        "sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==",
        {
            "package/swagger-ui-bundle.js": "swagger-ui-bundle.js",
            "package/swagger-ui.css": "swagger-ui.css",
            "package/favicon-32x32.png": "swagger-ui-favicon-32x32.png",
            "package/LICENSE": "swagger-ui.LICENSE",
            "package/NOTICE": "swagger-ui.NOTICE",
            "package/swagger-ui-bundle.js.LICENSE.txt": "swagger-ui-bundle.js.LICENSE.txt",
        },
    ),
)


def fetch(package: Package, workdir: Path) -> bytes:
    """The package's tarball, after its SHA-512 matched the pinned integrity."""
    spec = f"{package.name}@{package.version}"
    result = subprocess.run(
        ["npm", "pack", spec, "--silent", "--pack-destination", str(workdir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"npm pack {spec} failed:\n{result.stderr}")
    tarball = workdir / result.stdout.strip().splitlines()[-1]
    data = tarball.read_bytes()
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != package.integrity:
        raise SystemExit(f"{spec}: integrity {digest} differs from the pinned {package.integrity}")
    return data


def extract(package: Package, data: bytes) -> dict[str, bytes]:
    """The vendored files' contents by their vendor-folder name."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for inner, name in package.files.items():
            member = archive.extractfile(inner)
            if member is None:
                raise SystemExit(f"{package.name}: {inner} missing from the tarball")
            out[name] = member.read()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    check = parser.parse_args().check
    differing: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for package in PACKAGES:
            for name, content in extract(package, fetch(package, Path(tmp))).items():
                target = VENDOR / name
                if check:
                    if not target.is_file() or target.read_bytes() != content:
                        differing.append(name)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(content)
                    print(f"{package.name}@{package.version}: {target.relative_to(REPO)}")
    if differing:
        print(f"differ from the pinned packages: {', '.join(differing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
