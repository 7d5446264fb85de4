"""The console's pages with 10,000 jobs and 1,000 reports in the database (issue 12, point 6).

Builds a fresh database (the server's own migrations) and fills it: a public project with
10,000 jobs in every status, each with the report a job gets, their events (created, claimed,
started, completed, processed or failed or canceled), and 1,000 of the processed ones with
results: ``--benchmarks`` benchmarks of two measures, 8 hours apart over the last 333 days,
stored and judged by the code processing runs (``reports.metrics_add``,
``evaluation.evaluate_report``) against a percentage threshold on latency, so boundaries and
alerts are the real ones. Then it requests every main page of the console through an in-process
app (``TestClient``, signed in as the admin) and prints the median time per page: the server's
render and the in-process HTTP round trip, no network.

    .venv/bin/python -m benchmarks.console_pages [--engine sqlite|postgresql] [--repeats 21]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from tests.databases import fresh_database

from benchrunner.core.events import JobEvent
from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.app import create_app
from benchrunner.server.config import ServerSettings
from benchrunner.server.console import sessions
from benchrunner.server.evaluation import evaluate_report
from benchrunner.server.store import accounts, reports, runners, thresholds
from benchrunner.server.store import sessions as session_store
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.tables import branch, job, job_event, measure, report, testbed

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
JOBS = 10_000
RESULT_REPORTS = 1_000
CHUNK = 2_000
MEASURES = ("latency", "memory")
CONFIG = '{"timeout":60,"template":"bench.noop","args":{}}'
THRESHOLD = Model(TestKind.PERCENTAGE, min_sample_size=2, max_sample_size=64, upper_boundary=0.1)
REGRESSION_EVERY = 97
"""Every so many reports, one benchmark is 30 % slower: an alert."""
# The statuses of the jobs without results, in turn.
OTHER_STATUSES = (
    JobStatus.PROCESSED,
    JobStatus.FAILED,
    JobStatus.CANCELED,
    JobStatus.PENDING,
    JobStatus.RUNNING,
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


@dataclass(frozen=True)
class Filled:
    """What the pages are asked about."""

    project: str
    admin_id: int
    runner: str
    job: str
    report: str
    threshold: str
    benchmark: str


def _report_row(project_id: int, branch_id: int, testbed_id: int, n: int) -> dict[str, Any]:
    at = NOW - dt.timedelta(hours=8 * (JOBS - n), minutes=1)
    return {
        "uuid": uuid.uuid4(),
        "user_id": None,
        "project_id": project_id,
        "branch_id": branch_id,
        "testbed_id": testbed_id,
        "adapter": "json",
        "start_time": at,
        "end_time": at,
        "error": None,
        "created": at,
    }


def _fill_jobs(
    engine: Engine, project_id: int, org_id: int, spec_id: int, runner_id: int, n_results: int
) -> list[tuple[int, int]]:
    """``JOBS`` jobs with their reports and events, oldest first; returns the (job id, report
    id) of the ``n_results`` that will carry results (the newest processed ones)."""
    with engine.begin() as conn:
        branch_id = conn.execute(sa.select(branch.c.id).where(branch.c.name == "main")).scalar_one()
        testbed_id = conn.execute(sa.select(testbed.c.id)).scalar_one()
    with_results = set(range(JOBS - n_results, JOBS))
    chosen: list[tuple[int, int]] = []
    for start in range(0, JOBS, CHUNK):
        numbers = range(start, min(JOBS, start + CHUNK))
        report_rows = [_report_row(project_id, branch_id, testbed_id, n) for n in numbers]
        with engine.begin() as conn:
            report_ids = [
                row.id
                for row in conn.execute(
                    report.insert().returning(report.c.id, sort_by_parameter_order=True),
                    report_rows,
                )
            ]
            statuses = [
                JobStatus.PROCESSED if n in with_results else OTHER_STATUSES[n % 5] for n in numbers
            ]
            job_rows = [
                {
                    "uuid": uuid.uuid4(),
                    "report_id": report_id,
                    "organization_id": org_id,
                    "source_ip": "127.0.0.1",
                    "spec_id": spec_id,
                    "config": CONFIG,
                    "timeout": 60,
                    "priority": 200,
                    "status": int(status),
                    "runner_id": None if status is JobStatus.PENDING else runner_id,
                    "kind": "template",
                    "created": row["created"],
                    "modified": row["created"],
                }
                for report_id, row, status in zip(report_ids, report_rows, statuses, strict=True)
            ]
            job_ids = [
                row.id
                for row in conn.execute(
                    job.insert().returning(job.c.id, sort_by_parameter_order=True), job_rows
                )
            ]
            events = [
                {
                    "job_id": job_id,
                    "event_type": str(event),
                    "message": event.value.replace("_", " "),
                    "actor": "admin@bench.dev",
                    "meta": "{}",
                    "created": row["created"] + dt.timedelta(seconds=k),
                }
                for job_id, row, status in zip(job_ids, job_rows, statuses, strict=True)
                for k, event in enumerate(EVENTS[status])
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
    for k, (_, report_id) in enumerate(chosen):
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
        with engine.begin() as conn:
            stored = reports.metrics_add(conn, report_id, project_id, values, NOW)
            if k == 0:
                _add_threshold(conn, project_id)
            raised += evaluate_report(conn, report_id, stored, NOW)
    return raised


def _add_threshold(conn: Any, project_id: int) -> None:
    key = thresholds.SeriesKey(
        branch_id=conn.execute(sa.select(branch.c.id).where(branch.c.name == "main")).scalar_one(),
        testbed_id=conn.execute(sa.select(testbed.c.id)).scalar_one(),
        measure_id=conn.execute(
            sa.select(measure.c.id).where(measure.c.slug == "latency")
        ).scalar_one(),
    )
    thresholds.threshold_put(conn, project_id, key, THRESHOLD, NOW)


def populate(engine: Engine, n_benchmarks: int) -> Filled:
    with engine.begin() as conn:
        admin = accounts.user_get_or_create(conn, "admin@bench.dev", "admin", admin=True, now=NOW)
        org = accounts.organization_create(conn, "acme", Plan.TEAM, NOW, leader_id=admin.id)
        project = accounts.project_create(conn, org.id, "bench", "public", NOW)
        spec = runners.spec_create(
            conn, runners.NewSpec("small", "x86_64", 1, 1 << 30, 1 << 30, False), NOW
        )
        runner = runners.runner_create(conn, "box-1", "bencher_runner_" + "0" * 64, NOW)
        runners.runner_spec_add(conn, runner.id, spec.id)
        reports.new_report_on(conn, project.id, "main", "box", "json", NOW)
    chosen = _fill_jobs(engine, project.id, org.id, spec.id, runner.id, RESULT_REPORTS)
    raised = _fill_results(engine, project.id, chosen, n_benchmarks)
    # The planner statistics a running deployment has: what PostgreSQL's autovacuum and
    # SQLite's PRAGMA optimize gather after a load like this one.
    with engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    with engine.begin() as conn:
        job_id, report_id = chosen[-1]
        job_uuid = conn.execute(sa.select(job.c.uuid).where(job.c.id == job_id)).scalar_one()
        report_uuid = conn.execute(
            sa.select(report.c.uuid).where(report.c.id == report_id)
        ).scalar_one()
        found, _ = thresholds.threshold_list(
            conn, project.id, thresholds.ThresholdFilter(), ascending=True, limit=1, offset=0
        )
    print(
        f"filled: {JOBS:,} jobs, {len(chosen):,} reports with results "
        f"({len(chosen) * n_benchmarks * len(MEASURES):,} metrics), {raised} alerts"
    )
    return Filled(
        project=project.slug,
        admin_id=admin.id,
        runner=runner.slug,
        job=str(job_uuid),
        report=str(report_uuid),
        threshold=str(found[0].uuid),
        benchmark="bench_00",
    )


def pages(filled: Filled) -> dict[str, str]:
    """Every main page of the console, by name. A page the branch measured has not built yet
    answers 404 and is reported as such."""
    p = f"/console/projects/{filled.project}"
    year_ago = int((NOW - dt.timedelta(days=365)).timestamp() * 1000)
    perf = (
        f"{p}/perf?branches=main&testbeds=box&benchmarks={filled.benchmark}&measures=latency"
        f"&start_time={year_ago}"
    )
    return {
        "dashboard": "/console",
        "runners": "/console/runners",
        "specs": "/console/specs",
        "projects": "/console/projects",
        "project": p,
        "jobs": f"{p}/jobs",
        "jobs (status=processed)": f"{p}/jobs?status=processed",
        "job": f"{p}/jobs/{filled.job}",
        "new job": f"{p}/jobs/new",
        "reports": f"{p}/reports",
        "reports (page 200)": f"{p}/reports?page=200",
        "report": f"{p}/reports/{filled.report}",
        "perf (1 benchmark, a year: 1,000 points)": perf,
        "alerts": f"{p}/alerts",
        "alerts (all)": f"{p}/alerts?status=all",
        "thresholds": f"{p}/thresholds",
        "threshold edit": f"{p}/thresholds/{filled.threshold}",
    }


def _admin_session(engine: Engine, admin_id: int) -> str:
    with engine.begin() as conn:
        return session_store.session_create(conn, admin_id, NOW, sessions.LIFETIME)


@dataclass(frozen=True)
class Timings:
    wall: list[float]
    """Milliseconds from request to response."""
    cpu: list[float]
    """Milliseconds of CPU this process spent on it (client and server share the process):
    what the page costs, whatever else the machine's cores were doing meanwhile."""
    size: int


def time_pages(
    engine: Engine, url: str, data_dir: Path, filled: Filled, repeats: int
) -> dict[str, Timings | None]:
    """Each page's timings and size, requested as the signed-in admin (who sees every form);
    None for a page not built (404)."""
    settings = ServerSettings(db=url, data_dir=data_dir)
    found: dict[str, Timings | None] = {}
    # https: the session cookie is Secure, as a browser would only send it so.
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        client.cookies.set(sessions.COOKIE, _admin_session(engine, filled.admin_id))
        for name, path in pages(filled).items():
            wall: list[float] = []
            cpu: list[float] = []
            size = 0
            if client.get(path).status_code == 404:
                found[name] = None
                continue
            for k in range(repeats + 1):
                started, started_cpu = time.perf_counter(), time.process_time()
                response = client.get(path)
                elapsed, elapsed_cpu = (
                    time.perf_counter() - started,
                    time.process_time() - started_cpu,
                )
                if response.status_code != 200:
                    raise SystemExit(f"{path}: {response.status_code} {response.text[:500]}")
                size = len(response.content)
                if k:  # the first request warms caches and compiles templates
                    wall.append(elapsed * 1000)
                    cpu.append(elapsed_cpu * 1000)
            found[name] = Timings(wall, cpu, size)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--benchmarks", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=21)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, database(options.engine, Path(tmp)) as (engine, url):
        started = time.perf_counter()
        filled = populate(engine, options.benchmarks)
        print(f"filled in {time.perf_counter() - started:.0f} s ({options.engine})")
        results = time_pages(engine, url, Path(tmp) / "data", filled, options.repeats)
    print(f"\n{'page':<42} {'median':>9} {'min':>8} {'max':>8} {'CPU med':>9} {'bytes':>9}")
    for name, result in results.items():
        if result is None:
            print(f"{name:<42} not built (404)")
            continue
        wall = result.wall
        print(
            f"{name:<42} {statistics.median(wall):7.1f}ms {min(wall):6.1f}ms "
            f"{max(wall):6.1f}ms {statistics.median(result.cpu):7.1f}ms {result.size:>9,}"
        )


if __name__ == "__main__":
    main()
