"""The sandbox executor's costs: image pull cold vs warm, container start overhead, and the
footprint on a CPU-bound benchmark. Needs root and runc; prints medians.

    .venv/bin/python -m benchmarks.sandbox [--runs 7] [--layer-mib 64] [--loop 1000000]

pull:     the busybox image plus one incompressible layer of --layer-mib MiB, served by a
          loopback registry (tests/oci_registry.py, a stdlib HTTP server) and by the server's
          own /v2/ registry (pushed with skopeo, pulled with the OCI token of a claimed job);
          cold = empty cache (download, sha256, unpack), warm = all cached.
start:    one iteration of an image job running busybox `true` (runc run + delete, limits
          and namespaces included; setup excluded and timed apart) vs the same busybox binary
          run directly with subprocess.
cpu:      a busybox shell loop of --loop increments, timed inside by /proc/uptime (10 ms
          resolution), in the sandbox on the job core vs directly pinned to the same core;
          runs alternate between the two so the machine's drift hits both alike.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.harness import deploy
from tests.oci_layout import (
    BUSYBOX,
    Layout,
    TarEntry,
    busybox_image,
    gzip_bytes,
    tar_bytes,
    write_layout,
)
from tests.oci_registry import REPOSITORY, TOKEN, LocalRegistry, local_registry

from benchrunner.protocol import JsonClaimedJob, JsonJobConfig, JsonSpec
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors.sandbox import SandboxExecutor
from benchrunner.runner.oci.cache import ImageCache
from benchrunner.runner.oci.pull import Registry, pull_image

MiB = 1024 * 1024
UPTIME_LOOP = (
    'read s _ < /proc/uptime; i=0; while [ "$i" -lt {n} ]; do i=$((i+1)); done; '
    "read e _ < /proc/uptime; echo $s $e"
)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def summary(values: list[float], unit: str = "ms") -> str:
    scale, digits = (1000.0, 1) if unit == "ms" else (1.0, 3)
    median = statistics.median(values) * scale
    cv = statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0
    return f"median {median:.{digits}f} {unit} (min {min(values) * scale:.{digits}f}, cv {cv:.2%})"


def claimed(digest: str, entrypoint: list[str]) -> JsonClaimedJob:
    now = dt.datetime.now(dt.UTC)
    spec = JsonSpec(
        uuid=uuid.uuid4(),
        name="bench",
        slug="bench",
        architecture="x86_64",
        cpu=1,
        memory=256 * MiB,
        disk=256 * MiB,
        created=now,
        modified=now,
    )
    config = JsonJobConfig(
        timeout=600, project=uuid.UUID(REPOSITORY), digest=digest, entrypoint=entrypoint
    )
    return JsonClaimedJob(
        uuid=uuid.uuid4(), spec=spec, config=config, oci_token=TOKEN, timeout=600,
        created=now, nonce="n",
    )  # fmt: skip


def pull_layout(tmp: Path, layer_mib: int) -> Layout:
    image = busybox_image()
    image.layers.append(gzip_bytes(tar_bytes([TarEntry("data.bin", os.urandom(layer_mib * MiB))])))
    return write_layout(tmp / "pull-layout", [image])


def bench_pull_local(tmp: Path, registry: LocalRegistry, runs: int, layout: Layout) -> None:
    registry.serve(layout)
    bench_pull(tmp, "loopback stdlib registry", registry.url, REPOSITORY, TOKEN, runs, layout)


def bench_pull_server(tmp: Path, runs: int, layout: Layout) -> None:
    directory = tmp / "deployment"
    directory.mkdir()
    database = f"sqlite:///{directory / 'benchrunner.db'}"
    with deploy(directory, database, heartbeat_timeout=600.0) as deployment:
        with deployment.admin() as client:
            project = str(client.get_project(deployment.project).uuid)
        host = deployment.server.url.removeprefix("http://")
        subprocess.run(
            ["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
             "--dest-creds", f"admin:{deployment.server.token}",
             f"oci:{layout.path}:{layout.tag}", f"docker://{host}/{project}:{layout.tag}"],
            check=True, capture_output=True,
        )  # fmt: skip
        channel = deployment.channel("puller")
        with deployment.admin() as client:
            client.run(
                {"project": deployment.project, "spec": deployment.spec, "image": layout.digest}
            )
        token = channel.claim()["oci_token"]
        bench_pull(tmp, "the server's /v2/", deployment.server.url, project, token, runs, layout)


def bench_pull(
    tmp: Path, source: str, url: str, repository: str, token: str, runs: int, layout: Layout
) -> None:
    size = sum(len(blob) for blob in layout.blobs.values()) / MiB

    def pull(cache: ImageCache) -> None:
        client = Registry(url, token)
        try:
            pulled = pull_image(
                client, cache, repository=repository, digest=layout.digest, architecture="x86_64"
            )
            cache.rootfs(pulled.manifest_digest, pulled.layers)
        finally:
            client.close()

    cold: list[float] = []
    warm: list[float] = []
    for run in range(runs):
        cache_dir = tmp / f"pull-cache-{run}"
        cache = ImageCache(cache_dir)
        for samples in (cold, warm):
            started = time.perf_counter()
            pull(cache)
            samples.append(time.perf_counter() - started)
        shutil.rmtree(cache_dir)
    print(f"pull cold from {source} ({size:.1f} MiB): {summary(cold)}")
    print(f"pull warm from {source} (cached): {summary(warm)}")


def bench_start(executor: SandboxExecutor, digest: str, runs: int) -> None:
    setups, starts, direct = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        prepared = executor.prepare(claimed(digest, ["/bin/true"]))
        setups.append(time.perf_counter() - started)
        try:
            starts.append(timed(lambda: prepared.run_iteration(0)))  # noqa: B023
        finally:
            prepared.cleanup()
        direct.append(timed(lambda: subprocess.run([str(BUSYBOX), "true"], check=True)))
    print(f"job setup (overlay, 256 MiB ext4):   {summary(setups)}")
    print(f"sandbox `true` iteration:          {summary(starts)}")
    print(f"direct `busybox true`:             {summary(direct)}")
    overhead = statistics.median(starts) - statistics.median(direct)
    print(f"start overhead:                    {overhead * 1000:.1f} ms")


def bench_cpu(executor: SandboxExecutor, digest: str, runs: int, loop: int, core: int) -> None:
    script = UPTIME_LOOP.format(n=loop)
    inside: list[float] = []
    outside: list[float] = []

    def elapsed(stdout: str) -> float:
        start, end = (float(value) for value in stdout.split())
        return end - start

    prepared = executor.prepare(claimed(digest, ["/bin/sh", "-c", script]))
    try:
        for index in range(runs):
            result = prepared.run_iteration(index)
            assert result.exit_code == 0, result.stderr
            inside.append(elapsed(result.stdout or ""))
            direct = subprocess.run(
                ["taskset", "-c", str(core), str(BUSYBOX), "sh", "-c", script],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            outside.append(elapsed(direct.stdout))
    finally:
        prepared.cleanup()
    print(f"cpu loop in sandbox (core {core}):   {summary(inside, 's')}")
    print(f"cpu loop direct (core {core}):       {summary(outside, 's')}")
    print("  sandbox samples: " + " ".join(f"{value:.2f}" for value in inside))
    print("  direct samples:  " + " ".join(f"{value:.2f}" for value in outside))
    ratio = statistics.median(inside) / statistics.median(outside) - 1
    print(f"sandbox vs direct, median wall:    {ratio:+.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--layer-mib", type=int, default=64)
    parser.add_argument("--loop", type=int, default=1_000_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name, local_registry() as registry:
        tmp = Path(name)
        layout = pull_layout(tmp, options.layer_mib)
        bench_pull_local(tmp, registry, options.runs, layout)
        bench_pull_server(tmp, options.runs, layout)
        layout = write_layout(tmp / "layout", [busybox_image()])
        registry.serve(layout)
        cores = CorePlan.detect()
        executor = SandboxExecutor(
            registry_url=lambda: registry.url, work_root=tmp / "sandbox", cores=cores
        )
        # As the runner does: its own threads off the job cores.
        cores.pin_to_housekeeping()
        bench_start(executor, layout.digest, options.runs)
        bench_cpu(executor, layout.digest, options.runs, options.loop, min(cores.job_cores))


if __name__ == "__main__":
    main()
