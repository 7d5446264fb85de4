"""Every console page with 10,000 jobs and 1,000 reports in the database (docs/console.md).

Builds a fresh database (the server's own migrations; on PostgreSQL a scratch database, dropped
afterwards) and fills it: a public project with 10,000 jobs in every status (two specs, two
runners, two branches), each with the report a job gets and its events, and 1,000 of the
processed ones with results: ``--benchmarks`` benchmarks of two measures, 8 hours apart over
the last 333 days, stored and judged by the code processing runs (``reports.metrics_add``,
``evaluation.evaluate_report``) against a percentage threshold on latency, so boundaries and
alerts are the real ones. The newest of them has a long event timeline, a 4 MiB log and five
iterations of output. Each runner is running one job (what the runners page and the dashboard
show as current); 2,000 jobs wait in the queue.

Then it starts a real ``benchrunner server`` process on the database and requests every page
of the console over loopback HTTP, signed in as the admin (who sees every form; the sign-in
page signed out), and prints per page the median wall time of the request as the client sees
it and the median CPU time the server spent on it: its threads' and, on PostgreSQL, the
database's backends' (``/proc/<pid>/task/*/schedstat``).

    .venv/bin/python -m benchmarks.console_pages [--engine sqlite|postgresql] [--repeats 21]
        [--jobs 10000] [--pages perf]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from tests.databases import fresh_database
from tests.harness import TEST_TEMPLATES, ServerProcess
from tests.new_reports import new_report_on

from benchmarks.cpu_time import backend_pids, threads_cpu_ns
from benchrunner.core.events import JobEvent
from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.protocol import IterationResult, JsonJobOutput
from benchrunner.server.console import sessions
from benchrunner.server.processing.evaluation import evaluate_report
from benchrunner.server.processing.outputs import encode_output
from benchrunner.server.store import accounts, job_outputs, reports, runners, thresholds
from benchrunner.server.store import sessions as session_store
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.tables import (
    alert,
    branch,
    job,
    job_event,
    job_log,
    measure,
    report,
    testbed,
)

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
JOBS = 10_000
RESULT_REPORTS = 1_000
CHUNK = 2_000
MEASURES = ("latency", "memory")
TIMEOUT = 86_400
"""Every job's timeout: the running ones must outlive the benchmark under the server's
watchdog."""
CONFIG = f'{{"timeout":{TIMEOUT},"template":"bench.noop","args":{{}}}}'
THRESHOLD = Model(TestKind.PERCENTAGE, min_sample_size=2, max_sample_size=64, upper_boundary=0.1)
REGRESSION_EVERY = 97
"""Every so many reports, one benchmark is 30 % slower: an alert."""
# The statuses of the jobs without results, in turn.
OTHER_STATUSES = (
    JobStatus.PROCESSED,
    JobStatus.FAILED,
    JobStatus.CANCELED,
    JobStatus.PENDING,
)
EVENTS: dict[JobStatus, tuple[JobEvent, ...]] = {
    JobStatus.PENDING: (JobEvent.CREATED,),
    JobStatus.RUNNING: (JobEvent.CREATED, JobEvent.CLAIMED, JobEvent.STARTED),
    JobStatus.FAILED: (JobEvent.CREATED, JobEvent.CLAIMED, JobEvent.STARTED, JobEvent.FAILED),
    JobStatus.CANCELED: (JobEvent.CREATED, JobEvent.CANCEL_REQUESTED, JobEvent.CANCELED),
    JobStatus.PROCESSED: (
        JobEvent.CREATED,
        JobEvent.CLAIMED,
        JobEvent.STARTED,
        JobEvent.COMPLETED,
        JobEvent.PROCESSED,
    ),
}
FEATURE_EVERY = 20
"""One job in so many (of those without results) is on branch ``feature``."""
LARGE_EVERY = 10
"""One job in so many runs on spec ``large`` and runner ``box-2``; the rest on ``small``,
``box-1``."""
LONG_TIMELINE = 200
"""Events of the job whose page is measured: requeued again and again before it ran."""
LOG_CHUNKS = 1_024
LOG_LINE = "iteration {k:04d}: " + "x" * 100 + "\n"
LOG_CHUNK_LINES = 34
"""About 4 KiB a chunk: 4 MiB of log."""
ITERATIONS = 5
RESULTS_PER_TRANSACTION = 50


@dataclass(frozen=True)
class Ids:
    """The rows every job refers to."""

    admin: int
    project: int
    project_slug: str
    organization: int
    specs: tuple[int, int]
    runners: tuple[int, int]
    branches: tuple[int, int]
    testbed: int


@dataclass(frozen=True)
class Filled:
    """What the pages are asked about."""

    project: str
    admin_id: int
    job: str
    report: str
    threshold: str
    alert: str
    first_result: dt.datetime


def _status(n: int, with_results: range) -> JobStatus:
    if n >= with_results.stop:
        return JobStatus.RUNNING
    if n in with_results:
        return JobStatus.PROCESSED
    return OTHER_STATUSES[n % len(OTHER_STATUSES)]


def _rows(ids: Ids, numbers: range, with_results: range, n_jobs: int) -> list[dict[str, Any]]:
    """The report, job and status of each job ``n`` of ``numbers``: one job 8 hours apart,
    the newest (the running ones) a minute ago."""
    rows = []
    for n in numbers:
        at = NOW - dt.timedelta(hours=8 * (n_jobs - 1 - n), minutes=1)
        status = _status(n, with_results)
        large = n % LARGE_EVERY == 3 or n == n_jobs - 1
        feature = n % FEATURE_EVERY == 7 and n < with_results.start
        report_row = {
            "uuid": uuid.uuid4(),
            "user_id": None,
            "project_id": ids.project,
            "branch_id": ids.branches[feature],
            "testbed_id": ids.testbed,
            "adapter": "json",
            "start_time": at,
            "end_time": at,
            "error": None,
            "created": at,
        }
        job_row = {
            "uuid": uuid.uuid4(),
            "organization_id": ids.organization,
            "source_ip": "127.0.0.1",
            "spec_id": ids.specs[large],
            "config": CONFIG,
            "timeout": TIMEOUT,
            "priority": 200,
            "status": int(status),
            "runner_id": None if status is JobStatus.PENDING else ids.runners[large],
            "kind": "template",
            "claimed": None if status is JobStatus.PENDING else at,
            "started": None if status is JobStatus.PENDING else at,
            "last_heartbeat": NOW if status is JobStatus.RUNNING else None,
            "created": at,
            "modified": at,
        }
        rows.append({"report": report_row, "job": job_row, "status": status})
    return rows


def _fill_jobs(engine: Engine, ids: Ids, n_jobs: int, n_results: int) -> list[tuple[int, int]]:
    """``n_jobs`` jobs with their reports and events, oldest first; returns the (job id, report
    id) of the ``n_results`` that will carry results (the newest processed ones)."""
    with_results = range(n_jobs - len(ids.runners) - n_results, n_jobs - len(ids.runners))
    chosen: list[tuple[int, int]] = []
    for start in range(0, n_jobs, CHUNK):
        numbers = range(start, min(n_jobs, start + CHUNK))
        rows = _rows(ids, numbers, with_results, n_jobs)
        with engine.begin() as conn:
            report_ids = [
                row.id
                for row in conn.execute(
                    report.insert().returning(report.c.id, sort_by_parameter_order=True),
                    [row["report"] for row in rows],
                )
            ]
            job_ids = [
                found.id
                for found in conn.execute(
                    job.insert().returning(job.c.id, sort_by_parameter_order=True),
                    [
                        {**row["job"], "report_id": report_id}
                        for row, report_id in zip(rows, report_ids, strict=True)
                    ],
                )
            ]
            events = [
                {
                    "job_id": job_id,
                    "event_type": str(event),
                    "message": event.value.replace("_", " "),
                    "actor": "admin@bench.dev",
                    "meta": "{}",
                    "created": row["job"]["created"] + dt.timedelta(seconds=k),
                }
                for job_id, row in zip(job_ids, rows, strict=True)
                for k, event in enumerate(EVENTS[row["status"]])
            ]
            conn.execute(job_event.insert(), events)
        chosen += [
            (job_id, report_id)
            for n, job_id, report_id in zip(numbers, job_ids, report_ids, strict=True)
            if n in with_results
        ]
    return chosen


def _fill_results(
    engine: Engine, project_id: int, chosen: list[tuple[int, int]], n_benchmarks: int
) -> int:
    """Store and judge each chosen report's metrics, oldest first; returns the alerts raised."""
    rng = random.Random(12)
    raised = 0
    for start in range(0, len(chosen), RESULTS_PER_TRANSACTION):
        with engine.begin() as conn:
            for k in range(start, min(len(chosen), start + RESULTS_PER_TRANSACTION)):
                raised += _add_results(conn, project_id, chosen[k][1], k, n_benchmarks, rng)
    return raised


def _add_results(
    conn: Any, project_id: int, report_id: int, k: int, n_benchmarks: int, rng: random.Random
) -> int:
    slow = k % REGRESSION_EVERY == REGRESSION_EVERY - 1
    values = [
        reports.MetricValue(
            iteration=0,
            benchmark=f"bench_{b:02d}",
            measure=name,
            value=(100.0 + b) * (1.3 if slow and b == 0 and name == "latency" else 1.0)
            + rng.gauss(0, 0.5),
            lower_value=None,
            upper_value=None,
        )
        for b in range(n_benchmarks)
        for name in MEASURES
    ]
    stored = reports.metrics_add(conn, report_id, project_id, values, NOW)
    if k == 0:
        _add_threshold(conn, project_id)
    found = thresholds.thresholds_of_report(conn, report_id, {m.measure_id for m in stored})
    return evaluate_report(conn, report_id, stored, NOW, found=found)


def _add_threshold(conn: Any, project_id: int) -> None:
    key = thresholds.SeriesKey(
        branch_id=conn.execute(sa.select(branch.c.id).where(branch.c.name == "main")).scalar_one(),
        testbed_id=conn.execute(sa.select(testbed.c.id)).scalar_one(),
        measure_id=conn.execute(
            sa.select(measure.c.id).where(measure.c.slug == "latency")
        ).scalar_one(),
    )
    thresholds.threshold_put(conn, project_id, key, THRESHOLD, NOW)


def _long_history(engine: Engine, job_id: int) -> None:
    """The measured job's page as long as pages get: a timeline of ``LONG_TIMELINE`` events
    (claimed and started again and again), a 4 MiB log, and ``ITERATIONS`` iterations of
    output with their files."""
    with engine.begin() as conn:
        first = conn.execute(
            sa.select(sa.func.min(job_event.c.created)).where(job_event.c.job_id == job_id)
        ).scalar_one()
        again = (JobEvent.CLAIMED, JobEvent.STARTED, JobEvent.HEARTBEAT_STALE_RECOVERED)
        conn.execute(
            job_event.insert(),
            [
                {
                    "job_id": job_id,
                    "event_type": str(again[k % len(again)]),
                    "message": f"attempt {k // len(again) + 1}: {again[k % len(again)].value}",
                    "actor": "box-1",
                    "meta": "{}",
                    "created": first + dt.timedelta(milliseconds=10 * k + 1),
                }
                for k in range(LONG_TIMELINE - len(EVENTS[JobStatus.PROCESSED]))
            ],
        )
        offsets = {"stdout": 0, "stderr": 0}
        chunks = []
        for k in range(LOG_CHUNKS):
            stream = "stderr" if k % 8 == 7 else "stdout"
            data = "".join(LOG_LINE.format(k=k) for _ in range(LOG_CHUNK_LINES))
            chunks.append(
                {
                    "job_id": job_id,
                    "stream": stream,
                    "stream_offset": offsets[stream],
                    "size": len(data),
                    "kind": "data",
                    "data": data,
                }
            )
            offsets[stream] += len(data)
        conn.execute(job_log.insert(), chunks)
        output = JsonJobOutput(
            results=[
                IterationResult(
                    exit_code=0,
                    stdout=LOG_LINE.format(k=k) * 60,
                    stderr="warming up\n" * 20,
                    output={"results.json": '{"bench_00": 100.5}\n' * 40},
                )
                for k in range(ITERATIONS)
            ]
        )
        job_outputs.output_put(conn, job_id, encode_output(output))


def _analyze(engine: Engine) -> None:
    """What autovacuum does after a bulk insert on PostgreSQL (``VACUUM`` also sets the
    visibility map that index-only counts need); the server's own ``ANALYZE`` on SQLite."""
    if engine.dialect.name != "postgresql":
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        return
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")


def _names(engine: Engine) -> Ids:
    """The account, specs, runners, branches and testbed the jobs use."""
    with engine.begin() as conn:
        admin = accounts.user_get_or_create(conn, "admin@bench.dev", "admin", admin=True, now=NOW)
        org = accounts.organization_create(conn, "acme", Plan.TEAM, NOW, leader_id=admin.id)
        project = accounts.project_create(conn, org.id, "bench", "public", NOW)
        specs, boxes = [], []
        for k, name in enumerate(("small", "large")):
            spec = runners.spec_create(
                conn, runners.NewSpec(name, "x86_64", 1 + k, 1 << 30, 1 << 30, False), NOW
            )
            box = runners.runner_create(conn, f"box-{k + 1}", f"bencher_runner_{k:064d}", NOW)
            runners.runner_spec_add(conn, box.id, spec.id)
            specs.append(spec.id)
            boxes.append(box.id)
        made = [
            new_report_on(conn, project.id, name, "box", "json", NOW)
            for name in ("main", "feature")
        ]
    return Ids(
        admin=admin.id,
        project=project.id,
        project_slug=project.slug,
        organization=org.id,
        specs=(specs[0], specs[1]),
        runners=(boxes[0], boxes[1]),
        branches=(made[0].branch_id, made[1].branch_id),
        testbed=made[0].testbed_id,
    )


def populate(engine: Engine, n_benchmarks: int, n_jobs: int = JOBS) -> Filled:
    ids = _names(engine)
    chosen = _fill_jobs(engine, ids, n_jobs, RESULT_REPORTS)
    # The planner statistics a live deployment has by now (PostgreSQL's autovacuum; the
    # server's own ANALYZE on SQLite): without them PostgreSQL judges each report's metrics
    # with plans made for empty tables, seconds a report.
    _analyze(engine)
    raised = _fill_results(engine, ids.project, chosen, n_benchmarks)
    job_id, report_id = chosen[-1]
    _long_history(engine, job_id)
    _analyze(engine)
    with engine.begin() as conn:
        job_uuid = conn.execute(sa.select(job.c.uuid).where(job.c.id == job_id)).scalar_one()
        first_result = conn.execute(
            sa.select(report.c.created).where(report.c.id == chosen[0][1])
        ).scalar_one()
        report_uuid = conn.execute(
            sa.select(report.c.uuid).where(report.c.id == report_id)
        ).scalar_one()
        found, _ = thresholds.threshold_list(
            conn, ids.project, thresholds.ThresholdFilter(), ascending=True, limit=1, offset=0
        )
        newest_alert = conn.execute(
            sa.select(alert.c.uuid).order_by(alert.c.id.desc()).limit(1)
        ).scalar_one()
    print(
        f"filled: {n_jobs:,} jobs, {len(chosen):,} reports with results "
        f"({len(chosen) * n_benchmarks * len(MEASURES):,} metrics), {raised} alerts"
    )
    return Filled(
        project=ids.project_slug,
        admin_id=ids.admin,
        job=str(job_uuid),
        report=str(report_uuid),
        threshold=str(found[0].uuid),
        alert=str(newest_alert),
        first_result=first_result,
    )


def pages(filled: Filled, n_benchmarks: int) -> dict[str, str]:
    """Every page of the console and the fragments its live parts poll, by name."""
    p = f"/console/projects/{filled.project}"
    job = f"{p}/jobs/{filled.job}"
    since = int(filled.first_result.timestamp() * 1000) - 1
    month_ago = int((NOW - dt.timedelta(days=30)).timestamp() * 1000)
    one = f"{p}/perf?branches=main&testbeds=box&benchmarks=bench_00&measures=latency"
    benchmarks = ",".join(f"bench_{b:02d}" for b in range(n_benchmarks))
    every = f"{p}/perf?branches=main&testbeds=box&benchmarks={benchmarks}&measures=latency,memory"
    return {
        "login (signed out)": "/console/login",
        "dashboard": "/console",
        "runners": "/console/runners",
        "runners, live part": "/console/runners/fragment",
        "runner box-1 (most jobs)": "/console/runners/box-1",
        "specs": "/console/specs",
        "spec small (9 jobs in 10)": "/console/specs/small",
        "projects": "/console/projects",
        "project": p,
        "jobs (choose a project)": "/console/jobs",
        "jobs": f"{p}/jobs",
        "jobs status=processed": f"{p}/jobs?status=processed",
        "jobs status=running": f"{p}/jobs?status=running",
        "jobs status=pending,failed": f"{p}/jobs?status=pending&status=failed",
        "jobs spec=large": f"{p}/jobs?spec=large",
        "jobs runner=box-2": f"{p}/jobs?runner=box-2",
        "jobs branch=feature": f"{p}/jobs?branch=feature",
        "jobs all four filters": f"{p}/jobs?status=failed&spec=large&runner=box-2&branch=main",
        "jobs page 300": f"{p}/jobs?page=300",
        "jobs, live part": f"{p}/jobs/fragment",
        "job (200 events, 4 MiB log)": job,
        "job, log from 2 MiB": f"{job}?log_offset={2 << 20}",
        "job, live part": f"{job}/fragment",
        "new job": f"{p}/jobs/new",
        "reports": f"{p}/reports",
        "reports page 200": f"{p}/reports?page=200",
        "report": f"{p}/reports/{filled.report}",
        "perf (1 series, last 30 days)": f"{one}&start_time={month_ago}",
        "perf (1 series, default year: 1,000 points)": one,
        f"perf ({n_benchmarks * len(MEASURES)} series, all points)": (
            f"{every}&start_time={since}&scale=log"
        ),
        "alerts": f"{p}/alerts",
        "alerts (all)": f"{p}/alerts?status=all",
        "alert": f"{p}/alerts/{filled.alert}",
        "thresholds": f"{p}/thresholds",
        "threshold": f"{p}/thresholds/{filled.threshold}",
        "new threshold": f"{p}/thresholds/new",
    }


def _admin_session(engine: Engine, admin_id: int) -> str:
    with engine.begin() as conn:
        return session_store.session_create(conn, admin_id, NOW, sessions.LIFETIME)


@dataclass(frozen=True)
class Timings:
    wall: list[float]
    """Milliseconds from request to response, as the client saw them."""
    cpu: list[float]
    """Milliseconds of CPU the server (and the database's backends) spent meanwhile."""
    size: int


def _time_page(
    client: httpx.Client, path: str, server_pids: list[int], database: str | None, repeats: int
) -> Timings:
    wall: list[float] = []
    cpu: list[float] = []
    size = 0
    for k in range(repeats + 1):
        # Backends are found again each time: the pool may have opened one for the last page.
        pids = server_pids + ([] if database is None else backend_pids(database))
        started_cpu = threads_cpu_ns(pids)
        started = time.perf_counter()
        response = client.get(path)
        elapsed = time.perf_counter() - started
        elapsed_cpu = threads_cpu_ns(pids) - started_cpu
        if response.status_code != 200:
            raise SystemExit(f"{path}: {response.status_code} {response.text[:500]}")
        size = len(response.content)
        if k:  # the first request warms caches and compiles templates
            wall.append(elapsed * 1000)
            cpu.append(elapsed_cpu / 1e6)
    return Timings(wall, cpu, size)


def time_pages(
    server: ServerProcess,
    filled: Filled,
    session: str,
    database: str | None,
    paths: dict[str, str],
    repeats: int,
) -> dict[str, Timings]:
    """Each page's timings and size over loopback, as the admin but for the sign-in page."""
    assert server.proc is not None
    pids = [server.proc.pid]
    found: dict[str, Timings] = {}
    # The session cookie is Secure, which a browser sends to loopback over plain HTTP too.
    signed_in = {"Cookie": f"{sessions.COOKIE}={session}"}
    with (
        httpx.Client(base_url=server.url, headers=signed_in, timeout=60) as admin,
        httpx.Client(base_url=server.url, timeout=60) as anonymous,
    ):
        for name, path in paths.items():
            client = anonymous if name.startswith("login") else admin
            found[name] = _time_page(client, path, pids, database, repeats)
    return found


@contextlib.contextmanager
def database(engine_name: str, directory: Path) -> Iterator[tuple[Engine, str]]:
    with fresh_database(engine_name, directory) as url:
        engine = make_engine(url, writer=True)
        upgrade(engine)
        try:
            yield engine, url
        finally:
            engine.dispose()


@contextlib.contextmanager
def serving(url: str, tmp: Path) -> Iterator[ServerProcess]:
    """``benchrunner server`` on the filled database, its watchdog patient with the running
    jobs (whose runners are not connected)."""
    templates = tmp / "templates.toml"
    templates.write_text(TEST_TEMPLATES)
    data = tmp / "data"
    data.mkdir()
    server = ServerProcess(
        data, templates, url, heartbeat_timeout=TIMEOUT, sweep_interval=5.0, start_timeout=300
    )
    server.start()
    try:
        yield server
    finally:
        server.kill(15)


def _table(results: dict[str, Timings]) -> None:
    print(f"\n{'page':<40} {'median':>9} {'min':>8} {'max':>8} {'CPU med':>9} {'bytes':>9}")
    for name, result in results.items():
        wall = result.wall
        print(
            f"{name:<40} {statistics.median(wall):7.1f}ms {min(wall):6.1f}ms "
            f"{max(wall):6.1f}ms {statistics.median(result.cpu):7.1f}ms {result.size:>9,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--benchmarks", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument(
        "--jobs",
        type=int,
        default=JOBS,
        help=f"jobs in the database (at least {RESULT_REPORTS + 2}: the reports with results "
        "and the two running jobs); fewer fill faster for the pages that read results",
    )
    parser.add_argument(
        "--pages", default="", help="only the pages whose name starts with this (e.g. perf)"
    )
    options = parser.parse_args()
    if options.jobs < RESULT_REPORTS + 2:
        parser.error(f"--jobs must be at least {RESULT_REPORTS + 2}")
    with tempfile.TemporaryDirectory() as tmp, database(options.engine, Path(tmp)) as (engine, url):
        started = time.perf_counter()
        filled = populate(engine, options.benchmarks, options.jobs)
        session = _admin_session(engine, filled.admin_id)
        print(f"filled in {time.perf_counter() - started:.0f} s ({options.engine})")
        database_name = None if options.engine == "sqlite" else sa.make_url(url).database
        with serving(url, Path(tmp)) as server:
            print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
            paths = {
                name: path
                for name, path in pages(filled, options.benchmarks).items()
                if name.startswith(options.pages)
            }
            results = time_pages(server, filled, session, database_name, paths, options.repeats)
            print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    _table(results)


if __name__ == "__main__":
    main()
