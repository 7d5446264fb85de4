"""The benchrunner side of queue_compare: a real server and real runner agents.

The server and ``benchrunner runner up`` processes (process executor) are started as the system
tests start them (``tests.harness``), on a fresh database. The job is template ``bench.clock``:
``date`` prints the wall clock at its start as a metric, so every job is a real process whose
start time is read back from its stored output after the phase: a row of ``job_output`` when
small (code from 2026-11-25 on), else a blob under the server's data directory (older code, or
a large output).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from tests.databases import fresh_database
from tests.harness import Deployment, RunnerProcess, deploy, wait_until

from benchmarks.cpu_time import backends_cpu, process_cpu_seconds
from benchmarks.queue_figures import Figures, percentile
from benchmarks.server_env import UNCAPPED
from benchmarks.source_tree import admin_token
from benchrunner.server.store import tables

TEMPLATE = "bench.clock"
IDLE_PAUSE = 0.05
"""Between pickup samples, after the previous job is done: every worker is back waiting."""


class Api:
    """A lean stdlib HTTP client (keep-alive), so the figures are the server's."""

    def __init__(self, deployment: Deployment) -> None:
        self.http = HTTPConnection("127.0.0.1", deployment.server.port, timeout=60)
        self.project_uuid = ""
        self.headers = {
            "Authorization": f"Bearer {deployment.server.token}",
            "Content-Type": "application/json",
        }
        self.body = json.dumps(
            {
                "project": deployment.project,
                "spec": deployment.spec,
                "template": TEMPLATE,
                "settings": {"adapter": "json"},
            }
        )

    def submit(self) -> str:
        self.http.request("POST", "/v0/run", self.body, self.headers)
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
        raise SystemExit(f"{len(missing)} job(s) have no stored output, e.g. {missing[0]}")
    return [(clocks[job] - at) / 1e6 for job, at in enqueued.items()]


def pickup_phase(
    api: Api, workers: int, samples: int, warmup: int, outputs: StoredOutputs
) -> dict[str, int]:
    """One job at a time, each submitted with every worker idle; job -> client clock (ns).

    Until the job's output is stored (after its start) only the store is watched, so that no
    request to the server competes with the pickup being measured.
    """
    enqueued: dict[str, int] = {}
    for index in range(warmup + samples):
        before = time.time_ns()
        job = api.submit()
        if index >= warmup:
            enqueued[job] = before
        outputs.project_uuid = api.project_uuid
        wait_until(
            functools.partial(outputs.stored, job),
            timeout=120,
            interval=0.005,
            message=f"output of job {job}",
        )
        wait_until(
            lambda: all_processed(api, workers),
            timeout=60 if index else 120,
            interval=0.01,
            message=f"job {job} processed and {workers} runner(s) waiting",
        )
        time.sleep(IDLE_PAUSE)
    return enqueued


@dataclasses.dataclass(frozen=True)
class Profile:
    """Where py-spy writes the server's raw stacks, and its samples per second."""

    output: Path
    rate: int

    def of_runner(self, index: int) -> Profile:
        """Where the ``index``-th runner agent's stacks go, beside the server's."""
        return Profile(self.output.with_name(f"{self.output.stem}-runner{index}.txt"), self.rate)


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
"""The database's URL, the deployment, its runner agents and a client."""


@contextlib.contextmanager
def deployed(engine: str, workers: int) -> Iterator[Deployed]:
    """A fresh database of ``engine``, a server on it, ``workers`` runner agents and a client,
    once every runner waits for work."""
    with (
        tempfile.TemporaryDirectory(prefix="queue-compare-") as tmp,
        fresh_database(engine, Path(tmp)) as url,
        deploy(
            Path(tmp), url, heartbeat_timeout=60.0, env=UNCAPPED, token=admin_token(url)
        ) as deployment,
    ):
        # The noise guard's calibrations (a benchmark runner's own feature, about 18 ms of the
        # job core per job) are not queue work: Procrastinate's workers do nothing like it.
        runners = [
            deployment.runner_process(f"worker-{i}", BENCHRUNNER_NOISE_GUARD="false").start()
            for i in range(workers)
        ]
        api = Api(deployment)
        wait_until(
            lambda: api.health()["waiting_runners"] == workers,
            timeout=60,
            message=f"{workers} runner(s) waiting",
        )
        yield url, deployment, runners, api


def submit_and_drain(api: Api, jobs: int) -> list[str]:
    """``jobs`` jobs submitted one call after another, then waited for until every job is
    processed; their UUIDs."""
    submitted = [api.submit() for _ in range(jobs)]
    wait_until(
        lambda: all_processed(api),
        timeout=max(600.0, jobs / 2),
        interval=0.1,
        message=f"{jobs} jobs processed",
    )
    return submitted


def run(
    engine: str, workers: int, jobs: int, samples: int, warmup: int, profile: Profile | None
) -> Figures:
    """One measurement: a fresh database, a server, ``workers`` runner agents; the pickup
    phase, then ``jobs`` jobs submitted while the runners run."""
    with deployed(engine, workers) as (url, deployment, runners, api):
        outputs = StoredOutputs(url, deployment.server.data_dir)
        sample_jobs = pickup_phase(api, workers, samples, warmup, outputs)
        pickup = pickups(sample_jobs, outputs.started_clocks())

        server = deployment.server.proc
        assert server is not None
        pids = [r.proc.pid for r in runners if r.proc is not None]
        database = sa.make_url(url).database if engine == "postgresql" else None
        server_before = process_cpu_seconds(server.pid)
        workers_before = sum(process_cpu_seconds(pid) for pid in pids)
        with contextlib.ExitStack() as recording:
            database_cpu = recording.enter_context(backends_cpu(database))
            recording.enter_context(py_spy(server.pid, profile))
            for index, pid in enumerate(pids):
                recording.enter_context(py_spy(pid, profile and profile.of_runner(index)))
            started = time.perf_counter()
            submitted = submit_and_drain(api, jobs)
            elapsed = time.perf_counter() - started
        server_cpu = process_cpu_seconds(server.pid) - server_before
        worker_cpu = sum(process_cpu_seconds(pid) for pid in pids) - workers_before
        done = outputs.started_clocks()
        outputs.close()
        lost = [job for job in submitted if job not in done]
        if lost:
            raise SystemExit(f"{len(lost)} of {jobs} jobs have no stored output")
        return Figures(
            system="benchrunner",
            engine=engine,
            workers=workers,
            jobs=jobs,
            throughput=jobs / elapsed,
            pickup_p50=percentile(pickup, 0.5),
            pickup_p90=percentile(pickup, 0.9),
            server_cpu=server_cpu * 1000 / jobs,
            database_cpu=database_cpu[0] * 1000 / jobs if database_cpu else None,
            worker_cpu=worker_cpu * 1000 / jobs,
        )
