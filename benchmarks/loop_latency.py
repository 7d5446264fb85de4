"""The event loop under a processing backlog (docs/decisions/processing.md): heartbeat acks while
the processor works through 10,000 completed jobs with 64 KiB outputs each.

Method. A backlog is built once per engine: 10,000 jobs are submitted through ``POST /v0/run``
(adapter ``go_bench``) to a real server, which is then stopped; each job is then claimed,
started and completed through the store's own transitions (``claims.job_claim``,
``moves.move.apply_running`` / ``moves.move.apply``) with a 64 KiB ``go test -bench``
output (log lines and 20 result lines) stored in the blob store as the server stores it. Each
run starts a server process on a copy of that database (the blob store is shared: processing
only reads it), whose startup recovery queues the 10,000 completed jobs for processing. At once
``--runners`` simulated runners (WebSocket clients in this process) connect, each takes a job
of its own spec that stays running, and heartbeats every ``--interval`` seconds, timing each
``heartbeat`` -> ``ack`` round trip, until no job is left ``completed``. A runner is timed out
when the server closes its channel (the heartbeat timeout is the test harness's 10 s).

``--code`` runs the server from another source tree (``PYTHONPATH``), e.g. a ``git worktree``
of the code before the change; runs alternate between the trees.

    .venv/bin/python -m benchmarks.loop_latency [--engine sqlite postgresql] [--repeat 3]
        [--jobs 10000] [--runners 64] [--code after=src before=/tmp/old/src]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import sqlalchemy as sa
import websockets
from psycopg import sql
from sqlalchemy.engine import Connection
from tests.databases import POSTGRES_ADMIN_URL, fresh_database
from tests.harness import HEARTBEAT_TIMEOUT, TEST_TEMPLATES, ServerProcess, wait_until
from websockets.exceptions import ConnectionClosed

from benchmarks.server_env import UNCAPPED
from benchrunner.core.states import JobStatus
from benchrunner.protocol import (
    EXTENSIONS_HEADER,
    OUR_EXTENSIONS,
    IterationResult,
    JsonJobOutput,
)
from benchrunner.server.blobs.blob_store import job_output_key
from benchrunner.server.moves.move import Move, apply, apply_running
from benchrunner.server.store import claims, jobs, runners
from benchrunner.server.store.engine import Database

TEMPLATES = (
    TEST_TEMPLATES
    + """
[templates."bench.hold"]
description = "A job the simulated runners keep running while they heartbeat"
command = ["python3", "-c", "import time; time.sleep(3600)"]
timeout = 3600
"""
)
RESULT_LINES = 20
OUTPUT_BYTES = 64 * 1024
CLAIM_CHUNK = 250


def go_test_output(seed: int) -> str:
    """About 64 KiB of ``go test -bench`` output: test log lines and ``RESULT_LINES`` results."""
    lines = ["goos: linux", "goarch: amd64", "pkg: example.com/bench", "cpu: Xeon"]
    size, i = 0, 0
    every = 1000 // RESULT_LINES
    while size < OUTPUT_BYTES - 200:
        if i % every == 0 and i // every < RESULT_LINES:
            line = (
                f"BenchmarkCase{i // every}-8 \t 123456\t {1000 + seed % 97 + i}.5 ns/op\t 2 B/op"
            )
        else:
            line = f"=== RUN   TestSomething{i}/subcase_{i}   log line {i} of job {seed} here"
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join([*lines, "PASS", "ok  \texample.com/bench\t12.345s"])


@dataclass
class Backlog:
    """A built backlog: its database (to copy), data directory and credentials."""

    url: str
    data_dir: Path
    templates: Path
    token: str
    runners: list[tuple[str, str]]


async def _submit(url: str, token: str, bodies: list[dict[str, object]]) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    queue: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            (await client.post("/v0/run", json=queue.get_nowait())).raise_for_status()

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        await asyncio.gather(*(worker(client) for _ in range(8)))


def _complete_all(url: str, blobs: Path, runner_slug: str) -> int:
    """Claim, start and complete every pending job the runner may take, its output stored."""
    db = Database(url)
    found = db.read_sync(runners.runner_get, runner_slug)
    assert found is not None
    runner_id = found.id
    made = 0

    def chunk(conn: Connection) -> list[jobs.JobRow]:
        done: list[jobs.JobRow] = []
        for _ in range(CLAIM_CHUNK):
            stamp = _now()
            claim = claims.job_claim(conn, runner_id, "backlog", stamp, runner_slug)
            if claim is None:
                break
            assert apply_running(conn, Move.running(claim.job, runner_id, runner_slug, stamp))
            done.append(claim.job)
        return done

    try:
        while batch := db.write_sync(chunk):
            for job in batch:
                output = JsonJobOutput(
                    results=[IterationResult(exit_code=0, stdout=go_test_output(made))]
                )
                # The server's layout without its fsyncs: setup, not what is measured.
                path = blobs / job_output_key(job.project_uuid, job.uuid)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(output.model_dump_json(exclude_none=True).encode())
                made += 1

            def complete(conn: Connection, batch: list[jobs.JobRow] = batch) -> None:
                for job in batch:
                    completed = Move(job, JobStatus.COMPLETED, _now(), "completed", runner_slug)
                    assert apply(conn, completed)

            db.write_sync(complete)
    finally:
        db.close()
    return made


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def build(tmp: Path, url: str, count: int, runner_count: int) -> Backlog:
    templates = tmp / "templates.toml"
    templates.write_text(TEMPLATES)
    data = tmp / "build"
    data.mkdir()
    server = ServerProcess(
        data, templates, url, heartbeat_timeout=HEARTBEAT_TIMEOUT, env=UNCAPPED
    ).start()
    try:
        with server.client() as client:
            client.create_organization("acme", "team")
            client.create_project("acme", "bench", "public")
            for spec in ("small", "hold"):
                client.create_spec(
                    name=spec,
                    architecture="x86_64",
                    cpu=1,
                    memory=1 << 30,
                    disk=1 << 30,
                    network=False,
                )
            backlog_runner = client.create_runner("backlog", ["small"])
            held = [client.create_runner(f"hb-{i}", ["hold"]) for i in range(runner_count)]
        work: dict[str, object] = {
            "project": "bench",
            "spec": "small",
            "template": "bench.noop",
            "settings": {"adapter": "go_bench"},
        }
        hold: dict[str, object] = {
            "project": "bench",
            "spec": "hold",
            "template": "bench.hold",
            "settings": {"adapter": "json"},
        }
        asyncio.run(_submit(server.url, server.token, [work] * count + [hold] * runner_count))
    finally:
        server.kill(signal.SIGTERM)
    submitted = time.perf_counter()
    made = _complete_all(url, data / "blobs", str(backlog_runner.slug))
    print(f"  submitted, then completed in {time.perf_counter() - submitted:.0f} s", flush=True)
    assert made == count, (made, count)
    return Backlog(
        url,
        data,
        templates,
        server.token,
        [(str(r.slug), str(r.token)) for r in held],
    )


@contextlib.contextmanager
def copy_of(backlog: Backlog, tmp: Path, name: str) -> Iterator[tuple[str, Path]]:
    """A copy of the backlog's database and data directory (its blob store linked, not
    copied)."""
    data = tmp / name
    data.mkdir()
    for item in backlog.data_dir.iterdir():
        if item.name == "blobs":
            (data / "blobs").symlink_to(item)
        elif item.is_file() and not item.name.endswith(".log"):
            shutil.copy2(item, data / item.name)
    parsed = sa.make_url(backlog.url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        source = Path(parsed.database)
        target = tmp / f"{name}.db"
        for suffix in ("", "-wal"):
            if Path(f"{source}{suffix}").exists():
                shutil.copy2(f"{source}{suffix}", f"{target}{suffix}")
        yield f"sqlite:///{target}", data
        return
    copy = f"benchrunner_loop_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(copy), sql.Identifier(str(parsed.database))
            )
        )
    try:
        yield parsed.set(database=copy).render_as_string(hide_password=False), data
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(copy)))


@dataclass
class Figures:
    rtts: list[float]
    timed_out: int
    unconnected: int
    seconds: float

    def line(self, jobs_count: int) -> str:
        return (
            f"heartbeat ack p50 {_pct(self, 0.5) * 1000:6.1f} ms, "
            f"p99 {_pct(self, 0.99) * 1000:6.1f} ms, max {_pct(self, 1.0) * 1000:6.1f} ms "
            f"({len(self.rtts)} acks), timed out {self.timed_out}, could not connect "
            f"{self.unconnected}; backlog processed in "
            f"{self.seconds:5.1f} s ({jobs_count / self.seconds:5.0f} jobs/s)"
        )


async def heartbeater(
    url: str, token: str, interval: float, stop: asyncio.Event, rtts: list[float]
) -> str:
    """Take a job, keep it running and heartbeat. Returns ``timed out`` when the server closed
    the channel for the heartbeat timeout, ``unconnected`` when the server did not complete
    the WebSocket handshake within 10 s (websockets' default), else ``ok``."""
    # Our extensions announced: the held jobs are template jobs.
    headers = {"Authorization": f"Bearer {token}", EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS)}
    try:
        async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
            await ws.send(json.dumps({"event": "ready", "poll_timeout": 30}))
            job = json.loads(await ws.recv())
            assert job["event"] == "job", job
            await ws.send('{"event":"running"}')
            assert json.loads(await ws.recv())["event"] == "ack"
            next_beat = time.monotonic()
            while not stop.is_set():
                next_beat += interval
                await asyncio.sleep(max(0.0, next_beat - time.monotonic()))
                sent = time.perf_counter()
                await ws.send('{"event":"heartbeat"}')
                reply = json.loads(await ws.recv())
                rtts.append(time.perf_counter() - sent)
                assert reply["event"] == "ack", reply
    except ConnectionClosed as exc:
        return "timed out" if exc.rcvd is not None and exc.rcvd.code == 4000 else "closed"
    except TimeoutError:
        return "unconnected"
    return "ok"


async def drained(url: str) -> None:
    """Until no job is left ``completed``."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while True:
            if not (await client.get("/v0/server/health")).json()["queue"]["completed"]:
                return
            await asyncio.sleep(0.5)


async def watch(server: ServerProcess, backlog: Backlog, interval: float) -> Figures:
    started = time.perf_counter()
    stop = asyncio.Event()
    rtts: list[float] = []
    tasks = [
        asyncio.create_task(
            heartbeater(f"{server.ws_url}/v0/runners/{slug}/channel", token, interval, stop, rtts)
        )
        for slug, token in backlog.runners
    ]
    await drained(server.url)
    seconds = time.perf_counter() - started
    stop.set()
    ends = await asyncio.gather(*tasks)
    return Figures(rtts, ends.count("timed out"), ends.count("unconnected"), seconds)


def run_once(backlog: Backlog, tmp: Path, name: str, code: Path, interval: float) -> Figures:
    with copy_of(backlog, tmp, name) as (url, data):
        os.environ["PYTHONPATH"] = str(code)
        try:
            server = ServerProcess(
                data, backlog.templates, url, heartbeat_timeout=HEARTBEAT_TIMEOUT, name=name
            )
            server.token = backlog.token
            try:
                server.start()
            except AssertionError:
                # Startup recovery queued the backlog at once: a server that processes on its
                # loop may answer no health check for longer than the harness waits.
                wait_until(server._healthy, timeout=600, message=f"{name} healthy")
        finally:
            os.environ.pop("PYTHONPATH", None)
        try:
            return asyncio.run(watch(server, backlog, interval))
        finally:
            server.kill(signal.SIGTERM)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", nargs="+", choices=["sqlite", "postgresql"])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--runners", type=int, default=64)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--code", nargs="+", default=["this=src"], help="label=source tree, e.g. before=/tmp/x"
    )
    options = parser.parse_args()
    trees = [
        (label, Path(path).resolve()) for label, path in (c.split("=", 1) for c in options.code)
    ]
    for engine in options.engine or ["sqlite", "postgresql"]:
        with (
            tempfile.TemporaryDirectory() as tmp_name,
            fresh_database(engine, Path(tmp_name)) as url,
        ):
            tmp = Path(tmp_name)
            started = time.perf_counter()
            backlog = build(tmp, url, options.jobs, options.runners)
            took = time.perf_counter() - started
            print(f"{engine}: backlog of {options.jobs} jobs built in {took:.0f} s", flush=True)
            results: dict[str, list[Figures]] = {label: [] for label, _ in trees}
            for attempt in range(options.repeat):
                for label, code in trees:
                    figures = run_once(backlog, tmp, f"{label}-{attempt}", code, options.interval)
                    results[label].append(figures)
                    print(
                        f"  {engine} {label} run {attempt + 1}: {figures.line(options.jobs)}",
                        flush=True,
                    )
            for label, runs in results.items():
                median = sorted(runs, key=_p99)[len(runs) // 2]
                print(f"{engine} {label}, run with the median p99: {median.line(options.jobs)}")
                print(
                    f"{engine} {label}, medians: "
                    f"p50 {statistics.median(_pct(r, 0.5) for r in runs) * 1000:.1f} ms, "
                    f"p99 {statistics.median(_p99(r) for r in runs) * 1000:.1f} ms, "
                    f"max {statistics.median(_pct(r, 1.0) for r in runs) * 1000:.1f} ms, "
                    f"timed out {statistics.median(r.timed_out for r in runs)}, "
                    f"could not connect {statistics.median(r.unconnected for r in runs)}, "
                    f"{statistics.median(options.jobs / r.seconds for r in runs):.0f} jobs/s"
                )


def _pct(figures: Figures, q: float) -> float:
    ordered = sorted(figures.rtts)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _p99(figures: Figures) -> float:
    return _pct(figures, 0.99)


if __name__ == "__main__":
    main()
