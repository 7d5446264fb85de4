"""End-to-end throughput: no-op template jobs from pending to ``processed``.

Real server processes; N runner connections (asyncio WebSocket clients in this process that
answer each job at once, so the figure is the server's: claim, running, stored output,
completion, processing). Jobs are submitted first; the clock runs from the moment the runners
connect until every job is ``processed``. With ``--replicas 2`` (PostgreSQL) the runners are
split evenly over two replicas of one database.

    .venv/bin/python -m benchmarks.throughput [--jobs 2000] [--runners 1 8 32]
        [--engine sqlite|postgresql] [--replicas 1|2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import httpx
import sqlalchemy as sa
import websockets
from tests.databases import fresh_database
from tests.harness import Deployment, ServerProcess, deploy
from websockets.asyncio.client import ClientConnection

from benchmarks.cpu_time import backends_cpu, process_cpu_seconds
from benchmarks.server_env import UNCAPPED
from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS

RESULT = [{"exit_code": 0, "stdout": json.dumps({"noop": {"latency": {"value": 0}}})}]


async def runner(url: str, token: str, stop: asyncio.Event) -> int:
    done = 0
    async with websockets.connect(
        url,
        additional_headers={
            "Authorization": f"Bearer {token}",
            EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS),  # template jobs included
        },
    ) as ws:
        while not stop.is_set():
            await ws.send(json.dumps({"event": "ready", "poll_timeout": 1}))
            message = json.loads(await ws.recv())
            if message["event"] != "job":
                continue
            await answer_job(ws, message["uuid"])
            done += 1
    return done


async def answer_job(ws: ClientConnection, job_uuid: str, log_line: str | None = None) -> None:
    """A runner's part of a job, at once: ``running``, then ``completed`` with ``RESULT``,
    each awaited until the server answers it; with ``log_line``, a ``log`` chunk of it on
    stdout before ``completed`` (as a job that prints a line), which the server does not
    answer."""
    await ws.send('{"event":"running"}')
    await ws.recv()
    if log_line is not None:
        chunk = {"event": "log", "job": job_uuid, "stream": "stdout", "offset": 0}
        await ws.send(json.dumps({**chunk, "data": log_line}))
    await ws.send(json.dumps({"event": "completed", "job": job_uuid, "results": RESULT}))
    await ws.recv()


async def submit(
    deployment: Deployment, servers: list[ServerProcess], count: int
) -> tuple[float, float]:
    """Submissions/s, and the servers' CPU ms per submission over the submissions alone."""
    headers = {"Authorization": f"Bearer {deployment.server.token}"}
    body = {
        "project": "bench",
        "spec": "small",
        "template": "bench.noop",
        "settings": {"adapter": "json"},
    }
    async with httpx.AsyncClient(base_url=deployment.server.url, headers=headers) as client:
        (await client.post("/v0/run", json=body)).raise_for_status()  # warm: not counted
        cpu_before = servers_cpu_seconds(servers)
        started = time.perf_counter()
        for _ in range(count - 1):
            (await client.post("/v0/run", json=body)).raise_for_status()
        elapsed = time.perf_counter() - started
        cpu = servers_cpu_seconds(servers) - cpu_before
    return (count - 1) / elapsed, 1000 * cpu / (count - 1)


async def drained(deployment: Deployment) -> None:
    async with httpx.AsyncClient(base_url=deployment.server.url) as client:
        while True:
            queue = (await client.get("/v0/server/health")).json()["queue"]
            if not any(queue.values()):
                return
            await asyncio.sleep(0.1)  # polling costs the server CPU too: not too often


def servers_cpu_seconds(servers: list[ServerProcess]) -> float:
    return sum(process_cpu_seconds(s.proc.pid) for s in servers if s.proc is not None)


async def measure(
    deployment: Deployment,
    servers: list[ServerProcess],
    jobs: int,
    connections: int,
    database: str | None,
) -> tuple[float, tuple[float, float], tuple[float, float]]:
    """Jobs/s through processed, submissions/s with the servers' CPU ms per submission, and
    CPU ms per job (the servers, and the PostgreSQL backends of ``database``) over submission
    and execution together."""
    with backends_cpu(database) as backends:
        server_before = servers_cpu_seconds(servers)
        rate, submission = await _run(deployment, servers, jobs, connections)
        server_cpu = servers_cpu_seconds(servers) - server_before
    database_cpu = backends[0] if backends else 0.0
    return rate, submission, (1000 * server_cpu / jobs, 1000 * database_cpu / jobs)


async def _run(
    deployment: Deployment, servers: list[ServerProcess], jobs: int, connections: int
) -> tuple[float, tuple[float, float]]:
    submission = await submit(deployment, servers, jobs)
    tokens = [deployment.new_runner(f"bench-{connections}-{i}") for i in range(connections)]
    stop = asyncio.Event()
    started = time.perf_counter()
    tasks = [
        asyncio.create_task(
            runner(f"{servers[i % len(servers)].ws_url}/v0/runners/{slug}/channel", token, stop)
        )
        for i, (slug, token) in enumerate(tokens)
    ]
    await drained(deployment)
    elapsed = time.perf_counter() - started
    stop.set()
    executed = sum(await asyncio.gather(*tasks))
    assert executed == jobs, (executed, jobs)
    return jobs / elapsed, submission


def database_name(url: str) -> str | None:
    """The PostgreSQL database whose backends are charged to the run; None on SQLite."""
    parsed = sa.make_url(url)
    return parsed.database if parsed.get_backend_name() == "postgresql" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--replicas", type=int, choices=[1, 2], default=1)
    options = parser.parse_args()
    if options.replicas == 2 and options.engine != "postgresql":
        parser.error("two replicas need --engine postgresql")
    for connections in options.runners:
        with (
            tempfile.TemporaryDirectory() as tmp,
            fresh_database(options.engine, Path(tmp)) as url,
            deploy(Path(tmp), url, heartbeat_timeout=60.0, env=UNCAPPED) as deployment,
        ):
            servers = [deployment.server]
            if options.replicas == 2:
                servers.append(deployment.add_replica("replica-b"))
            rate, (submit_rate, submit_ms), (server_ms, postgres_ms) = asyncio.run(
                measure(deployment, servers, options.jobs, connections, database_name(url))
            )
            database_cpu = f", PostgreSQL {postgres_ms:.2f}" if options.engine != "sqlite" else ""
            print(
                f"{options.engine}, {options.replicas} replica(s), "
                f"{connections:>3} runner connections: {rate:7.1f} jobs/s through processed "
                f"({options.jobs} jobs; submission alone {submit_rate:.0f} jobs/s, "
                f"server {submit_ms:.2f} ms CPU each; "
                f"CPU per job: server {server_ms:.2f} ms{database_cpu})"
            )


if __name__ == "__main__":
    main()
