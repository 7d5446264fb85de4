"""Many runners on one server process (docs/decisions/channel.md).

Simulated runners are asyncio WebSocket clients speaking the channel protocol, spread over a few
client processes (``--clients``) so that the clients are not the bottleneck. One real server
process (``benchrunner server``) on a fresh SQLite file or PostgreSQL database.

``heartbeat`` mode: N runners (default 2,000) each claim a job, send ``running``, then heartbeat
at 1 Hz (each with its own phase). After a warm-up the window is measured: every heartbeat's
round trip until its ``ack`` (p50/p99), the server process's CPU (utime + stime from
``/proc/<pid>/stat`` over the window, as a fraction of one core) and its RSS.

``idle`` mode: N runners (default 10,000) connect and wait with ``ready`` (poll_timeout 900 s).
Server RSS is read before they connect and once all of them wait; the delta over N is the memory
per connected runner. Then N jobs are submitted and each runner must receive exactly one, every
job exactly once ("each woken correctly"); the wake-up latency from the job's submission to its
arrival at the runner is reported.

Runners and jobs are created through the public API, in parallel.

    .venv/bin/python -m benchmarks.many_runners [--mode heartbeat|idle] [--runners N]
        [--engine sqlite|postgresql] [--clients 4] [--seconds 30] [--repeat 3]
        [--before OLD_SRC] [--py-spy PREFIX]

``--before`` names the ``src`` directory of another checkout (e.g. a ``git worktree`` of the
code before the change): each repetition then runs the server from there and from this checkout,
alternately (the one that goes first alternating too), and both are printed side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import websockets
from tests.databases import fresh_database
from tests.harness import deploy

from benchmarks.queue_compare_benchrunner import Profile, py_spy
from benchmarks.server_env import UNCAPPED
from benchmarks.source_tree import admin_token, server_source
from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CONNECT_CONCURRENCY = 64
API_CONCURRENCY = 16


# ------------------------------------------------------------------ the server process


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE


def progress(what: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# ------------------------------------------------------------------ the API, in parallel


async def _parallel(count: int, make: Any) -> list[Any]:
    results: list[Any] = [None] * count
    next_index = iter(range(count))

    async def worker() -> None:
        for i in next_index:
            results[i] = await make(i)

    await asyncio.gather(*(worker() for _ in range(API_CONCURRENCY)))
    return results


async def _post(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], idempotency_key: str | None = None
) -> dict[str, Any]:
    """POST, retried when a kept-alive connection was closed under it (a retried runner creation
    may leave an unused runner behind; a job submission is idempotent by key)."""
    headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
    for attempt in range(5):
        try:
            reply = await client.post(path, json=body, headers=headers)
            return dict(reply.raise_for_status().json())
        except httpx.TransportError:
            if attempt == 4:
                raise
            await asyncio.sleep(0.5)
    raise AssertionError("unreachable")


async def create_runners(url: str, token: str, count: int) -> list[tuple[str, str]]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:

        async def make(i: int) -> tuple[str, str]:
            body = {"name": f"sim-{i}", "specs": ["small"]}
            created = await _post(client, "/v0/runners", body)
            return str(created["slug"]), str(created["token"])

        return await _parallel(count, make)


async def submit_jobs(url: str, token: str, count: int) -> list[tuple[str, float]]:
    """``count`` jobs; their UUIDs with the time each was accepted."""
    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "project": "bench",
        "spec": "small",
        "template": "bench.family",  # never executed; its 600 s limit outlasts the run
        "args": {"pidfile": "unused"},
        "settings": {"adapter": "json"},
    }
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:

        async def make(i: int) -> tuple[str, float]:
            reply = await _post(client, "/v0/run", body, idempotency_key=f"job-{i}")
            return str(reply["job"]), time.time()

        return await _parallel(count, make)


async def health(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        return dict((await client.get("/v0/server/health")).json())


# ------------------------------------------------------------------ client processes


class Clients:
    """Client processes (``--worker``), each holding a share of the runners; they talk to this
    process by lines on stdin and stdout."""

    def __init__(self, mode: str, ws_url: str, runners: list[tuple[str, str]], count: int) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        for i in range(count):
            share = runners[i::count]
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "benchmarks.many_runners", "--worker", mode, ws_url],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                )
            )
            assert self.procs[-1].stdin is not None
            self.procs[-1].stdin.write(json.dumps(share) + "\n")
            self.procs[-1].stdin.flush()

    def expect(self, word: str) -> None:
        for proc in self.procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != word:
                raise RuntimeError(f"client process said {line!r}, expected {word!r}")

    def finish(self, command: str) -> list[Any]:
        results = []
        for proc in self.procs:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(command + "\n")
            proc.stdin.flush()
        for proc in self.procs:
            assert proc.stdout is not None
            results.append(json.loads(proc.stdout.readline()))
            proc.wait(timeout=120)
        return results

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


async def _stdin_line() -> str:
    return await asyncio.to_thread(sys.stdin.readline)


async def _connect(ws_url: str, slug: str, token: str, gate: asyncio.Semaphore) -> Any:
    """Open a runner's channel, retried: under load a handshake may time out."""
    for attempt in range(10):
        try:
            async with gate:
                return await websockets.connect(
                    f"{ws_url}/v0/runners/{slug}/channel",
                    additional_headers={
                        "Authorization": f"Bearer {token}",
                        EXTENSIONS_HEADER: ", ".join(OUR_EXTENSIONS),  # template jobs included
                    },
                    open_timeout=60,
                    ping_interval=None,
                    max_queue=None,
                )
        except (OSError, TimeoutError, websockets.WebSocketException) as exc:
            if attempt == 9:
                raise
            print(f"runner {slug}: connecting failed ({exc!r}); again", file=sys.stderr)
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")


async def _claim(ws: Any) -> str:
    while True:
        await ws.send('{"event":"ready","poll_timeout":120}')
        message = json.loads(await ws.recv())
        if message["event"] == "job":
            await ws.send('{"event":"running"}')
            reply = json.loads(await ws.recv())
            assert reply["event"] == "ack", reply
            return str(message["uuid"])


async def heartbeat_worker(ws_url: str, runners: list[tuple[str, str]]) -> None:
    """Claim one job per runner, then heartbeat at 1 Hz until told ``stop T0``; answer the
    heartbeats sent since T0: (sent at, round trip in ms)."""
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    samples: list[tuple[float, float]] = []
    unexpected: list[str] = []
    stopping = asyncio.Event()
    claimed = 0
    sockets: list[Any] = []

    async def beat(slug: str, token: str) -> None:
        try:
            await _beat(slug, token)
        except Exception as exc:
            print(f"runner {slug} stopped: {exc!r}", file=sys.stderr, flush=True)
            raise

    async def _beat(slug: str, token: str) -> None:
        nonlocal claimed
        ws = await _connect(ws_url, slug, token, gate)
        sockets.append(ws)
        await _claim(ws)  # heartbeats start at once: the others may take a while to claim
        claimed += 1
        if claimed == len(runners):
            print("connected", flush=True)
        loop = asyncio.get_running_loop()
        tick = loop.time() + random.random()
        while not stopping.is_set():
            await asyncio.sleep(max(0.0, tick - loop.time()))
            sent_at, started = time.time(), time.perf_counter()
            await ws.send('{"event":"heartbeat"}')
            reply = json.loads(await ws.recv())
            samples.append((sent_at, (time.perf_counter() - started) * 1000))
            if reply["event"] != "ack":
                unexpected.append(reply["event"])
            tick = max(tick + 1.0, loop.time())

    beating = [asyncio.create_task(beat(slug, token)) for slug, token in runners]
    command = (await _stdin_line()).split()
    stopping.set()
    await asyncio.gather(*beating)
    t0 = float(command[1])
    window = [(sent, rtt) for sent, rtt in samples if t0 <= sent]
    print(json.dumps({"samples": window, "unexpected": unexpected}), flush=True)
    await asyncio.gather(*(ws.close() for ws in sockets))


async def idle_worker(ws_url: str, runners: list[tuple[str, str]]) -> None:
    """Connect every runner and wait with ``ready``; on ``stop``, answer which jobs each runner
    received and when."""
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    sockets = await asyncio.gather(*(_connect(ws_url, s, t, gate) for s, t in runners))
    for ws in sockets:
        await ws.send('{"event":"ready","poll_timeout":900}')
    print("connected", flush=True)
    received: dict[str, list[tuple[str, float]]] = {slug: [] for slug, _ in runners}

    async def wait(slug: str, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for frame in ws:
                message = json.loads(frame)
                if message["event"] == "job":
                    received[slug].append((str(message["uuid"]), time.time()))
                elif message["event"] == "no_job":
                    await ws.send('{"event":"ready","poll_timeout":900}')

    waiting = [
        asyncio.create_task(wait(slug, ws)) for (slug, _), ws in zip(runners, sockets, strict=True)
    ]
    await _stdin_line()
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    print(json.dumps(received), flush=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)


def worker(mode: str, ws_url: str) -> None:
    runners = [tuple(r) for r in json.loads(sys.stdin.readline())]
    run = heartbeat_worker if mode == "heartbeat" else idle_worker
    asyncio.run(run(ws_url, runners))


# ------------------------------------------------------------------ one measured run


@dataclass
class Figures:
    values: dict[str, float]
    notes: list[str]


@dataclass
class Deployed:
    deployment: Any
    pid: int
    """The server process's."""
    runners: list[tuple[str, str]]
    """The runners' slugs and keys, created through the API."""


@contextlib.contextmanager
def deployed(engine: str, runners: int, heartbeat_timeout: float) -> Iterator[Deployed]:
    """One server process on a fresh database with ``runners`` runners created."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_database(engine, Path(tmp)) as url,
        deploy(
            Path(tmp),
            url,
            heartbeat_timeout=heartbeat_timeout,
            job_timeout_grace=60.0,
            sweep_interval=10.0,  # the server's defaults: they set the heartbeat write interval
            max_connections=runners + 1000,
            env=UNCAPPED,
            token=admin_token(url),  # migrated by the code the server runs (``--before``)
        ) as deployment,
    ):
        server = deployment.server
        assert server.proc is not None
        slugs = asyncio.run(create_runners(server.url, server.token, runners))
        progress(f"{runners} runners created")
        yield Deployed(deployment, server.proc.pid, slugs)


def run_heartbeat(
    engine: str,
    runners: int,
    clients: int,
    seconds: float,
    windows: int,
    profile: Profile | None = None,
) -> list[Figures]:
    """One deployment; ``windows`` consecutive measured windows of ``seconds`` each, the
    server recorded with py-spy over them when ``profile`` is given."""
    with deployed(engine, runners, 90.0) as up:
        server, pid, slugs = up.deployment.server, up.pid, up.runners
        asyncio.run(submit_jobs(server.url, server.token, runners))
        progress(f"{runners} jobs submitted")
        group = Clients("heartbeat", server.ws_url, slugs, clients)
        try:
            group.expect("connected")
            progress("every runner heartbeats with a running job")
            time.sleep(5.0)  # warm-up: phases spread, caches filled
            marks = [(cpu_seconds(pid), time.time())]
            rss = []
            with py_spy(pid, profile):
                for _ in range(windows):
                    time.sleep(seconds)
                    marks.append((cpu_seconds(pid), time.time()))
                    rss.append(rss_bytes(pid))
            results = group.finish(f"stop {marks[0][1]}")
        finally:
            group.kill()
        state = asyncio.run(health(server.url))
    samples = [(sent, rtt) for r in results for sent, rtt in r["samples"]]
    unexpected = [e for r in results for e in r["unexpected"]]
    figures = []
    for (cpu0, t0), (cpu1, t1), rss_end in zip(marks[:-1], marks[1:], rss, strict=True):
        rtts = [rtt for sent, rtt in samples if t0 <= sent < t1]
        figures.append(
            Figures(
                {
                    "ack p50 ms": percentile(rtts, 0.50),
                    "ack p99 ms": percentile(rtts, 0.99),
                    "heartbeats/s": len(rtts) / (t1 - t0),
                    "server CPU (cores)": (cpu1 - cpu0) / (t1 - t0),
                    "server CPU µs/heartbeat": (cpu1 - cpu0) * 1e6 / max(1, len(rtts)),
                    "server RSS MiB": rss_end / 2**20,
                },
                [
                    f"replies other than ack: {len(unexpected)}",
                    f"queue at the end: {state['queue']}",
                ],
            )
        )
    return figures


def run_idle(engine: str, runners: int, clients: int) -> Figures:
    with deployed(engine, runners, 900.0) as up:
        server, pid, slugs = up.deployment.server, up.pid, up.runners
        rss0 = rss_bytes(pid)
        group = Clients("idle", server.ws_url, slugs, clients)
        try:
            group.expect("connected")
            progress("every runner connected")
            deadline = time.monotonic() + 300
            while asyncio.run(health(server.url))["waiting_runners"] < runners:
                if time.monotonic() > deadline:
                    raise RuntimeError("runners did not all wait within 300 s")
                time.sleep(0.5)
            rss1 = rss_bytes(pid)
            cpu0, t0 = cpu_seconds(pid), time.time()
            time.sleep(10)
            idle_cpu = (cpu_seconds(pid) - cpu0) / (time.time() - t0)
            progress("every runner waits")
            submitted = asyncio.run(submit_jobs(server.url, server.token, runners))
            progress(f"{runners} jobs submitted")
            deadline = time.monotonic() + 300
            while asyncio.run(health(server.url))["queue"].get("pending", 0) > 0:
                if time.monotonic() > deadline:
                    raise RuntimeError("jobs still pending after 300 s")
                time.sleep(0.5)
            time.sleep(2.0)  # the last claimed jobs reach their sockets
            results = group.finish("stop")
        finally:
            group.kill()
    received = {slug: jobs for part in results for slug, jobs in part.items()}
    accepted = dict(submitted)
    delivered = [uuid for jobs in received.values() for uuid, _ in jobs]
    woken = [
        (at - accepted[uuid]) * 1000
        for jobs in received.values()
        for uuid, at in jobs
        if uuid in accepted
    ]
    each_one = sum(1 for jobs in received.values() if len(jobs) == 1)
    correct = (
        each_one == runners
        and len(delivered) == len(set(delivered)) == runners
        and set(delivered) == set(accepted)
    )
    return Figures(
        {
            "server RSS before MiB": rss0 / 2**20,
            "server RSS waiting MiB": rss1 / 2**20,
            "KiB per connected runner": (rss1 - rss0) / runners / 1024,
            "idle server CPU (cores)": idle_cpu,
            "wake-up p50 ms": percentile(woken, 0.5) if woken else float("nan"),
            "wake-up p99 ms": percentile(woken, 0.99) if woken else float("nan"),
        },
        [
            f"runners with exactly one job: {each_one}/{runners}; jobs delivered "
            f"{len(delivered)} ({len(set(delivered))} distinct) of {runners}; "
            f"each woken correctly: {correct}"
        ],
    )


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "WS_URL"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["heartbeat", "idle"], default="heartbeat")
    parser.add_argument("--runners", type=int)
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=1, help="deployments per version")
    parser.add_argument("--windows", type=int, default=3, help="measured windows per deployment")
    parser.add_argument("--before", help="src directory of the code to compare with")
    parser.add_argument(
        "--py-spy",
        metavar="PREFIX",
        help="heartbeat mode: record the server with py-spy (raw stacks, only the thread "
        "holding the GIL) over the measured windows, to PREFIX-<version>-<engine>-r<N>.txt",
    )
    parser.add_argument("--py-spy-rate", type=int, default=100, help="samples per second (100)")
    options = parser.parse_args()
    if options.worker:
        worker(*options.worker)
        return
    runners = options.runners or (2000 if options.mode == "heartbeat" else 10_000)
    versions: list[tuple[str, str | None]] = [("after", None)]
    if options.before:
        versions.insert(0, ("before", options.before))
    collected: dict[str, list[Figures]] = {name: [] for name, _ in versions}
    for repetition in range(options.repeat):
        for name, src in versions if repetition % 2 == 0 else versions[::-1]:
            with server_source(src):
                if options.mode == "heartbeat":
                    profile = (
                        Profile(
                            Path(f"{options.py_spy}-{name}-{options.engine}-r{repetition + 1}.txt"),
                            options.py_spy_rate,
                            gil=True,
                        )
                        if options.py_spy
                        else None
                    )
                    runs = run_heartbeat(
                        options.engine,
                        runners,
                        options.clients,
                        options.seconds,
                        options.windows,
                        profile,
                    )
                else:
                    runs = [run_idle(options.engine, runners, options.clients)]
            for figures in runs:
                collected[name].append(figures)
                shown = ", ".join(f"{k} {v:.2f}" for k, v in figures.values.items())
                print(f"[{repetition + 1}] {name}: {shown}; {'; '.join(figures.notes)}", flush=True)
    count = len(collected[versions[0][0]])
    print(f"\n{options.mode}, {options.engine}, {runners} runners: medians of {count}")
    for key in collected[versions[0][0]][0].values:
        row = "  ".join(
            f"{name} {statistics.median(f.values[key] for f in collected[name]):9.2f}"
            for name, _ in versions
        )
        print(f"  {key:<26} {row}")


if __name__ == "__main__":
    main()
