"""Registry throughput and server memory: push and pull one large layer through ``/v2/``.

One real server process on SQLite. Each run writes a fresh random layer file, pushes it with
the CLI's registry client (one streamed monolithic upload, digest checked by the server), then
pulls it back streamed to nowhere. Prints MiB/s for both and the server's peak resident memory
(``VmHWM``), which stays far below the layer size because bodies are streamed to and from disk.

    .venv/bin/python -m benchmarks.registry_transfer [--mib 256] [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from tests.harness import deploy
from tests.registry_support import registry_token

from benchrunner.images import Blob
from benchrunner.registry_client import RegistryClient


def write_layer(path: Path, mib: int) -> Blob:
    hasher = hashlib.sha256()
    with path.open("wb") as handle:
        for _ in range(mib):
            chunk = os.urandom(1 << 20)
            hasher.update(chunk)
            handle.write(chunk)
    return Blob("sha256:" + hasher.hexdigest(), mib << 20, lambda: path.open("rb"))


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    pushes, pulls = [], []
    with (
        tempfile.TemporaryDirectory() as tmp,
        deploy(Path(tmp), f"sqlite:///{Path(tmp) / 'benchrunner.db'}") as deployment,
    ):
        server = deployment.server
        assert server.proc is not None
        layer_path = Path(tmp) / "layer"
        for run in range(1, options.runs + 1):
            blob = write_layer(layer_path, options.mib)
            with RegistryClient(server.url, server.token) as registry:
                started = time.perf_counter()
                registry.push_blob("bench", blob)
                pushes.append(options.mib / (time.perf_counter() - started))
            token = registry_token(server, server.token, "repository:bench:pull")
            started = time.perf_counter()
            with httpx.stream(
                "GET",
                f"{server.url}/v2/bench/blobs/{blob.digest}",
                headers={"Authorization": f"Bearer {token}"},
                timeout=300,
            ) as response:
                received = sum(len(chunk) for chunk in response.iter_bytes())
            assert received == blob.size
            pulls.append(options.mib / (time.perf_counter() - started))
            print(f"run {run}: push {pushes[-1]:.0f} MiB/s, pull {pulls[-1]:.0f} MiB/s")
        print(
            f"median of {options.runs} ({options.mib} MiB layer): "
            f"push {statistics.median(pushes):.0f} MiB/s, "
            f"pull {statistics.median(pulls):.0f} MiB/s, "
            f"server peak RSS {peak_rss_mib(server.proc.pid):.0f} MiB"
        )


if __name__ == "__main__":
    main()
