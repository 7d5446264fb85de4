"""The benchrunner side of queue_compare: a real server, and real runner agents or channels.

The server is started as the system tests start it (``tests.harness``), on a fresh database,
with its submission caps on and raised to fit the run, as an operator expecting such a burst
would set them. By ``mode``:

- ``job``: ``benchrunner runner up`` agents (process executor) run template ``bench.clock_file``:
  ``date`` writes the wall clock at its start, as a metric, to a file named in the job's
  arguments and to its output. The pickup phase watches that file, as Procrastinate's side
  watches its task's, so no request or query competes with the pickup being measured.
- ``queue``: the queue alone. Each worker is a channel connection in this process that answers
  a job at once (``running``, then ``completed`` with no results): no process per job, no metric;
  the pickup is the moment the ``job`` message arrives.
- ``long``: the agents run template ``bench.long``, a job of ``seconds`` that prints a line a
  second (a live log) and heartbeats throughout; figures are CPU per job-minute.

Every job's stored output is checked after the throughput phase: a row of ``job_output`` when
small, else a blob under the server's data directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import operator
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from tests.databases import fresh_database
from tests.harness import Deployment, RunnerProcess, deploy, wait_until
from websockets.exceptions import ConnectionClosed

from benchmarks.cpu_time import backends_cpu, process_cpu_seconds
from benchmarks.queue_figures import Figures, percentile
from benchmarks.server_env import caps_for
from benchmarks.source_tree import admin_token
from benchrunner.server.store import tables
from benchrunner.server.store.queue_stats import queue_stats

MODES = ("job", "queue", "long")
TEMPLATES = {"job": "bench.clock_file", "queue": "bench.noop", "long": "bench.long"}
IDLE_PAUSE = 0.05
"""Between pickup samples, after the previous job is done: every worker is back waiting."""
CLOCK_POLL = 0.002
"""How often the pickup phase looks for a job's clock file: Procrastinate's side looks as often."""


class Api:
    """A lean stdlib HTTP client (keep-alive), so the figures are the server's."""

    def __init__(self, deployment: Deployment, template: str, clocks: Path | None = None) -> None:
        self.clocks = clocks
        self.submitted = 0
        self.http = HTTPConnection("127.0.0.1", deployment.server.port, timeout=60)
        self.project_uuid = ""
        self.headers = {
            "Authorization": f"Bearer {deployment.server.token}",
            "Content-Type": "application/json",
        }
        self.body = {
            "project": deployment.project,
            "spec": deployment.spec,
            "template": template,
            "settings": {"adapter": "json"},
        }

    def next_clock_file(self) -> Path:
        """Where the next ``bench.clock_file`` job is to write its start clock."""
        assert self.clocks is not None
        return self.clocks / f"{self.submitted}.json"

    def submit(self, args: dict[str, Any] | None = None) -> str:
        """A job; with ``clocks``, one that writes its start clock to ``next_clock_file()``."""
        if self.clocks is not None:
            args = {**(args or {}), "file": str(self.next_clock_file())}
        self.submitted += 1
        body = json.dumps({**self.body, "args": args} if args else self.body)
        self.http.request("POST", "/v0/run", body, self.headers)
        response = self.http.getresponse()
        payload = response.read()
        if response.status not in (200, 201):
            raise SystemExit(f"POST /v0/run answered {response.status}: {payload[:500]!r}")
        report = json.loads(payload)
        self.project_uuid = str(report["project"]["uuid"])
        return str(report["job"])

    def health(self) -> dict[str, Any]:
        self.http.request("GET", "/v0/server/health")
        return json.loads(self.http.getresponse().read())  # type: ignore[no-any-return]


def all_processed(api: Api, workers: int | None = None) -> bool:
    """No job pending, claimed, running or completed-but-unprocessed; with ``workers``, also
    that many runners waiting for work."""
    health = api.health()
    if any(health["queue"].values()):
        return False
    return workers is None or health["waiting_runners"] == workers


class StoredOutputs:
    """The jobs' stored outputs, read from the database and the blob store directly (not
    through the server, whose figures are measured)."""

    def __init__(self, url: str, data_dir: Path) -> None:
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        self.data_dir = data_dir
        self.in_rows = sa.inspect(self.engine).has_table("job_output")
        self.project_uuid = ""

    def close(self) -> None:
        self.engine.dispose()

    def _blob(self, job: str) -> Path:
        return self.data_dir / "blobs" / self.project_uuid / "output" / "v0" / "jobs" / job

    def stored(self, job: str) -> bool:
        if self._blob(job).exists():
            return True
        if not self.in_rows:
            return False
        query = (
            sa.select(tables.job_output.c.job_id)
            .join(tables.job, tables.job.c.id == tables.job_output.c.job_id)
            .where(tables.job.c.uuid == UUID(job))
        )
        with self.engine.connect() as conn:
            return conn.execute(query).first() is not None

    def all(self) -> dict[str, bytes]:
        """Job UUID -> its stored output, of every job."""
        found = {path.name: path.read_bytes() for path in self.data_dir.glob("**/output/v0/jobs/*")}
        if self.in_rows:
            query = sa.select(tables.job.c.uuid, tables.job_output.c.data).join(
                tables.job, tables.job.c.id == tables.job_output.c.job_id
            )
            with self.engine.connect() as conn:
                found.update((str(row.uuid), bytes(row.data)) for row in conn.execute(query))
        return found

    def started_clocks(self) -> dict[str, int]:
        """Job UUID -> the wall clock (ns) its ``date`` printed, from every stored output."""
        clocks: dict[str, int] = {}
        for job, data in self.all().items():
            results = json.loads(data)["results"]
            clocks[job] = json.loads(results[0]["stdout"])["clock"]["started_ns"]["value"]
        return clocks


def pickups(enqueued: dict[str, int], clocks: dict[str, int]) -> list[float]:
    missing = sorted(set(enqueued) - set(clocks))
    if missing:
        raise SystemExit(f"{len(missing)} job(s) have no start clock, e.g. {missing[0]}")
    return [(clocks[job] - at) / 1e6 for job, at in enqueued.items()]


def clock_of(path: Path) -> int | None:
    """The start clock (ns) a ``bench.clock_file`` job wrote to ``path``, once it is whole."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    if not text.endswith("\n"):
        return None
    return int(json.loads(text)["clock"]["started_ns"]["value"])


def pickup_phase(api: Api, workers: int, samples: int, warmup: int) -> dict[str, int]:
    """One job at a time, each submitted with every worker idle; job -> pickup (ns).

    Until the job has written its clock file only that file is watched, so that no request to
    the server and no query competes with the pickup being measured.
    """
    picked: dict[str, int] = {}
    for index in range(warmup + samples):
        clock_file = api.next_clock_file()
        before = time.time_ns()
        job = api.submit()
        started = wait_until(
            functools.partial(clock_of, clock_file),
            timeout=120 if index == 0 else 60,
            interval=CLOCK_POLL,
            message=f"start clock of job {job}",
        )
        if index >= warmup:
            picked[job] = started - before
        wait_until(
            lambda: all_processed(api, workers),
            timeout=60 if index else 120,
            interval=0.01,
            message=f"job {job} processed and {workers} runner(s) waiting",
        )
        time.sleep(IDLE_PAUSE)
    return picked


class AnsweringChannels:
    """``count`` channel connections that each answer a job at once (``running``, then
    ``completed`` with no results), in threads of this process: workers with no process per job
    and no metric. Each keeps when its ``job`` messages arrived and its own threads' CPU time."""

    def __init__(self, deployment: Deployment, count: int) -> None:
        self.channels = [deployment.channel(f"worker-{i}") for i in range(count)]
        self.arrived: dict[str, int] = {}
        self.cpu_seconds = [0.0] * count
        self.threads = [
            threading.Thread(target=self._serve, args=(i,), daemon=True) for i in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def _serve(self, index: int) -> None:
        channel = self.channels[index]
        with contextlib.suppress(ConnectionClosed, OSError):
            while True:
                before = time.thread_time()
                message = channel.ask({"event": "ready", "poll_timeout": 900}, timeout=900)
                self.arrived[message["uuid"]] = time.time_ns()
                channel.ask({"event": "running"})
                channel.ask({"event": "completed", "job": message["uuid"], "results": []})
                self.cpu_seconds[index] += time.thread_time() - before

    def close(self) -> None:
        for channel in self.channels:
            channel.close()
        for thread in self.threads:
            thread.join(timeout=30)


def queue_pickup_phase(
    api: Api, workers: int, samples: int, warmup: int, channels: AnsweringChannels
) -> dict[str, int]:
    """As ``pickup_phase``, the pickup being when the job reached a waiting channel."""
    picked: dict[str, int] = {}
    for index in range(warmup + samples):
        before = time.time_ns()
        job = api.submit()
        wait_until(
            functools.partial(operator.contains, channels.arrived, job),
            timeout=120 if index == 0 else 60,
            interval=CLOCK_POLL,
            message=f"job {job} at a channel",
        )
        if index >= warmup:
            picked[job] = channels.arrived[job] - before
        wait_until(
            lambda: all_processed(api, workers),
            timeout=60 if index else 120,
            interval=0.01,
            message=f"job {job} processed and {workers} channel(s) waiting",
        )
        time.sleep(IDLE_PAUSE)
    return picked


@dataclasses.dataclass(frozen=True)
class Profile:
    """Where py-spy writes the server's raw stacks, its samples per second, and whether it
    samples only the thread holding the GIL (``--gil``: the Python work, without threads
    waiting on a socket or a lock)."""

    output: Path
    rate: int
    gil: bool = False

    def of_runner(self, index: int) -> Profile:
        """Where the ``index``-th runner agent's stacks go, beside the server's."""
        return dataclasses.replace(
            self, output=self.output.with_name(f"{self.output.stem}-runner{index}.txt")
        )


@contextlib.contextmanager
def py_spy(pid: int, profile: Profile | None) -> Iterator[None]:
    """Sample ``pid`` with py-spy (raw collapsed stacks) over the block, when asked; without
    pausing it for each sample (``--nonblocking``), which on PostgreSQL, with its database
    threads, slowed the server several times over."""
    if profile is None:
        yield
        return
    spy = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("py-spy")),
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--output",
            str(profile.output),
            "--rate",
            str(profile.rate),
            "--nonblocking",
            *(["--gil"] if profile.gil else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)


Deployed = tuple[str, Deployment, list[RunnerProcess], Api]
"""The database's URL, the deployment, its runner agents (none in ``queue`` mode) and a client."""


@contextlib.contextmanager
def deployed(
    engine: str, workers: int, mode: str, jobs: int, sweep_interval: float | None = None
) -> Iterator[Deployed]:
    """A fresh database of ``engine``, a server on it with its caps raised for ``jobs``, and a
    client; with ``workers`` runner agents, once every runner waits for work, except in
    ``queue`` mode, whose channels the caller opens. ``sweep_interval``: the server's (None:
    the test harness's, 0.5 s)."""
    cadence = {} if sweep_interval is None else {"sweep_interval": sweep_interval}
    with (
        tempfile.TemporaryDirectory(prefix="queue-compare-") as tmp,
        fresh_database(engine, Path(tmp)) as url,
        deploy(
            Path(tmp),
            url,
            heartbeat_timeout=60.0,
            env=caps_for(jobs),
            token=admin_token(url),
            **cadence,
        ) as deployment,
    ):
        # The noise guard's calibrations (a benchmark runner's own feature, about 18 ms of the
        # job core per job) are not queue work: Procrastinate's workers do nothing like it.
        runners = (
            []
            if mode == "queue"
            else [
                deployment.runner_process(f"worker-{i}", BENCHRUNNER_NOISE_GUARD="false").start()
                for i in range(workers)
            ]
        )
        clocks = Path(tmp) / "clocks"
        clocks.mkdir()
        api = Api(deployment, TEMPLATES[mode], clocks if mode == "job" else None)
        if runners:
            wait_until(
                lambda: api.health()["waiting_runners"] == workers,
                timeout=60,
                message=f"{workers} runner(s) waiting",
            )
        yield url, deployment, runners, api


@contextlib.contextmanager
def database_watch(url: str) -> Iterator[Connection]:
    """One connection to the run's database, for ``submit_and_drain``: opened before the
    measured phase, as Procrastinate's side opens its own."""
    engine = sa.create_engine(url, poolclass=sa.pool.StaticPool)
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def submit_and_drain(
    api: Api,
    watch: Connection,
    jobs: int,
    args: dict[str, Any] | None = None,
    poll_interval: float = 0.1,
) -> list[str]:
    """``jobs`` jobs submitted one call after another, then waited for until every job is
    processed; their UUIDs. The wait reads the database on ``watch`` (``database_watch``)
    every ``poll_interval`` seconds, as Procrastinate's side reads its own: asking the server
    would add the health check's work (a new SQLite connection, counts of the queue) to the
    server's CPU measured."""
    submitted = [api.submit(args) for _ in range(jobs)]

    def finished() -> bool:
        queue = queue_stats(watch).by_status()  # what the health check would answer
        watch.rollback()  # a fresh snapshot at the next read
        return not any(queue.values())

    wait_until(
        finished,
        timeout=max(600.0, jobs / 2),
        interval=poll_interval,
        message=f"{jobs} jobs processed",
    )
    return submitted


@dataclasses.dataclass(frozen=True)
class Usage:
    """CPU seconds over one phase: the server, every PostgreSQL process working for the run's
    database (None on SQLite), and the workers."""

    server: float
    database: float | None
    workers: float


@contextlib.contextmanager
def usage(
    server_pid: int,
    worker_pids: list[int],
    database: str | None,
    profile: Profile | None,
    into: list[Usage],
) -> Iterator[None]:
    """Measure the block's CPU into ``into``; with ``profile``, record py-spy stacks too."""
    server_before = process_cpu_seconds(server_pid)
    workers_before = sum(process_cpu_seconds(pid) for pid in worker_pids)
    with contextlib.ExitStack() as recording:
        database_cpu = recording.enter_context(backends_cpu(database, every_process=True))
        recording.enter_context(py_spy(server_pid, profile))
        for index, pid in enumerate(worker_pids):
            recording.enter_context(py_spy(pid, profile and profile.of_runner(index)))
        yield
    into.append(
        Usage(
            server=process_cpu_seconds(server_pid) - server_before,
            database=database_cpu[0] if database_cpu else None,
            workers=sum(process_cpu_seconds(pid) for pid in worker_pids) - workers_before,
        )
    )


def run(
    engine: str,
    workers: int,
    jobs: int,
    samples: int,
    warmup: int,
    profile: Profile | None,
    mode: str = "job",
    sweep_interval: float | None = None,
) -> Figures:
    """One measurement: a fresh database, a server, ``workers`` workers of ``mode``; the pickup
    phase, then ``jobs`` jobs submitted while the workers run; ``sweep_interval`` as
    ``deployed``'s."""
    with deployed(engine, workers, mode, jobs + samples + warmup, sweep_interval) as (
        url,
        deployment,
        runners,
        api,
    ):
        server = deployment.server.proc
        assert server is not None
        database = sa.make_url(url).database if engine == "postgresql" else None
        pids = [r.proc.pid for r in runners if r.proc is not None]
        measured: list[Usage] = []
        channels = AnsweringChannels(deployment, workers) if mode == "queue" else None
        try:
            if channels is not None:
                picked = queue_pickup_phase(api, workers, samples, warmup, channels)
                cpu_before = sum(channels.cpu_seconds)
            else:
                picked = pickup_phase(api, workers, samples, warmup)
            pickup = [ns / 1e6 for ns in picked.values()]
            with (
                database_watch(url) as watch,
                usage(server.pid, pids, database, profile, measured),
            ):
                started = time.perf_counter()
                submitted = submit_and_drain(api, watch, jobs)
                elapsed = time.perf_counter() - started
            worker_cpu = measured[0].workers
            if channels is not None:
                worker_cpu = sum(channels.cpu_seconds) - cpu_before
        finally:
            if channels is not None:
                channels.close()
        outputs = StoredOutputs(url, deployment.server.data_dir)
        outputs.project_uuid = api.project_uuid
        lost = [job for job in submitted if not outputs.stored(job)]
        outputs.close()
        if lost and mode != "queue":
            raise SystemExit(f"{len(lost)} of {jobs} jobs have no stored output")
        return Figures(
            system="benchrunner",
            engine=engine,
            workers=workers,
            jobs=jobs,
            throughput=jobs / elapsed,
            pickup_p50=percentile(pickup, 0.5),
            pickup_p90=percentile(pickup, 0.9),
            server_cpu=measured[0].server * 1000 / jobs,
            database_cpu=(
                measured[0].database * 1000 / jobs if measured[0].database is not None else None
            ),
            worker_cpu=worker_cpu * 1000 / jobs,
        )


@dataclasses.dataclass(frozen=True)
class LongFigures:
    """CPU milliseconds per minute of a job's running time, with jobs that print and heartbeat."""

    engine: str
    workers: int
    jobs: int
    seconds: int
    server: float
    database: float | None
    runners: float
    server_idle: float
    """The server's CPU milliseconds per minute of wall time with its runners waiting and no
    job, measured before the jobs: what it costs while nothing runs, which it keeps spending
    while jobs run (so over the jobs' phase part of ``server``, in other units)."""


IDLE_SECONDS = 10.0
"""How long the idle server is measured before the jobs (by default), after as long again for
the work of its start (its first housekeeping passes, loading what its first requests need) to
end, which costs several times its idle CPU in the first seconds after it is ready."""


def run_long(
    engine: str,
    workers: int,
    jobs: int,
    seconds: int,
    idle_seconds: float = IDLE_SECONDS,
    profile: Profile | None = None,
    sweep_interval: float | None = None,
) -> LongFigures:
    """``jobs`` jobs of template ``bench.long`` lasting ``seconds`` each, run by ``workers``
    agents; CPU per job-minute over the whole phase (zeros with no jobs), and the server's CPU
    per minute idle over ``idle_seconds``, recorded with py-spy when ``profile`` is given;
    ``sweep_interval`` as ``deployed``'s."""
    with deployed(engine, workers, "long", jobs, sweep_interval) as (url, deployment, runners, api):
        server = deployment.server.proc
        assert server is not None
        database = sa.make_url(url).database if engine == "postgresql" else None
        pids = [r.proc.pid for r in runners if r.proc is not None]
        time.sleep(IDLE_SECONDS)  # the server's start settles
        with py_spy(server.pid, profile):
            idle_before = process_cpu_seconds(server.pid)
            time.sleep(idle_seconds)  # the measurement itself: a server with nothing to do
            idle = process_cpu_seconds(server.pid) - idle_before
        api.http.close()  # the server has ended the idle keep-alive: the next request reconnects
        if not jobs:
            return LongFigures(
                engine, workers, 0, seconds, 0.0, None, 0.0, idle * 1000 * 60 / idle_seconds
            )
        measured: list[Usage] = []
        with database_watch(url) as watch, usage(server.pid, pids, database, None, measured):
            # Jobs of many seconds: one read a second ends the phase within a second.
            submit_and_drain(api, watch, jobs, {"seconds": seconds}, poll_interval=1.0)
        minutes = jobs * seconds / 60
        cpu = measured[0]
        return LongFigures(
            engine=engine,
            workers=workers,
            jobs=jobs,
            seconds=seconds,
            server=cpu.server * 1000 / minutes,
            database=cpu.database * 1000 / minutes if cpu.database is not None else None,
            runners=cpu.workers * 1000 / minutes,
            server_idle=idle * 1000 * 60 / idle_seconds,
        )
