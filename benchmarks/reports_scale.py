"""Reports at scale (docs/reference/thresholds.md): a project of 1,000 benchmarks x 3 measures
with 1,000 reports of history, thresholds on every measure.

Builds a fresh database (the server's own migrations) and fills it in bulk, straight into the
tables: project A (the one measured) with ``--reports`` reports in the last year, each with a
metric of every benchmark and measure, and a measure-wide ``t_test`` threshold (max sample size
64; ``--test change_point``: a ``change_point`` threshold of the detector's defaults, same
sample size) on each measure of its branch and testbed. Then it measures, with repeats:

- **process**: one new report of every benchmark and measure, as processing stores it
  (``reports.metrics_add_missing``, ``metric_parts.METRIC_PART`` metrics a write transaction on
  SQLite, each timed; ``reports.FINISH_AFTER_MOVE``) and judges it
  (``evaluation.judge_report``'s reads and verdicts, then ``verdicts.verdicts_write`` a part at
  a time, each part timed: the longest is SQLite's writer held; a tree that judges in the
  store's transaction, ``evaluate_report``), then looks back over its series
  (``look_back.look_back_plan`` and ``look_back_write``, on its own line: it runs after the
  runner's ack), in a
  transaction that is rolled back, so every repeat sees the same history;
- **perf**: the perf query of one benchmark's year (``store.perf.perf_points``), for one measure
  and for all three, and the same through ``GET /v0/projects/{project}/perf`` of an in-process
  app.

It then adds project B, ``--other-factor`` times A's rows (reports in the same year), and
measures the same again in the same run: the figures must not follow B's size. Last, it prints
the plans of the history and perf queries as they ran (``EXPLAIN QUERY PLAN`` on SQLite,
``EXPLAIN ANALYZE`` on PostgreSQL).

    .venv/bin/python -m benchmarks.reports_scale --engine sqlite|postgresql
        [--benchmarks 1000] [--measures 3] [--reports 1000] [--other-factor 3] [--repeats 7]
        [--test t_test|change_point] [--direct] [--before OLD_SRC [--rounds 3]]

With ``--direct`` it measures instead a direct run (``POST /v0/run`` with its results in the
body) of one report of every benchmark and measure through an in-process app, ``--repeats``
times, each a report of its own: the longest write transaction of each request (SQLite's
writer held; the write engine's ``begin`` to its ``commit``) and the request's time. With
``--before`` too, each tree builds a database of its own (its own migrations) in a process of
its own, alternately.

With ``--before OLD_SRC`` (another tree's ``src``, e.g. ``git archive main src | tar -x -C
/tmp/main``) it measures only the processing, of that tree and of this one alternately, each
run in a process of its own on the same database, and compares what they judged: a digest of
each run's boundaries and alerts (``verdicts``), which must be the same.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import hashlib
import importlib
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Connection, Engine
from tests.databases import fresh_database

from benchrunner.core.tiers import Plan
from benchrunner.detection.models import Model, TestKind
from benchrunner.server.admin.bootstrap import bootstrap_admin
from benchrunner.server.app.factory import create_app
from benchrunner.server.config import ServerSettings
from benchrunner.server.processing import evaluation as evaluation_module
from benchrunner.server.processing import look_back as look_back_module
from benchrunner.server.processing.evaluation import evaluate_report, series_thresholds_to_judge
from benchrunner.server.store import accounts, capabilities, history, reports, thresholds
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.migrate import upgrade
from benchrunner.server.store.perf import PerfQuery, perf_points
from benchrunner.server.store.tables import (
    alert,
    benchmark,
    boundary,
    branch,
    measure,
    metric,
    report,
    testbed,
)

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
YEAR = dt.timedelta(days=365)
MEASURES = ("latency", "throughput", "memory")
MODELS = {
    TestKind.T_TEST: Model(
        TestKind.T_TEST, min_sample_size=2, max_sample_size=64, upper_boundary=0.99
    ),
    TestKind.CHANGE_POINT: Model(TestKind.CHANGE_POINT, max_sample_size=64),
}
CHUNK = 20_000
OUTLIERS = 0.01
"""Share of the judged report's metrics set 30 % above their series: they raise alerts."""


@dataclass(frozen=True)
class Project:
    id: int
    slug: str
    branch_id: int
    testbed_id: int
    benchmark_ids: list[int]
    measure_ids: list[int]
    rows: int


def _named_rows(project_id: int, names: list[str], **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "uuid": uuid.uuid4(),
            "project_id": project_id,
            "name": name,
            "slug": name.replace("_", "-"),
            "created": NOW - 2 * YEAR,
            **extra,
        }
        for name in names
    ]


def _ids(conn: Connection, table: sa.Table, project_id: int) -> list[int]:
    query = sa.select(table.c.id).where(table.c.project_id == project_id).order_by(table.c.id)
    return [int(i) for i in conn.execute(query).scalars()]


def _base(benchmark_index: int, measure_index: int) -> float:
    return 100.0 + 10.0 * benchmark_index + 1000.0 * measure_index


class WriteHolds:
    """The longest write transaction on ``engine`` since ``reset`` (ms): SQLite's writer
    held, from the transaction's ``begin`` to its ``commit`` or ``rollback``; and the most CPU
    one took on its thread (SQLite's writes run inline, on one thread: what a loaded machine's
    wall clock inflates)."""

    def __init__(self, engine: Engine) -> None:
        self.longest = 0.0
        self.most_cpu = 0.0
        self._began: dict[int, tuple[float, float]] = {}
        sa.event.listen(engine, "begin", self._begin)
        sa.event.listen(engine, "commit", self._end)
        sa.event.listen(engine, "rollback", self._end)

    def reset(self) -> None:
        self.longest = self.most_cpu = 0.0

    def _begin(self, conn: Connection) -> None:
        self._began[id(conn)] = (time.perf_counter(), time.thread_time())

    def _end(self, conn: Connection) -> None:
        began = self._began.pop(id(conn), None)
        if began is not None:
            self.longest = max(self.longest, (time.perf_counter() - began[0]) * 1000)
            self.most_cpu = max(self.most_cpu, (time.thread_time() - began[1]) * 1000)


def _direct_body(project: Project, values: list[reports.MetricValue], k: int) -> dict[str, Any]:
    bmf: dict[str, dict[str, dict[str, float]]] = {}
    for v in values:
        bmf.setdefault(v.benchmark, {})[v.measure] = {"value": v.value}
    at = (NOW + dt.timedelta(minutes=k)).isoformat()
    return {
        "project": project.slug,
        "branch": "main",
        "testbed": "box",
        "start_time": at,
        "end_time": at,
        "settings": {"adapter": "json"},
        "results": [json.dumps(bmf)],
    }


def time_direct(url: str, data_dir: Path, project: Project, repeats: int) -> dict[str, list[float]]:
    """``repeats`` direct runs (after one warm-up), each a new report of every benchmark and
    measure: each request's longest write transaction and its time (ms), and its alerts."""
    token = bootstrap_admin(url, "direct@bench.dev")
    rng = random.Random(2)
    found: dict[str, list[float]] = {
        "write_max": [],
        "write_cpu_max": [],
        "request": [],
        "alerts": [],
    }
    settings = ServerSettings(db=url, data_dir=data_dir)
    with TestClient(create_app(settings)) as client:
        holds = WriteHolds(client.app.state.ctx.db.write_engine)  # type: ignore[attr-defined]
        for k in range(repeats + 1):
            body = _direct_body(project, _new_values(project, rng), k)
            holds.reset()
            started = time.perf_counter()
            answer = client.post("/v0/run", json=body, headers={"Authorization": f"Bearer {token}"})
            elapsed = (time.perf_counter() - started) * 1000
            assert answer.status_code == 201, answer.text
            if k:
                found["write_max"].append(holds.longest)
                found["write_cpu_max"].append(holds.most_cpu)
                found["request"].append(elapsed)
                found["alerts"].append(len(answer.json()["alerts"]))
    return found


def direct_child(
    engine_name: str, benchmarks: int, measures: int, n_reports: int, repeats: int
) -> None:
    """``time_direct`` on a database of this tree's own, printed as JSON."""
    with tempfile.TemporaryDirectory() as tmp, database(engine_name, Path(tmp)) as (engine, url):
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "b@x", "b", admin=False, now=NOW).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, NOW, leader_id=leader)
        project = build_project(engine, org.id, "scale-a", benchmarks, measures, n_reports)
        add_thresholds(engine, project, TestKind.T_TEST)
        found = time_direct(url, Path(tmp) / "data", project, repeats)
    print(json.dumps(found))


def compare_direct(options: argparse.Namespace) -> None:
    """``time_direct`` of the tree at ``options.before`` and of this one, alternately, each
    in a process and on a database of its own."""
    runs: dict[str, list[dict[str, list[float]]]] = {"before": [], "after": []}
    trees = [("before", options.before), ("after", str(ROOT / "src"))]
    for round_number in range(options.rounds):
        for label, src in trees if round_number % 2 == 0 else trees[::-1]:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(ROOT)])}
            command = [sys.executable, "-m", "benchmarks.reports_scale", "--direct-child"]
            command += ["--engine", options.engine, "--benchmarks", str(options.benchmarks)]
            command += ["--measures", str(options.measures), "--reports", str(options.reports)]
            command += ["--repeats", str(options.repeats)]
            done = subprocess.run(
                command, env=env, cwd=ROOT, check=True, capture_output=True, text=True
            )
            runs[label].append(json.loads(done.stdout.splitlines()[-1]))
            print(f"  {label}: {runs[label][-1]['write_cpu_max']}", flush=True)
    n = options.benchmarks * options.measures
    print(f"\n== direct runs of {n:,} metrics, before ({options.before}) and after, alternately:")
    print(f"   {options.rounds} rounds of {options.repeats} runs ({options.engine})")
    for key, what in (
        ("write_max", "longest write"),
        ("write_cpu_max", "- its most CPU"),
        ("request", "request"),
    ):
        for label in ("before", "after"):
            values = [v for run in runs[label] for v in run[key]]
            print(f"    {what:<14} {label:<6}: {_spread(values)}")
    for label in ("before", "after"):
        print(f"    alerts per run {label:<6}: {[a for run in runs[label] for a in run['alerts']]}")


def build_project(
    engine: Engine, org_id: int, slug: str, n_benchmarks: int, n_measures: int, n_reports: int
) -> Project:
    """A project with its reports spread evenly over the last year, bulk-loaded."""
    with engine.begin() as conn:
        project = accounts.project_create(conn, org_id, slug, "public", NOW - 2 * YEAR)
        conn.execute(branch.insert(), _named_rows(project.id, ["main"]))
        conn.execute(testbed.insert(), _named_rows(project.id, ["box"]))
        names = [f"bench_{b:04d}" for b in range(n_benchmarks)]
        conn.execute(benchmark.insert(), _named_rows(project.id, names, ignored=False))
        conn.execute(measure.insert(), _named_rows(project.id, list(MEASURES[:n_measures])))
        branch_id = _ids(conn, branch, project.id)[0]
        testbed_id = _ids(conn, testbed, project.id)[0]
        benchmark_ids = _ids(conn, benchmark, project.id)
        measure_ids = _ids(conn, measure, project.id)
        step = (YEAR - dt.timedelta(hours=1)) / n_reports
        starts = [NOW - YEAR + step * k for k in range(n_reports)]
        report_rows = [
            {
                "uuid": uuid.uuid4(),
                "project_id": project.id,
                "branch_id": branch_id,
                "testbed_id": testbed_id,
                "adapter": "json",
                "version": k + 1,
                "start_time": start,
                "end_time": start + dt.timedelta(minutes=5),
                "created": start,
            }
            for k, start in enumerate(starts)
        ]
        conn.execute(report.insert(), report_rows)
        report_ids = _ids(conn, report, project.id)
    series = [
        (b, m, bid, mid) for b, bid in enumerate(benchmark_ids) for m, mid in enumerate(measure_ids)
    ]
    rng = random.Random(slug)
    rows = ((rid, bid, mid, _base(b, m) * rng.gauss(1, 0.01)) for rid in report_ids
            for b, m, bid, mid in series)  # fmt: skip
    _bulk_metrics(engine, rows)
    with engine.connect() as conn:  # the bulk rows read back through the table's types
        first = conn.execute(sa.select(metric).where(metric.c.report_id == report_ids[0])).first()
        assert first is not None and isinstance(first.uuid, uuid.UUID)
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:  # what autovacuum would have done after the load
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
    return Project(
        project.id,
        slug,
        branch_id,
        testbed_id,
        benchmark_ids,
        measure_ids,
        len(report_ids) * len(series),
    )


def _bulk_metrics(engine: Engine, rows: Iterator[tuple[int, int, int, float]]) -> None:
    """Metrics (iteration 0) in batches: PostgreSQL's COPY, SQLite's executemany."""
    if engine.dialect.name == "postgresql":
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            copy = "COPY metric (uuid, report_id, iteration, benchmark_id, measure_id, value) FROM STDIN"  # noqa: E501
            with cursor.copy(copy) as copying:
                buffer = io.StringIO()
                for n, (rid, bid, mid, value) in enumerate(rows, 1):
                    buffer.write(f"{uuid.uuid4()}\t{rid}\t0\t{bid}\t{mid}\t{value!r}\n")
                    if n % CHUNK == 0:
                        copying.write(buffer.getvalue())
                        buffer = io.StringIO()
                copying.write(buffer.getvalue())
            raw.commit()
        finally:
            raw.close()
        return
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("PRAGMA cache_size=-2000000")  # 2 GB for the load: indexes stay in memory
        cursor.execute("BEGIN")
        insert = (
            "INSERT INTO metric (uuid, report_id, iteration, benchmark_id, measure_id, value)"
            " VALUES (?, ?, 0, ?, ?, ?)"
        )
        batch: list[tuple[str, int, int, int, float]] = []
        for rid, bid, mid, value in rows:
            batch.append((uuid.uuid4().hex, rid, bid, mid, value))  # sa.Uuid's SQLite form
            if len(batch) == CHUNK:
                cursor.executemany(insert, batch)
                batch = []
        cursor.executemany(insert, batch)
        cursor.execute("COMMIT")
        cursor.execute("PRAGMA cache_size=-2000")  # back to SQLite's default for the figures
    finally:
        raw.close()


def add_thresholds(engine: Engine, project: Project, test: TestKind) -> None:
    with engine.begin() as conn:
        for measure_id in project.measure_ids:
            key = thresholds.SeriesKey(project.branch_id, project.testbed_id, measure_id)
            thresholds.threshold_put(conn, project.id, key, MODELS[test], NOW)


class StatementLog:
    """The SQL statements a block of work ran (text and parameters), to count and explain."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.statements: list[tuple[str, Any]] = []
        self.on = False

    def __call__(self, conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if self.on:
            self.statements.append((statement, params))

    def __enter__(self) -> StatementLog:
        sa.event.listen(self.engine, "before_cursor_execute", self)
        return self

    def __exit__(self, *_: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self)


def _new_values(project: Project, rng: random.Random) -> list[reports.MetricValue]:
    values = []
    for b in range(len(project.benchmark_ids)):
        for m in range(len(project.measure_ids)):
            shift = 1.3 if rng.random() < OUTLIERS else 1.0
            values.append(
                reports.MetricValue(
                    0,
                    f"bench_{b:04d}",
                    MEASURES[m],
                    _base(b, m) * rng.gauss(1, 0.01) * shift,
                    None,
                    None,
                )
            )
    return values


@dataclass
class ProcessTimes:
    store: list[float]
    evaluate: list[float]
    look_back: list[float]
    alerts: list[int]
    looked_back: list[int]
    statements: int
    verdicts: list[str] = field(default_factory=list)
    """Each run's verdicts (``verdicts``): the same in every tree that judges alike."""
    look_back_read: list[float] = field(default_factory=list)
    """Of the look-back, its reads and detector (``look_back_plan``), outside any write
    transaction (a tree without it: none)."""
    look_back_write_max: list[float] = field(default_factory=list)
    """Of the look-back, its longest write transaction (``look_back_write`` of
    ``WRITE_ROWS`` alerts at most)."""
    evaluate_cpu: list[float] = field(default_factory=list)
    """``evaluate``'s CPU time in this process (SQLite's work included; not PostgreSQL's):
    what carries from a loaded machine to a quiet one better than its wall time."""
    judge_read: list[float] = field(default_factory=list)
    """Of the judgment, its reads and verdicts (``evaluation.judge_report``), outside any write
    transaction (a tree that judges in the store's transaction: none)."""
    judge_write_max: list[float] = field(default_factory=list)
    """Of the judgment, its longest write (``verdicts.verdicts_write`` of one part); in a tree
    that judges in the store's transaction, the whole judgment: SQLite's writer held."""
    store_write_max: list[float] = field(default_factory=list)
    """Of the store, its longest write transaction (``metric_parts.METRIC_PART`` metrics on
    SQLite; a tree that stores in one transaction: the whole store)."""
    judge_write_cpu_max: list[float] = field(default_factory=list)
    """The CPU time of the write of most CPU (SQLite's work included), which carries from a
    loaded machine to a quiet one better than wall time (a tree without parts: none)."""


_BOUNDARIES = (
    sa.select(
        metric.c.benchmark_id,
        metric.c.measure_id,
        boundary.c.baseline,
        boundary.c.lower_limit,
        boundary.c.upper_limit,
    )
    .join(boundary, boundary.c.metric_id == metric.c.id)
    .where(metric.c.report_id == sa.bindparam("report_id"))
)
_ALERTS = (
    sa.select(
        metric.c.benchmark_id,
        metric.c.measure_id,
        metric.c.report_id,
        alert.c.limit,
        alert.c.status,
        alert.c.change_before,
        alert.c.change_after,
        alert.c.change_pvalue,
        alert.c.change_from_report_id,
    )
    .join(boundary, boundary.c.metric_id == metric.c.id)
    .join(alert, alert.c.boundary_id == boundary.c.id)
    .where(alert.c.report_id == sa.bindparam("report_id"))
)


def verdicts(conn: Connection, report_id: int) -> str:
    """What judging the report decided, as a digest: the boundaries of its metrics and the
    alerts it raised (its own and the look-back's on earlier points), by benchmark and
    measure, with every figure to the last bit."""
    params = {"report_id": report_id}
    drawn = sorted(repr(tuple(row)) for row in conn.execute(_BOUNDARIES, params))
    raised = sorted(
        repr((*row[:2], "new" if row[2] == report_id else row[2], *row[3:]))
        for row in conn.execute(_ALERTS, params)
    )
    text = "\n".join([*drawn, "--", *raised])
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{len(drawn)} boundaries, {len(raised)} alerts, {digest}"


_JUDGE = getattr(evaluation_module, "judge_report", None)
_PLAN = getattr(look_back_module, "look_back_plan", None)
_WRITE = getattr(look_back_module, "look_back_write", None)
_WRITE_ROWS: int = getattr(look_back_module, "WRITE_ROWS", 0)


def _look_back_in_steps(
    conn: Connection,
    report_id: int,
    stored: list[reports.StoredMetric],
    judging: list[Any],
    reads: history.SeriesReads,
) -> tuple[int, float, float]:
    """The look-back as ``look_back_later`` runs it: its plan (reads and detector), then its
    writes ``WRITE_ROWS`` alerts at a time (here in the caller's transaction, each timed); the
    alerts written, the plan's time and the longest write's (ms)."""
    assert _PLAN is not None and _WRITE is not None
    started = time.perf_counter()
    planned = _PLAN(conn, report_id, stored, found=judging, reads=reads)
    read_ms = (time.perf_counter() - started) * 1000
    found, longest = 0, 0.0
    for start in range(0, len(planned), _WRITE_ROWS):
        with _writer_held(conn):
            began = time.perf_counter()
            found += _WRITE(conn, report_id, planned[start : start + _WRITE_ROWS], NOW)
            longest = max(longest, (time.perf_counter() - began) * 1000)
    return found, read_ms, longest


def _writer_held(conn: Connection) -> contextlib.AbstractContextManager[None]:
    """What a server runs a write holding SQLite's writer in, in a tree that has it
    (``engine.collections_deferred``): the timed writes here are that server's."""
    from benchrunner.server.store import engine as store_engine

    deferred = getattr(store_engine, "collections_deferred", None)
    if deferred is None or capabilities.of(conn).concurrent_writers:
        return contextlib.nullcontext()
    held: contextlib.AbstractContextManager[None] = deferred()
    return held


def _series_reads() -> history.SeriesReads:
    """The reads of a judgment as ``judgment.judge_later`` makes them: through the process's
    cache of the newest reports' rows in a tree that has one (the history read here is
    committed: only the judged report is not)."""
    try:
        from benchrunner.server.store import report_rows
    except ImportError:
        return history.SeriesReads()
    return history.SeriesReads(report_rows.SHARED)  # type: ignore[call-arg,unused-ignore]


def _judge_in_steps(
    conn: Connection, report_id: int, stored: list[reports.StoredMetric], judging: list[Any]
) -> tuple[int, float, float, float, history.SeriesReads]:
    """The judgment as ``judgment.judge_later`` runs it: its reads and verdicts, then its
    writes a part at a time (``verdicts.WRITE_ROWS`` rows on SQLite, one part on PostgreSQL;
    here in the caller's transaction, each timed, re-checks included); the alerts raised, the
    reads' time, the longest write's and the most CPU of one write (ms), and the histories
    read."""
    from benchrunner.server.processing.verdicts import WRITE_ROWS, verdicts_write

    assert _JUDGE is not None
    reads = _series_reads()
    started = time.perf_counter()
    verdicts = _JUDGE(conn, report_id, stored, found=judging, reads=reads)
    read_ms = (time.perf_counter() - started) * 1000
    whole = capabilities.of(conn).concurrent_writers
    parts = [verdicts.units] if whole else list(verdicts.parts(WRITE_ROWS))
    raised, longest, most_cpu = 0, 0.0, 0.0
    for part in parts:
        with _writer_held(conn):
            began, cpu = time.perf_counter(), time.thread_time()
            raised += len(verdicts_write(conn, verdicts, part, NOW).raised)
            longest = max(longest, (time.perf_counter() - began) * 1000)
            most_cpu = max(most_cpu, (time.thread_time() - cpu) * 1000)
    return raised, read_ms, longest, most_cpu, reads


def _store_in_steps(
    conn: Connection, report_id: int, project_id: int, values: list[reports.MetricValue]
) -> tuple[list[reports.StoredMetric], float]:
    """The store as processing runs it: ``metric_parts.METRIC_PART`` metrics a write on
    SQLite (``reports.metrics_add_missing``), all at once on PostgreSQL or in a tree without
    parts; here in the caller's transaction, each part timed. The metrics stored and the
    longest part's time (ms)."""
    add = getattr(reports, "metrics_add_missing", None)
    if add is None:
        started = time.perf_counter()
        stored = reports.metrics_add(conn, report_id, project_id, values, NOW)
        return stored, (time.perf_counter() - started) * 1000
    from benchrunner.server.processing.metric_parts import METRIC_PART

    size = len(values) if capabilities.of(conn).concurrent_writers else METRIC_PART
    stored, longest = [], 0.0
    for start in range(0, len(values), size):
        with _writer_held(conn):
            began = time.perf_counter()
            stored += add(conn, report_id, project_id, values[start : start + size], NOW)
            longest = max(longest, (time.perf_counter() - began) * 1000)
    return stored, longest


def time_processing(
    engine: Engine, project: Project, repeats: int, log: StatementLog
) -> ProcessTimes:
    """Store and judge one new report, ``repeats`` times (after one warm-up), rolled back."""
    times = ProcessTimes([], [], [], [], [], 0)
    rng = random.Random(1)
    with engine.connect() as conn:
        for k in range(repeats + 1):
            values = _new_values(project, rng)
            transaction = conn.begin()
            params = reports.NewReport(
                project.id, None, project.branch_id, project.testbed_id,
                "json", None, None, None, NOW, NOW, NOW,
            )  # fmt: skip
            report_id, _ = reports.report_create(conn, params)
            started = time.perf_counter()
            stored, store_max_ms = _store_in_steps(conn, report_id, project.id, values)
            finish = reports.finish_params(report_id, start_time=NOW, end_time=NOW, error=None)
            reports.FINISH_AFTER_MOVE.alone.first(conn, finish)
            stored_at = time.perf_counter()
            cpu_at = time.thread_time()
            log.on, log.statements = k == repeats, []
            judging = series_thresholds_to_judge(
                conn, project.branch_id, project.testbed_id, stored
            )
            if _JUDGE is None:  # a tree that judges in the store's transaction
                reads = history.SeriesReads()
                raised = evaluate_report(conn, report_id, stored, NOW, found=judging, reads=reads)
                judge_read_ms, judge_write_ms = math.nan, (time.perf_counter() - stored_at) * 1000
                judge_write_cpu_ms = math.nan
            else:
                raised, judge_read_ms, judge_write_ms, judge_write_cpu_ms, reads = _judge_in_steps(
                    conn, report_id, stored, judging
                )
            log.on = False
            done = time.perf_counter()
            cpu_ms = (time.thread_time() - cpu_at) * 1000
            if _PLAN is None:  # a tree whose look-back is one transaction
                whole = look_back_module.look_back_report  # type: ignore[attr-defined]
                found = whole(conn, report_id, stored, NOW, found=judging, reads=reads)
                read_ms, write_max_ms = math.nan, (time.perf_counter() - done) * 1000
            else:
                found, read_ms, write_max_ms = _look_back_in_steps(
                    conn, report_id, stored, judging, reads
                )
            looked_back = time.perf_counter()
            judged = verdicts(conn, report_id)
            transaction.rollback()
            assert len(stored) == len(values)
            if k == 0:
                continue  # the first run warms caches and prepared statements
            times.store.append((stored_at - started) * 1000)
            times.store_write_max.append(store_max_ms)
            times.evaluate.append((done - stored_at) * 1000)
            times.evaluate_cpu.append(cpu_ms)
            times.judge_read.append(judge_read_ms)
            times.judge_write_max.append(judge_write_ms)
            times.judge_write_cpu_max.append(judge_write_cpu_ms)
            times.look_back.append((looked_back - done) * 1000)
            times.alerts.append(raised)
            times.looked_back.append(found)
            times.look_back_read.append(read_ms)
            times.look_back_write_max.append(write_max_ms)
            times.verdicts.append(judged)
        times.statements = len(log.statements)
    return times


def _perf_query(project: Project, measures: int) -> PerfQuery:
    return PerfQuery(
        [project.branch_id],
        [project.testbed_id],
        [project.benchmark_ids[len(project.benchmark_ids) // 2]],
        project.measure_ids[:measures],
        NOW - YEAR,
        NOW,
    )


def time_perf(
    engine: Engine, project: Project, measures: int, repeats: int
) -> tuple[list[float], int]:
    query = _perf_query(project, measures)
    timings: list[float] = []
    found = 0
    with engine.connect() as conn:
        for k in range(repeats + 1):
            started = time.perf_counter()
            found = len(perf_points(conn, query))
            elapsed = time.perf_counter() - started
            conn.rollback()
            if k:
                timings.append(elapsed * 1000)
    return timings, found


def time_perf_route(
    url: str, data_dir: Path, project: Project, measures: int, repeats: int
) -> tuple[list[float], int]:
    params = {
        "branches": "main",
        "testbeds": "box",
        "benchmarks": f"bench_{len(project.benchmark_ids) // 2:04d}",
        "measures": ",".join(MEASURES[:measures]),
        "start_time": str(int((NOW - YEAR).timestamp() * 1000)),
        "end_time": str(int(NOW.timestamp() * 1000)),
    }
    settings = ServerSettings(db=url, data_dir=data_dir)
    timings: list[float] = []
    points = 0
    with TestClient(create_app(settings)) as client:
        for k in range(repeats + 1):
            started = time.perf_counter()
            response = client.get(f"/v0/projects/{project.slug}/perf", params=params)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            points = sum(len(r["metrics"]) for r in response.json()["results"])
            if k:
                timings.append(elapsed * 1000)
    return timings, points


def _spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):8.1f} ms (min {min(values):.1f}, max {max(values):.1f})"
    )


def measure_all(
    engine: Engine, url: str, data_dir: Path, project: Project, repeats: int, label: str
) -> StatementLog:
    print(f"\n== {label}", flush=True)
    as_a_servers_heap()
    with StatementLog(engine) as log:
        times = time_processing(engine, project, repeats, log)
    n = len(project.benchmark_ids) * len(project.measure_ids)
    print(f"  process one report of {n:,} metrics ({repeats} runs, rolled back):")
    print(f"    store metrics (metrics_add + finish): {_spread(times.store)}")
    print(f"    - its longest write transaction:             {_spread(times.store_write_max)}")
    print(f"    evaluate_report (the judgment):              {_spread(times.evaluate)}")
    print(f"    - its CPU in this process:                   {_spread(times.evaluate_cpu)}")
    if not math.isnan(times.judge_read[0]):
        print(f"    - its reads and verdicts (no write):         {_spread(times.judge_read)}")
    print(f"    - its longest write transaction:             {_spread(times.judge_write_max)}")
    if not math.isnan(times.judge_write_cpu_max[0]):
        print(
            f"    - the most CPU of one write:                 {_spread(times.judge_write_cpu_max)}"
        )
    totals = [s + e for s, e in zip(times.store, times.evaluate, strict=True)]
    print(f"    total:                                       {_spread(totals)}")
    print(f"    look_back_report (after the ack):            {_spread(times.look_back)}")
    if not math.isnan(times.look_back_read[0]):
        print(f"    - its reads and detector (no write):         {_spread(times.look_back_read)}")
    print(f"    - its longest write transaction:             {_spread(times.look_back_write_max)}")
    print(f"    alerts raised per run: {times.alerts}; evaluation statements: {times.statements}")
    print(f"    alerts the look-back raised or re-opened per run: {times.looked_back}")
    print(f"    verdicts per run: {times.verdicts}")
    for measures in (1, len(project.measure_ids)):
        timings, points = time_perf(engine, project, measures, repeats * 3)
        print(f"  perf store query, 1 benchmark x {measures} measure(s), {points:,} points: "
              f"{_spread(timings)}")  # fmt: skip
    for measures in (1, len(project.measure_ids)):
        timings, points = time_perf_route(url, data_dir, project, measures, repeats * 3)
        print(f"  perf HTTP route, 1 benchmark x {measures} measure(s), {points:,} points:  "
              f"{_spread(timings)}")  # fmt: skip
    return log


def explain(engine: Engine, statement: str, params: Any) -> str:
    if engine.dialect.name == "sqlite":
        prefix = "EXPLAIN QUERY PLAN "
    else:
        prefix = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(prefix + statement, params).all()
        conn.rollback()
    return "\n".join("    " + str(row[-1]) for row in rows)


def print_plans(engine: Engine, project: Project, log: StatementLog) -> None:
    newest = [s for s in log.statements if s[0].startswith("SELECT report.id") and "LIMIT" in s[0]]
    if newest:
        print("\n  plan of the history's newest reports (one of the evaluation's, as it ran):")
        print(explain(engine, *newest[0]))
    history = [s for s in log.statements if "row_number()" in s[0].lower()]
    if history:
        print("\n  plan of the history query (one of the evaluation's, as it ran):")
        print(explain(engine, *history[0]))
    with StatementLog(engine) as perf_log, engine.connect() as conn:
        perf_log.on = True
        perf_points(conn, _perf_query(project, len(project.measure_ids)))
        perf_log.on = False
    points = [s for s in perf_log.statements if "FROM metric" in s[0]]
    print("\n  plan of the perf query (1 benchmark x all measures, a year):")
    print(explain(engine, *points[0]))


@contextlib.contextmanager
def database(engine_name: str, directory: Path) -> Iterator[tuple[Engine, str]]:
    with fresh_database(engine_name, directory) as url:
        engine = make_engine(url, writer=True)
        upgrade(engine)
        try:
            yield engine, url
        finally:
            engine.dispose()


def _timed(what: str, work: Callable[[], Project]) -> Project:
    started = time.perf_counter()
    project = work()
    print(f"built {what}: {project.rows:,} metric rows in {time.perf_counter() - started:.0f} s")
    return project


ROOT = Path(__file__).resolve().parents[1]


def _child_run(url: str, project: Project, repeats: int, src: str) -> dict[str, Any]:
    """``time_processing`` in a process of its own whose ``benchrunner`` is ``src``'s."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(ROOT)])}
    command = [sys.executable, "-m", "benchmarks.reports_scale", "--child", url]
    command = [*command, "--project", json.dumps(asdict(project)), "--repeats", str(repeats)]
    done = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def compare(url: str, project: Project, repeats: int, rounds: int, before: str) -> None:
    """The tree at ``before`` (its ``src``) and this one, alternately (each first in every
    other round), ``rounds`` times each, on the same database; their times side by side, and
    whether they judged alike."""
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    trees = [("before", before), ("after", str(ROOT / "src"))]
    for round_number in range(rounds):
        # which goes first alternates: the second of a pair measured slower by itself (the
        # same tree against itself, 2026-11-30: 1.14x)
        for label, src in trees if round_number % 2 == 0 else trees[::-1]:
            runs[label].append(_child_run(url, project, repeats, src))
            print(f"  {label}: {runs[label][-1]['evaluate']}", flush=True)
    n = len(project.benchmark_ids) * len(project.measure_ids)
    print(f"\n== before ({before}) and after, alternately: {rounds} rounds of {repeats} runs")
    print(f"  process one report of {n:,} metrics (rolled back):")
    for key, what in (
        ("store", "store"),
        ("store_write_max", "- longest write"),
        ("evaluate", "evaluate_report"),
        ("evaluate_cpu", "- its CPU here"),
        ("judge_read", "- reads, verdicts"),
        ("judge_write_max", "- longest write"),
        ("judge_write_cpu_max", "- most CPU, write"),
        ("look_back", "look_back_report"),
        ("look_back_read", "- reads, detector"),
        ("look_back_write_max", "- longest write"),
    ):
        for label in ("before", "after"):
            values = [v for run in runs[label] for v in run.get(key, []) if not math.isnan(v)]
            if values:
                print(f"    {what:<18} {label:<6}: {_spread(values)}")
    mismatches = 0
    for old, new in zip(runs["before"], runs["after"], strict=True):
        mismatches += sum(a != b for a, b in zip(old["verdicts"], new["verdicts"], strict=True))
    print(f"  verdicts of each run (before): {runs['before'][0]['verdicts']}")
    print(f"  runs whose verdicts differ between before and after: {mismatches}")


BEFORE_FREEZE_IMPORTS = ("benchrunner.detection.samples", "benchrunner.detection.boundary")
"""What a server imports before it freezes its start-up heap, for a tree from before
``freeze_startup_heap``: its judgment's statistics."""


def as_a_servers_heap() -> None:
    """As a server has it once it judged a report, whichever tree this is (its own
    ``app.factory.freeze_startup_heap`` and ``processing.statistics_heap`` where it has them):
    what exists now (modules, SciPy's statistics) out of the collector's sight, so that the
    full collections a report meets walk what its processing allocates, as they do in a
    server."""
    from benchrunner.server.app import factory

    freeze = getattr(factory, "freeze_startup_heap", None)
    if freeze is None:
        for module in BEFORE_FREEZE_IMPORTS:
            importlib.import_module(module)
        gc.collect()
        gc.freeze()
        return
    freeze()
    try:
        heap = importlib.import_module("benchrunner.server.processing.statistics_heap")
    except ImportError:  # a tree whose start-up heap held the statistics already
        return
    heap.statistics_loaded()


def child(url: str, project: Project, repeats: int) -> None:
    as_a_servers_heap()
    engine = make_engine(url, writer=True)
    try:
        with StatementLog(engine) as log:
            times = time_processing(engine, project, repeats, log)
    finally:
        engine.dispose()
    print(json.dumps(asdict(times)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--benchmarks", type=int, default=1000)
    parser.add_argument("--measures", type=int, choices=(1, 2, 3), default=3)
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--other-factor", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--test",
        choices=[kind.value for kind in MODELS],
        default=TestKind.T_TEST.value,
        help="the test of the thresholds on every measure",
    )
    parser.add_argument(
        "--before",
        metavar="OLD_SRC",
        help="also run the tree whose src is OLD_SRC, alternately with this one, and compare",
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --before: runs of each")
    parser.add_argument(
        "--direct", action="store_true", help="measure direct runs (POST /v0/run) instead"
    )
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--direct-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, Project(**json.loads(options.project)), options.repeats)
        return
    if options.direct_child:
        direct_child(
            options.engine, options.benchmarks, options.measures, options.reports, options.repeats
        )
        return
    if options.direct and options.before:
        compare_direct(options)
        return
    with tempfile.TemporaryDirectory() as tmp, database(options.engine, Path(tmp)) as (engine, url):
        with engine.begin() as conn:
            leader = accounts.user_get_or_create(conn, "b@x", "b", admin=False, now=NOW).id
            org = accounts.organization_create(conn, "org", Plan.TEAM, NOW, leader_id=leader)

        def build(slug: str, n_reports: int) -> Project:
            return build_project(
                engine, org.id, slug, options.benchmarks, options.measures, n_reports
            )

        a = _timed("project A", lambda: build("scale-a", options.reports))
        add_thresholds(engine, a, TestKind(options.test))
        if options.direct:
            found = time_direct(url, Path(tmp) / "data", a, options.repeats)
            n = len(a.benchmark_ids) * len(a.measure_ids)
            print(f"\n== direct runs of {n:,} metrics ({options.repeats} runs)")
            print(f"    longest write transaction: {_spread(found['write_max'])}")
            print(f"    - the most CPU of one:     {_spread(found['write_cpu_max'])}")
            print(f"    request:                   {_spread(found['request'])}")
            print(f"    alerts per run: {found['alerts']}")
            return
        if options.before:
            compare(url, a, options.repeats, options.rounds, options.before)
            return
        data_dir = Path(tmp) / "data"
        measure_all(engine, url, data_dir, a, options.repeats, "project A alone")
        if options.other_factor == 0:
            return
        b = _timed("project B", lambda: build("scale-b", options.reports * options.other_factor))
        log = measure_all(
            engine, url, data_dir, a, options.repeats,
            f"project A with project B in the database ({b.rows:,} more metric rows)",
        )  # fmt: skip
        print_plans(engine, a, log)


if __name__ == "__main__":
    main()
